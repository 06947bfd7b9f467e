//! DuckDB's keyed recursive CTEs, `name(c1, c2) USING KEY (c1) AS (...)`, which sqlparser
//! does not read (ADR 0071): the clause is taken out and each key column of the column list
//! is marked with the type name [`USING_KEY`], `name(c1 pondra_using_key, c2) AS (...)`. The
//! binder reads the marks back.

use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

use crate::ParseError;
use crate::tokens::{closing, is_word, next_solid, opening, previous_solid};

/// The type name that marks a key column of a CTE's column list.
pub const USING_KEY: &str = "pondra_using_key";
/// The type name that marks a column a payload aggregate of the key fills; its one modifier is
/// the aggregate's text (`pondra_key_aggregate('min(v)')`).
pub const KEY_AGGREGATE: &str = "pondra_key_aggregate";

/// Whether two column names are the same: unquoted names match in any case.
fn same_name(a: &Token, b: &Token) -> bool {
    match (a, b) {
        (Token::Word(a), Token::Word(b)) => match (a.quote_style, b.quote_style) {
            (None, None) => a.value.eq_ignore_ascii_case(&b.value),
            (None, Some(_)) => a.value.to_lowercase() == b.value,
            (Some(_), None) => a.value == b.value.to_lowercase(),
            (Some(_), Some(_)) => a.value == b.value,
        },
        _ => false,
    }
}

/// `tokens` with each `USING KEY (...)` of a CTE rewritten (see the module's comment).
pub(crate) fn using_keys(mut tokens: Vec<TokenWithSpan>) -> Result<Vec<TokenWithSpan>, ParseError> {
    let mut i = 0;
    while i < tokens.len() {
        let key = next_solid(&tokens, i + 1).filter(|&k| is_word(&tokens[k], "KEY"));
        let (true, Some(key)) = (is_word(&tokens[i], "USING"), key) else {
            i += 1;
            continue;
        };
        let refused = |why: String| ParseError::Syntax(format!("USING KEY: {why}"));
        let columns_close = previous_solid(&tokens, i)
            .filter(|&c| tokens[c].token == Token::RParen)
            .ok_or_else(|| {
                refused("a keyed CTE needs its column list, as in t(k, v) USING KEY (k)".into())
            })?;
        let columns_open = opening(&tokens, columns_close)
            .ok_or_else(|| refused("unbalanced parentheses".into()))?;
        let key_open = next_solid(&tokens, key + 1)
            .filter(|&o| tokens[o].token == Token::LParen)
            .ok_or_else(|| refused("expected ( after USING KEY".into()))?;
        let key_close =
            closing(&tokens, key_open).ok_or_else(|| refused("unbalanced parentheses".into()))?;
        let items = key_items(&tokens[key_open + 1..key_close])?;
        let column_of = |name: &Token| {
            (columns_open + 1..columns_close).find(|&c| same_name(&tokens[c].token, name))
        };
        let mut marks: Vec<(usize, Vec<TokenWithSpan>)> = Vec::new();
        for item in items {
            let (column, mark) = match item {
                KeyItem::Column(name) => {
                    let column = column_of(&name).ok_or_else(|| {
                        refused(format!(
                            "the key column {name} is not in the CTE's column list"
                        ))
                    })?;
                    (column, Token::make_word(USING_KEY, None))
                }
                KeyItem::Aggregate { text, target } => {
                    let named: Vec<usize> = match &target {
                        Some(name) => column_of(name).into_iter().collect(),
                        None => {
                            let mut read: Vec<usize> =
                                text.1.iter().filter_map(&column_of).collect();
                            read.sort_unstable();
                            read.dedup();
                            read
                        }
                    };
                    let [column] = named[..] else {
                        return Err(refused(format!(
                            "say which column {} fills, as in {} AS v",
                            text.0, text.0
                        )));
                    };
                    let mark = Token::make_word(KEY_AGGREGATE, None);
                    marks.push((
                        column,
                        vec![
                            TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space)),
                            TokenWithSpan::wrap(mark),
                            TokenWithSpan::wrap(Token::LParen),
                            TokenWithSpan::wrap(Token::SingleQuotedString(text.0)),
                            TokenWithSpan::wrap(Token::RParen),
                        ],
                    ));
                    continue;
                }
            };
            marks.push((
                column,
                vec![
                    TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space)),
                    TokenWithSpan::wrap(mark),
                ],
            ));
        }
        marks.sort_by_key(|(column, _)| *column);
        if marks.windows(2).any(|pair| pair[0].0 == pair[1].0) {
            return Err(refused("a column is named twice in the key".into()));
        }
        tokens.drain(i..=key_close);
        for (column, mark) in marks.into_iter().rev() {
            tokens.splice(column + 1..column + 1, mark);
        }
        i = columns_close;
    }
    Ok(tokens)
}

