//! DuckDB's positional references: `SELECT #1 FROM t` names the first column of the FROM
//! clause. `#` followed by a number, where an operand may start, is read as the quoted
//! identifier `"#1"`, which the binder resolves by position when no column has that name.

use sqlparser::tokenizer::{Token, TokenWithSpan};

/// The quoted identifier a positional reference `#n` is read as.
pub fn positional_name(position: &str) -> String {
    format!("#{position}")
}

/// Whether an operand may start after `token`: after an operator, an opening bracket, a comma
/// or a keyword that precedes an expression.
fn operand_may_follow(token: Option<&Token>) -> bool {
    match token {
        None => false,
        Some(Token::Word(w)) => {
            w.quote_style.is_none()
                && [
                    "SELECT", "BY", "WHERE", "AND", "OR", "ON", "THEN", "ELSE", "WHEN", "NOT",
                    "DISTINCT", "ALL", "HAVING", "QUALIFY",
                ]
                .iter()
                .any(|k| w.value.eq_ignore_ascii_case(k))
        }
        Some(
            Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::RParen
            | Token::RBracket
            | Token::RBrace,
        ) => false,
        Some(_) => true,
    }
}

/// `tokens` with each positional reference `#n` read as the identifier `"#n"`.
pub(crate) fn positional_references(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut out: Vec<TokenWithSpan> = Vec::with_capacity(tokens.len());
    let mut previous: Option<Token> = None;
    let mut i = 0;
    while i < tokens.len() {
        let token = &tokens[i];
        if let (Token::Sharp, Some(Token::Number(digits, false))) =
            (&token.token, tokens.get(i + 1).map(|t| &t.token))
            && digits.bytes().all(|b| b.is_ascii_digit())
            && operand_may_follow(previous.as_ref())
        {
            let span = token.span.union(&tokens[i + 1].span);
            let name = Token::make_word(&positional_name(digits), Some('"'));
            previous = Some(name.clone());
            out.push(TokenWithSpan::new(name, span));
            i += 2;
            continue;
        }
        if !matches!(token.token, Token::Whitespace(_)) {
            previous = Some(token.token.clone());
        }
        out.push(token.clone());
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    fn rewritten(sql: &str) -> String {
        crate::rewritten_by(super::positional_references, sql)
    }

    #[test]
    fn sharps_before_numbers_are_positions() {
        assert_eq!(
            rewritten("SELECT #1+#2 FROM t ORDER BY #2, #1"),
            "SELECT \"#1\"+\"#2\" FROM t ORDER BY \"#2\", \"#1\""
        );
        assert_eq!(rewritten("SELECT x #1 FROM t"), "SELECT x #1 FROM t");
    }
}
