//! DuckDB's `IGNORE NULLS` / `RESPECT NULLS` inside a window function's parentheses
//! (`last_value(x IGNORE NULLS) OVER w`), which sqlparser reads only after them, as the SQL
//! standard writes it (`last_value(x) IGNORE NULLS OVER w`): the words are moved there.

use crate::tokens::{is_word, next_solid};
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

/// `tokens` with each `IGNORE NULLS` or `RESPECT NULLS` that ends a call's arguments moved
/// behind its closing parenthesis.
pub(crate) fn null_treatments(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut i = 0;
    while i < tokens.len() {
        let treatment = is_word(&tokens[i], "IGNORE") || is_word(&tokens[i], "RESPECT");
        let nulls = next_solid(&tokens, i + 1).filter(|&n| is_word(&tokens[n], "NULLS"));
        let close = nulls
            .and_then(|n| next_solid(&tokens, n + 1))
            .filter(|&c| tokens[c].token == Token::RParen);
        let (true, Some(nulls), Some(close)) = (treatment, nulls, close) else {
            i += 1;
            continue;
        };
        let words: Vec<TokenWithSpan> = vec![
            TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space)),
            tokens[i].clone(),
            TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space)),
            tokens[nulls].clone(),
        ];
        // After the `)`, whose index drops by the words taken out before it.
        tokens.splice(close + 1..close + 1, words);
        tokens.drain(i..=nulls);
        i = close + 1;
    }
    tokens
}

#[cfg(test)]
mod tests {
    use crate::{Statement, parse_sql};

    #[test]
    fn treatments_move_behind_the_arguments() {
        let parsed =
            parse_sql("SELECT last_value(x IGNORE NULLS) OVER (ORDER BY t) FROM s").unwrap();
        let Statement::Sql(sql) = &parsed[0].statement else {
            panic!("a query");
        };
        assert!(
            sql.to_string().contains("last_value(x) IGNORE NULLS OVER"),
            "{sql}"
        );
    }
}
