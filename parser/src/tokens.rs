//! What the token passes share: finding words, the next and previous tokens that are not
//! whitespace, and the parenthesis matching another.

use sqlparser::tokenizer::{Token, TokenWithSpan};

/// Whether `token` is the unquoted word `word`, in any case.
pub(crate) fn is_word(token: &TokenWithSpan, word: &str) -> bool {
    is_word_token(&token.token, word)
}

/// As [`is_word`], for a bare token.
pub(crate) fn is_word_token(token: &Token, word: &str) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// The index of the first token at or after `from` that is not whitespace.
pub(crate) fn next_solid(tokens: &[TokenWithSpan], from: usize) -> Option<usize> {
    (from..tokens.len()).find(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
}

/// The index of the last token before `before` that is not whitespace.
pub(crate) fn previous_solid(tokens: &[TokenWithSpan], before: usize) -> Option<usize> {
    (0..before)
        .rev()
        .find(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
}

/// The index of the `)` closing the `(` at `open`.
pub(crate) fn closing(tokens: &[TokenWithSpan], open: usize) -> Option<usize> {
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

/// The index of the `(` opening the `)` at `close`.
pub(crate) fn opening(tokens: &[TokenWithSpan], close: usize) -> Option<usize> {
    debug_assert_eq!(tokens[close].token, Token::RParen, "a closing parenthesis");
    enclosing_open(tokens, close)
}

/// The index of the `(` that opens the parentheses the token at `at` is inside.
pub(crate) fn enclosing_open(tokens: &[TokenWithSpan], at: usize) -> Option<usize> {
    let mut depth = 0usize;
    for i in (0..at).rev() {
        match tokens[i].token {
            Token::RParen => depth += 1,
            Token::LParen if depth == 0 => return Some(i),
            Token::LParen => depth -= 1,
            _ => {}
        }
    }
    None
}
