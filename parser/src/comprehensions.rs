//! DuckDB's list comprehensions read as the lambdas they stand for:
//! `[f(x) FOR x IN list IF p(x)]` becomes `list_transform(list_filter(list, x -> p(x)),
//! x -> f(x))`, and `[f(x, i) FOR x, i IN list]` takes each element's position as `i`.

use crate::tokens::is_word_token;
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// `tokens` with every list comprehension rewritten, outer ones first.
pub(crate) fn list_comprehensions(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    // Each pass rewrites one; a bound keeps a malformed text from looping.
    for _ in 0..tokens.len() {
        match rewrite_one(&tokens) {
            Some(rewritten) => tokens = rewritten,
            None => break,
        }
    }
    tokens
}

/// The parts of the first comprehension in `tokens`, rewritten.
fn rewrite_one(tokens: &[TokenWithSpan]) -> Option<Vec<TokenWithSpan>> {
    for open in 0..tokens.len() {
        if tokens[open].token != Token::LBracket {
            continue;
        }
        let Some(parts) = parts_of(tokens, open) else {
            continue;
        };
        let mut out = tokens[..open].to_vec();
        out.extend(parts.rewritten(tokens));
        out.extend_from_slice(&tokens[parts.close + 1..]);
        return Some(out);
    }
    None
}

/// Where a comprehension's pieces are, by token position.
struct Parts {
    open: usize,
    for_at: usize,
    variables: Vec<Token>,
    in_at: usize,
    if_at: Option<usize>,
    close: usize,
}

/// The comprehension whose `[` is at `open`, if the bracket holds one: `FOR` at its own depth,
/// one or two names, `IN`, and optionally `IF`.
fn parts_of(tokens: &[TokenWithSpan], open: usize) -> Option<Parts> {
    let mut depth = 0usize;
    let (mut for_at, mut in_at, mut if_at) = (None, None, None);
    for (at, token) in tokens.iter().enumerate().skip(open) {
        match &token.token {
            Token::LBracket | Token::LParen => depth += 1,
            Token::RBracket | Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    if token.token != Token::RBracket {
                        return None;
                    }
                    let (for_at, in_at) = (for_at?, in_at?);
                    let variables: Vec<Token> = tokens[for_at + 1..in_at]
                        .iter()
                        .map(|t| t.token.clone())
                        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::Comma))
                        .collect();
                    let names = variables.iter().all(|t| matches!(t, Token::Word(_)));
                    // With a position and a filter, the positions would be those after
                    // filtering; such a comprehension is left to fail to parse.
                    let positions_filtered = variables.len() == 2 && if_at.is_some();
                    if !(1..=2).contains(&variables.len()) || !names || positions_filtered {
                        return None;
                    }
                    return Some(Parts {
                        open,
                        for_at,
                        variables,
                        in_at,
                        if_at,
                        close: at,
                    });
                }
            }
            t if depth == 1 && for_at.is_none() && is_word_token(t, "for") => for_at = Some(at),
            t if depth == 1 && for_at.is_some() && in_at.is_none() && is_word_token(t, "in") => {
                in_at = Some(at)
            }
            t if depth == 1 && in_at.is_some() && if_at.is_none() && is_word_token(t, "if") => {
                if_at = Some(at)
            }
            _ => {}
        }
    }
    None
}

impl Parts {
    fn rewritten(&self, tokens: &[TokenWithSpan]) -> Vec<TokenWithSpan> {
        let plain = |token: Token| TokenWithSpan::wrap(token);
        let slice = |range: std::ops::Range<usize>| tokens[range].to_vec();
        let lambda = |body: Vec<TokenWithSpan>| {
            let mut out = Vec::new();
            out.push(plain(Token::LParen));
            for (i, variable) in self.variables.iter().enumerate() {
                if i > 0 {
                    out.push(plain(Token::Comma));
                }
                out.push(plain(variable.clone()));
            }
            out.push(plain(Token::RParen));
            out.push(plain(Token::Arrow));
            out.push(plain(Token::LParen));
            out.extend(body);
            out.push(plain(Token::RParen));
            out
        };
        let list_end = self.if_at.unwrap_or(self.close);
        let mut list = slice(self.in_at + 1..list_end);
        if let Some(if_at) = self.if_at {
            let mut filtered = vec![
                plain(Token::make_word("list_filter", None)),
                plain(Token::LParen),
            ];
            filtered.append(&mut list);
            filtered.push(plain(Token::Comma));
            filtered.extend(lambda(slice(if_at + 1..self.close)));
            filtered.push(plain(Token::RParen));
            list = filtered;
        }
        let mut out = vec![
            plain(Token::make_word("list_transform", None)),
            plain(Token::LParen),
        ];
        out.extend(list);
        out.push(plain(Token::Comma));
        out.extend(lambda(slice(self.open + 1..self.for_at)));
        out.push(plain(Token::RParen));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::DuckDbDialect;
    use sqlparser::tokenizer::Tokenizer;

    fn rewritten(sql: &str) -> String {
        let tokens = Tokenizer::new(&DuckDbDialect {}, sql)
            .tokenize_with_location()
            .expect("tokens");
        list_comprehensions(tokens)
            .iter()
            .map(|t| t.token.to_string())
            .collect()
    }

    #[test]
    fn comprehensions_become_lambdas() {
        assert_eq!(
            rewritten("SELECT [x * x for x in l if x > 1]"),
            "SELECT list_transform(list_filter( l ,(x)->( x > 1)),(x)->(x * x ))"
        );
        assert_eq!(
            rewritten("SELECT [x + i FOR x, i IN [1, 2]]"),
            "SELECT list_transform( [1, 2],(x,i)->(x + i ))"
        );
        assert_eq!(rewritten("SELECT a[1], [1, 2]"), "SELECT a[1], [1, 2]");
        let filtered_positions = "SELECT [i FOR x, i IN l IF x > 5]";
        assert_eq!(rewritten(filtered_positions), filtered_positions);
    }
}