/// One item of a key's parentheses.
enum KeyItem {
    /// A key column.
    Column(Token),
    /// A payload aggregate (`min(v)`, `sum(x) AS total`): its text with the words it reads,
    /// and the column its `AS` names.
    Aggregate {
        text: (String, Vec<Token>),
        target: Option<Token>,
    },
}

/// A token as SQL text; a string's quotes doubled inside it, which its display does not.
fn sql_text(token: &Token) -> String {
    match token {
        Token::SingleQuotedString(s) => format!("'{}'", s.replace('\'', "''")),
        other => other.to_string(),
    }
}

fn is_as(token: &Token) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("AS"))
}

/// The items of a key's parentheses, split at their top-level commas.
fn key_items(inside: &[TokenWithSpan]) -> Result<Vec<KeyItem>, ParseError> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut current: Vec<&Token> = Vec::new();
    let mut flush = |current: &mut Vec<&Token>| -> Result<(), ParseError> {
        let solid: Vec<&Token> = current
            .iter()
            .copied()
            .filter(|t| !matches!(t, Token::Whitespace(_)))
            .collect();
        let item = match solid.as_slice() {
            [] => return Err(ParseError::Syntax("USING KEY: an empty key item".into())),
            [name @ Token::Word(_)] => KeyItem::Column((*name).clone()),
            [_, .., as_word, name @ Token::Word(_)] if is_as(as_word) => {
                // The tokens before the last `AS`, spaces as written.
                let before_as = current.iter().rposition(|t| is_as(t)).unwrap_or(0);
                let text: String = current[..before_as].iter().map(|t| sql_text(t)).collect();
                let text = text.trim().to_string();
                KeyItem::Aggregate {
                    text: (text, Vec::new()),
                    target: Some((*name).clone()),
                }
            }
            expr => {
                let text: String = current.iter().map(|t| sql_text(t)).collect();
                let words = expr
                    .iter()
                    .skip(1)
                    .filter(|t| matches!(t, Token::Word(_)))
                    .map(|t| (*t).clone())
                    .collect();
                KeyItem::Aggregate {
                    text: (text.trim().to_string(), words),
                    target: None,
                }
            }
        };
        items.push(item);
        current.clear();
        Ok(())
    };
    for token in inside.iter().map(|t| &t.token) {
        match token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            Token::Comma if depth == 0 => {
                flush(&mut current)?;
                continue;
            }
            _ => {}
        }
        current.push(token);
    }
    flush(&mut current)?;
    Ok(items)
}

#[cfg(test)]
mod tests {
    use crate::{ParsedStatement, parse_sql};

    fn text(sql: &str) -> String {
        let statements: Vec<ParsedStatement> = parse_sql(sql).unwrap();
        match &statements[0].statement {
            crate::Statement::Sql(statement) => statement.to_string(),
            other => panic!("not a query: {other:?}"),
        }
    }

    #[test]
    fn key_columns_are_marked() {
        let sql = "WITH RECURSIVE t(k, v) USING KEY (k) AS (SELECT 1, 2 UNION ALL SELECT k, v FROM t) TABLE t";
        assert!(
            text(sql).contains("t (k pondra_using_key, v) AS"),
            "{}",
            text(sql)
        );
        let sql = "WITH RECURSIVE t(a, \"B\") USING KEY (\"B\", A) AS (SELECT 1, 2) TABLE t";
        assert!(text(sql).contains("(a pondra_using_key, \"B\" pondra_using_key)"));
        let sql = "WITH RECURSIVE t(k, v, n) USING KEY (k, min(v), count(*) AS n) AS (SELECT 1, 2, 3) TABLE t";
        assert!(
            text(sql).contains("(k pondra_using_key, v pondra_key_aggregate('min(v)'), n pondra_key_aggregate('count(*)'))"),
            "{}",
            text(sql)
        );
    }

    #[test]
    fn keys_outside_the_column_list_are_refused() {
        let err = parse_sql("WITH RECURSIVE t(a) USING KEY (b) AS (SELECT 1) TABLE t").unwrap_err();
        assert!(err.to_string().contains("key column b"), "{err}");
        let err = parse_sql("WITH RECURSIVE t USING KEY (b) AS (SELECT 1) TABLE t").unwrap_err();
        assert!(err.to_string().contains("column list"), "{err}");
        let err = parse_sql(
            "WITH RECURSIVE t(k, v, w) USING KEY (k, min(v + w)) AS (SELECT 1, 2, 3) TABLE t",
        )
        .unwrap_err();
        assert!(err.to_string().contains("say which column min"), "{err}");
    }
}
