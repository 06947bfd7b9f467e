//! DuckDB's `FROM (DESCRIBE q)`: a DESCRIBE read as a table, which sqlparser cannot read
//! inside parentheses. It is rewritten to the table function `describe_query('q')`, whose
//! rows are those `DESCRIBE q` gives.

use crate::tokens::{closing, is_word, next_solid};
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// The table function a parenthesized DESCRIBE becomes.
pub const DESCRIBE_QUERY: &str = "describe_query";

/// A token as SQL text; a string's quotes doubled inside it, which its display does not.
fn sql_text(token: &TokenWithSpan) -> String {
    match &token.token {
        Token::SingleQuotedString(s) => format!("'{}'", s.replace('\'', "''")),
        other => other.to_string(),
    }
}

/// `tokens` with each `(DESCRIBE ...)` after FROM or JOIN rewritten (see the module's comment).
pub(crate) fn describe_subqueries(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut previous: Option<usize> = None;
    let mut i = 0;
    while i < tokens.len() {
        if matches!(tokens[i].token, Token::Whitespace(_)) {
            i += 1;
            continue;
        }
        let after_from =
            previous.is_some_and(|p| is_word(&tokens[p], "FROM") || is_word(&tokens[p], "JOIN"));
        let describe = next_solid(&tokens, i + 1)
            .filter(|&d| is_word(&tokens[d], "DESCRIBE") || is_word(&tokens[d], "DESC"));
        if let (Token::LParen, true, Some(describe)) = (&tokens[i].token, after_from, describe)
            && let Some(close) = closing(&tokens, i)
        {
            let text: String = tokens[describe + 1..close].iter().map(sql_text).collect();
            let call = [
                TokenWithSpan::wrap(Token::make_word(DESCRIBE_QUERY, None)),
                TokenWithSpan::wrap(Token::LParen),
                TokenWithSpan::wrap(Token::SingleQuotedString(text.trim().to_string())),
                TokenWithSpan::wrap(Token::RParen),
            ];
            tokens.splice(i..=close, call);
        }
        previous = Some(i);
        i += 1;
    }
    tokens
}

#[cfg(test)]
mod tests {
    use sqlparser::dialect::DuckDbDialect;

    fn rewritten(sql: &str) -> String {
        crate::rewritten_by(super::describe_subqueries, sql)
    }

    #[test]
    fn a_described_query_in_from_becomes_a_table_function() {
        assert_eq!(
            rewritten("SELECT column_name FROM (DESCRIBE SELECT 1 AS x) t"),
            "SELECT column_name FROM describe_query('SELECT 1 AS x') t"
        );
        assert_eq!(
            rewritten("SELECT * FROM (SELECT 1) JOIN (DESC tbl) USING (x)"),
            "SELECT * FROM (SELECT 1) JOIN describe_query('tbl') USING (x)"
        );
        assert_eq!(rewritten("DESCRIBE SELECT 1"), "DESCRIBE SELECT 1");
    }

    #[test]
    fn quotes_in_the_described_query_survive() {
        let sql = "SELECT * FROM (DESCRIBE SELECT 'a''b' AS x)";
        let tokens = sqlparser::tokenizer::Tokenizer::new(&DuckDbDialect {}, sql)
            .tokenize()
            .unwrap();
        let tokens = tokens.into_iter().map(super::TokenWithSpan::wrap).collect();
        let out = super::describe_subqueries(tokens);
        let text = out.iter().find_map(|t| match &t.token {
            super::Token::SingleQuotedString(s) => Some(s.clone()),
            _ => None,
        });
        assert_eq!(text.as_deref(), Some("SELECT 'a''b' AS x"));
    }
}
