//! DuckDB's keyed recursive CTEs, `name(c1, c2) USING KEY (c1) AS (...)`, which sqlparser
//! does not read (ADR 0071): the clause is taken out and each key column of the column list
//! is marked with the type name [`USING_KEY`], `name(c1 pondra_using_key, c2) AS (...)`. The
//! binder reads the marks back.

use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

use crate::ParseError;

/// The type name that marks a key column of a CTE's column list.
pub const USING_KEY: &str = "pondra_using_key";

fn is_word(token: &TokenWithSpan, word: &str) -> bool {
    matches!(&token.token, Token::Word(w) if w.quote_style.is_none()
        && w.value.eq_ignore_ascii_case(word))
}

fn next_solid(tokens: &[TokenWithSpan], from: usize) -> Option<usize> {
    (from..tokens.len()).find(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
}

fn previous_solid(tokens: &[TokenWithSpan], before: usize) -> Option<usize> {
    (0..before)
        .rev()
        .find(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
}

/// The index of the `(` opening the `)` at `close`.
fn opening(tokens: &[TokenWithSpan], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for i in (0..=close).rev() {
        match tokens[i].token {
            Token::RParen => depth += 1,
            Token::LParen if depth == 1 => return Some(i),
            Token::LParen => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The index of the `)` closing the `(` at `open`.
fn closing(tokens: &[TokenWithSpan], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        match token.token {
            Token::LParen => depth += 1,
            Token::RParen if depth == 1 => return Some(i),
            Token::RParen => depth -= 1,
            _ => {}
        }
    }
    None
}

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
        let names = key_names(&tokens[key_open + 1..key_close])?;
        let mut marked = Vec::new();
        for name in names {
            let column = (columns_open + 1..columns_close)
                .find(|&c| same_name(&tokens[c].token, &name))
                .ok_or_else(|| {
                    refused(format!(
                        "the key column {name} is not in the CTE's column list"
                    ))
                })?;
            marked.push(column);
        }
        tokens.drain(i..=key_close);
        marked.sort_unstable();
        marked.dedup();
        for column in marked.into_iter().rev() {
            let mark = [
                TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space)),
                TokenWithSpan::wrap(Token::make_word(USING_KEY, None)),
            ];
            tokens.splice(column + 1..column + 1, mark);
        }
        i = columns_close;
    }
    Ok(tokens)
}

/// The column names of a key's parentheses, refusing anything else (an aggregate).
fn key_names(inside: &[TokenWithSpan]) -> Result<Vec<Token>, ParseError> {
    let solid: Vec<&Token> = inside
        .iter()
        .map(|t| &t.token)
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let mut names = Vec::new();
    for item in solid.split(|t| **t == Token::Comma) {
        match item {
            [name @ Token::Word(_)] => names.push((*name).clone()),
            _ => {
                let text: String = inside.iter().map(|t| t.token.to_string()).collect();
                return Err(ParseError::Syntax(format!(
                    "not supported yet: USING KEY ({}): a key lists columns; payload \
                     aggregates in the key are not built",
                    text.trim()
                )));
            }
        }
    }
    Ok(names)
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
    }

    #[test]
    fn keys_outside_the_column_list_are_refused() {
        let err = parse_sql("WITH RECURSIVE t(a) USING KEY (b) AS (SELECT 1) TABLE t").unwrap_err();
        assert!(err.to_string().contains("key column b"), "{err}");
        let err = parse_sql("WITH RECURSIVE t USING KEY (b) AS (SELECT 1) TABLE t").unwrap_err();
        assert!(err.to_string().contains("column list"), "{err}");
        let err =
            parse_sql("WITH RECURSIVE t(k, v) USING KEY (k, min(v)) AS (SELECT 1, 2) TABLE t")
                .unwrap_err();
        assert!(err.to_string().contains("min(v)"), "{err}");
    }
}
