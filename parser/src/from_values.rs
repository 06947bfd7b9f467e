//! DuckDB's `FROM VALUES (1, 'a'), (2, 'b') AS t(n, s)`: a VALUES list as a FROM item without
//! the parentheses the standard asks for, rewritten to `FROM (VALUES ...) AS t(n, s)`. The
//! list is the rows after VALUES, each a parenthesized group, separated by commas.

use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::tokens::{closing, is_word, next_solid};

/// `tokens` with each bare VALUES list after FROM or JOIN put in parentheses.
pub(crate) fn from_values(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut i = 0;
    while i < tokens.len() {
        let starts_item = is_word(&tokens[i], "FROM") || is_word(&tokens[i], "JOIN");
        let values = next_solid(&tokens, i + 1).filter(|&v| is_word(&tokens[v], "VALUES"));
        let (true, Some(values)) = (starts_item, values) else {
            i += 1;
            continue;
        };
        let Some(end) = rows_end(&tokens, values) else {
            i += 1;
            continue;
        };
        let span = tokens[values].span;
        tokens.insert(end + 1, TokenWithSpan::new(Token::RParen, span));
        tokens.insert(values, TokenWithSpan::new(Token::LParen, span));
        i = end + 2;
    }
    tokens
}

/// The index of the `)` ending the last row of the VALUES list at `values`; `None` when what
/// follows is not rows.
fn rows_end(tokens: &[TokenWithSpan], values: usize) -> Option<usize> {
    let mut at = next_solid(tokens, values + 1)?;
    loop {
        if tokens[at].token != Token::LParen {
            return None;
        }
        let close = closing(tokens, at)?;
        match next_solid(tokens, close + 1) {
            Some(next) if tokens[next].token == Token::Comma => {
                at = next_solid(tokens, next + 1)?;
            }
            _ => return Some(close),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rewritten_by;

    #[test]
    fn bare_values_after_from_are_parenthesized() {
        assert_eq!(
            rewritten_by(
                super::from_values,
                "SELECT * FROM VALUES (1, 'a'), (2, 'b') AS t(n, s) WHERE n > 1"
            ),
            "SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS t(n, s) WHERE n > 1"
        );
        // Already parenthesized, or VALUES as a statement: unchanged.
        let kept = "SELECT * FROM (VALUES (1)) t(a); VALUES (1), (2); INSERT INTO t VALUES (1)";
        assert_eq!(rewritten_by(super::from_values, kept), kept);
        assert_eq!(
            rewritten_by(super::from_values, "FROM t JOIN VALUES (1) v(a) ON true"),
            "FROM t JOIN (VALUES (1)) v(a) ON true"
        );
    }
}
