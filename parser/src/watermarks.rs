//! The streaming clauses of Flink and RisingWave, read as table and view options, which
//! sqlparser parses (ADR 0055):
//! - `CREATE TABLE t (..., WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)` becomes
//!   `CREATE TABLE t (...) WITH (watermark_column = ts, watermark = (ts - INTERVAL '5' SECOND))`,
//!   merged into the table's own `WITH (...)` when it has one;
//! - `CREATE MATERIALIZED VIEW v AS SELECT ... EMIT ON WINDOW CLOSE` becomes
//!   `CREATE MATERIALIZED VIEW v WITH (emit = 'on_window_close') AS SELECT ...`.
//!
//! The binder checks what the options say; this only moves tokens.

use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

fn is_word(token: Option<&TokenWithSpan>, word: &str) -> bool {
    matches!(token.map(|t| &t.token), Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// The indexes of the tokens that are not whitespace.
fn solid(tokens: &[TokenWithSpan]) -> Vec<usize> {
    (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect()
}

fn token(token: Token) -> TokenWithSpan {
    TokenWithSpan::wrap(token)
}

fn word(text: &str) -> TokenWithSpan {
    token(Token::make_word(text, None))
}

fn space() -> TokenWithSpan {
    token(Token::Whitespace(Whitespace::Space))
}

/// `tokens` with the clauses of the module's comment rewritten.
pub(crate) fn streaming_clauses(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let at = solid(&tokens);
    let nth = |n: usize| at.get(n).map(|&i| &tokens[i]);
    if !is_word(nth(0), "CREATE") {
        return tokens;
    }
    if is_word(nth(1), "MATERIALIZED") && is_word(nth(2), "VIEW") {
        return emit_on_window_close(tokens);
    }
    let table = (1..4).find(|&n| is_word(nth(n), "TABLE"));
    match table {
        Some(_) if tokens.iter().any(|t| is_word(Some(t), "WATERMARK")) => watermark(tokens),
        _ => tokens,
    }
}

/// `CREATE MATERIALIZED VIEW v [WITH (...)] AS ... EMIT ON WINDOW CLOSE`, with the clause as
/// the option `emit = 'on_window_close'`.
fn emit_on_window_close(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let at = solid(&tokens);
    let mut end = at.len();
    if end > 0 && tokens[at[end - 1]].token == Token::SemiColon {
        end -= 1;
    }
    let clause = ["EMIT", "ON", "WINDOW", "CLOSE"];
    if end < clause.len()
        || !clause
            .iter()
            .enumerate()
            .all(|(k, w)| is_word(Some(&tokens[at[end - clause.len() + k]]), w))
    {
        return tokens;
    }
    let first = at[end - clause.len()];
    let last = at[end - 1];
    tokens.drain(first..=last);
    // The option goes after the view's name (and its column list), before AS.
    let at = solid(&tokens);
    let Some(as_index) = at.iter().position(|&i| is_word(Some(&tokens[i]), "AS")) else {
        return tokens;
    };
    let option = [
        word("emit"),
        token(Token::Eq),
        token(Token::SingleQuotedString("on_window_close".into())),
    ];
    let before_as = at[as_index];
    let has_with = as_index > 0 && tokens[at[as_index - 1]].token == Token::RParen && {
        // `WITH ( ... )` just before AS: find its opening parenthesis.
        let open = open_of(&tokens, at[as_index - 1]);
        open.is_some_and(|o| {
            at.iter()
                .rposition(|&i| i < o)
                .is_some_and(|p| is_word(Some(&tokens[at[p]]), "WITH"))
        })
    };
    if has_with {
        let close = at[as_index - 1];
        let mut inserted = vec![token(Token::Comma), space()];
        inserted.extend(option);
        tokens.splice(close..close, inserted);
    } else {
        let mut inserted = vec![word("WITH"), space(), token(Token::LParen)];
        inserted.extend(option);
        inserted.extend([token(Token::RParen), space()]);
        tokens.splice(before_as..before_as, inserted);
    }
    tokens
}

/// The index of the `(` that the `)` at `close` closes.
fn open_of(tokens: &[TokenWithSpan], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for i in (0..=close).rev() {
        match tokens[i].token {
            Token::RParen => depth += 1,
            Token::LParen => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `CREATE TABLE t (..., WATERMARK FOR c AS expr) [WITH (...)]`, with the watermark as the
/// options `watermark_column = c, watermark = (expr)`.
fn watermark(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let Some(open) = tokens.iter().position(|t| t.token == Token::LParen) else {
        return tokens;
    };
    // The elements of the column list, at depth 1: find `WATERMARK FOR c AS ...`.
    let mut depth = 0usize;
    let mut element_start = open + 1;
    let mut found = None;
    let mut close = None;
    for i in open..tokens.len() {
        match tokens[i].token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    if found.is_none() {
                        found = watermark_element(&tokens, element_start, i);
                    }
                    close = Some(i);
                    break;
                }
            }
            Token::Comma if depth == 1 => {
                if found.is_none() {
                    found = watermark_element(&tokens, element_start, i);
                }
                element_start = i + 1;
            }
            _ => {}
        }
    }
    let (Some((start, end, column, expression)), Some(close)) = (found, close) else {
        return tokens;
    };
    // The options, after the column list's `)`: in its WITH (...) when it has one.
    let mut option = vec![
        word("watermark_column"),
        token(Token::Eq),
        column,
        token(Token::Comma),
        space(),
        word("watermark"),
        token(Token::Eq),
        token(Token::LParen),
    ];
    option.extend(expression);
    option.push(token(Token::RParen));
    let at = solid(&tokens);
    let after_close = at.iter().position(|&i| i == close).map(|p| p + 1);
    let with_open = after_close
        .filter(|&p| is_word(at.get(p).map(|&i| &tokens[i]), "WITH"))
        .and_then(|p| at.get(p + 1).copied())
        .filter(|&i| tokens[i].token == Token::LParen);
    match with_open {
        Some(with_open) => {
            option.extend([token(Token::Comma), space()]);
            tokens.splice(with_open + 1..with_open + 1, option);
        }
        None => {
            let mut inserted = vec![space(), word("WITH"), space(), token(Token::LParen)];
            inserted.extend(option);
            inserted.push(token(Token::RParen));
            tokens.splice(close + 1..close + 1, inserted);
        }
    }
    // The element goes, with the comma before it (a watermark is never the only element).
    let comma_before = (open + 1..start)
        .rev()
        .find(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .filter(|&i| tokens[i].token == Token::Comma);
    let (from, to) = match comma_before {
        Some(comma) => (comma, end),
        None => (start, end + usize::from(tokens[end].token == Token::Comma)),
    };
    tokens.drain(from..to);
    tokens
}

/// For the element of `tokens[start..end]` when it is `WATERMARK FOR c AS expr`: its first
/// token, its end, the column and the expression's tokens.
fn watermark_element(
    tokens: &[TokenWithSpan],
    start: usize,
    end: usize,
) -> Option<(usize, usize, TokenWithSpan, Vec<TokenWithSpan>)> {
    let at: Vec<usize> = solid(&tokens[start..end])
        .into_iter()
        .map(|i| i + start)
        .collect();
    let nth = |n: usize| at.get(n).map(|&i| &tokens[i]);
    if !(is_word(nth(0), "WATERMARK") && is_word(nth(1), "FOR") && is_word(nth(3), "AS")) {
        return None;
    }
    let column = nth(2)?.clone();
    let expression = tokens[at.get(4).copied()?..end].to_vec();
    Some((at[0], end, column, expression))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::rewritten_by(streaming_clauses, sql)
    }

    #[test]
    fn watermarks_become_table_options() {
        assert_eq!(
            rewritten(
                "CREATE TABLE e (k INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)"
            ),
            "CREATE TABLE e (k INT, ts TIMESTAMP) WITH (watermark_column=ts, watermark=(ts - INTERVAL '5' SECOND))"
        );
        assert_eq!(
            rewritten(
                "create table e (watermark for ts as ts, ts timestamp) with (ttl = '1 day');"
            ),
            "create table e ( ts timestamp) with (watermark_column=ts, watermark=(ts), ttl = '1 day');"
        );
        let plain = "CREATE TABLE watermark (watermark INT)";
        assert_eq!(rewritten(plain), plain);
    }

    #[test]
    fn emit_on_window_close_becomes_a_view_option() {
        assert_eq!(
            rewritten("CREATE MATERIALIZED VIEW v AS SELECT 1 EMIT ON WINDOW CLOSE;"),
            "CREATE MATERIALIZED VIEW v WITH (emit='on_window_close') AS SELECT 1 ;"
        );
        assert_eq!(
            rewritten("CREATE MATERIALIZED VIEW v WITH (a = 1) AS SELECT 1 emit on window close"),
            "CREATE MATERIALIZED VIEW v WITH (a = 1, emit='on_window_close') AS SELECT 1 "
        );
    }
}
