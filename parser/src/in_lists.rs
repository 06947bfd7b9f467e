//! DuckDB's `x IN [1, 2]` and `x IN list_column`: membership in a list, which sqlparser reads
//! only in BigQuery's form `x IN UNNEST(list)`; that is what they are rewritten to. A
//! parenthesized IN (a list of values or a subquery) is left as it is.

use crate::tokens::{is_word_token, next_solid};
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// The index just past the list operand starting at `start`: a bracketed list literal, or a
/// column name (`lst`, `t.lst`); `None` for anything else.
fn operand_end(tokens: &[TokenWithSpan], start: usize) -> Option<usize> {
    match &tokens[start].token {
        Token::LBracket => {
            let mut depth = 0usize;
            for (i, token) in tokens.iter().enumerate().skip(start) {
                match token.token {
                    Token::LBracket => depth += 1,
                    Token::RBracket if depth == 1 => return Some(i + 1),
                    Token::RBracket => depth -= 1,
                    _ => {}
                }
            }
            None
        }
        Token::Word(w)
            if w.quote_style.is_some() || w.keyword == sqlparser::keywords::Keyword::NoKeyword =>
        {
            let mut end = start + 1;
            while tokens.get(end).map(|t| &t.token) == Some(&Token::Period)
                && matches!(tokens.get(end + 1).map(|t| &t.token), Some(Token::Word(_)))
            {
                end += 2;
            }
            // A call (`IN f(x)`) is not a column.
            (tokens.get(end).map(|t| &t.token) != Some(&Token::LParen)).then_some(end)
        }
        _ => None,
    }
}

/// `tokens` with each `IN list` written `IN UNNEST(list)`; POSITION's `IN`
/// (`position(s IN t)`) is left alone.
pub(crate) fn in_lists(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    // For each open parenthesis, whether it is POSITION's.
    let mut open: Vec<bool> = Vec::new();
    let mut previous: Option<usize> = None;
    let mut i = 0;
    while i < tokens.len() {
        match tokens[i].token {
            Token::Whitespace(_) => {
                i += 1;
                continue;
            }
            Token::LParen => {
                open.push(previous.is_some_and(|p| is_word_token(&tokens[p].token, "POSITION")))
            }
            Token::RParen => {
                open.pop();
            }
            _ => {}
        }
        previous = Some(i);
        if !is_word_token(&tokens[i].token, "IN") || open.last() == Some(&true) {
            i += 1;
            continue;
        }
        let Some(start) = next_solid(&tokens, i + 1) else {
            break;
        };
        if let Some(end) = operand_end(&tokens, start) {
            tokens.insert(end, TokenWithSpan::wrap(Token::RParen));
            tokens.splice(
                start..start,
                [
                    TokenWithSpan::wrap(Token::make_keyword("UNNEST")),
                    TokenWithSpan::wrap(Token::LParen),
                ],
            );
        }
        i += 1;
    }
    tokens
}

#[cfg(test)]
mod tests {
    fn rewritten(sql: &str) -> String {
        crate::rewritten_by(super::in_lists, sql)
    }

    #[test]
    fn lists_after_in_are_unnested() {
        assert_eq!(
            rewritten("SELECT 1 IN [1, [2]]"),
            "SELECT 1 IN UNNEST([1, [2]])"
        );
        assert_eq!(
            rewritten("SELECT i NOT IN t.lst FROM t"),
            "SELECT i NOT IN UNNEST(t.lst) FROM t"
        );
        assert_eq!(rewritten("SELECT 1 IN (1, 2)"), "SELECT 1 IN (1, 2)");
        assert_eq!(rewritten("SELECT 1 IN f(x)"), "SELECT 1 IN f(x)");
        assert_eq!(
            rewritten("SELECT 1 IN (SELECT 1)"),
            "SELECT 1 IN (SELECT 1)"
        );
    }
}
