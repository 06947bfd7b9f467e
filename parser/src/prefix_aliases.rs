//! DuckDB's prefix aliases: `SELECT total : price * qty` and `FROM t : tbl` name what follows
//! the colon, as `price * qty AS total` and `tbl AS t` do; that is what they are rewritten to.
//! Only an identifier (bare or double-quoted; for a FROM item, a string too) that opens a
//! select item or a FROM item takes a colon this way; inside `[...]` (slices) and `{...}`
//! (struct literals) a colon keeps its meaning.

use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

/// Words that end a select item or a FROM item when met outside brackets.
const ITEM_ENDS: [&str; 32] = [
    "FROM",
    "SELECT",
    "WHERE",
    "GROUP",
    "HAVING",
    "ORDER",
    "LIMIT",
    "OFFSET",
    "FETCH",
    "QUALIFY",
    "WINDOW",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "INTO",
    "JOIN",
    "ON",
    "USING",
    "LEFT",
    "RIGHT",
    "INNER",
    "FULL",
    "CROSS",
    "NATURAL",
    "POSITIONAL",
    "ASOF",
    "ANTI",
    "SEMI",
    "LATERAL",
    "TABLESAMPLE",
    "PIVOT",
    "UNPIVOT",
];

/// Words after which an item starts.
const ITEM_STARTS: [&str; 5] = ["SELECT", "DISTINCT", "ALL", "FROM", "JOIN"];

fn is_solid(token: &TokenWithSpan) -> bool {
    !matches!(token.token, Token::Whitespace(_))
}

fn word_in(token: &Token, words: &[&str]) -> bool {
    matches!(token, Token::Word(w) if w.quote_style.is_none()
        && words.iter().any(|k| w.value.eq_ignore_ascii_case(k)))
}

/// `tokens` with each prefix alias moved after its item as `AS alias`.
pub(crate) fn prefix_aliases(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    // The brackets open at each token, to tell a slice's or a struct's colon from an alias's.
    let mut open: Vec<Token> = Vec::new();
    let mut previous: Option<Token> = None;
    // Between `lambda` and its colon, `a, x : ...` are a lambda's parameters.
    let mut in_lambda_parameters = false;
    let mut i = 0;
    while i < tokens.len() {
        let token = tokens[i].token.clone();
        match &token {
            Token::LParen | Token::LBracket | Token::LBrace => open.push(token.clone()),
            Token::RParen | Token::RBracket | Token::RBrace => {
                open.pop();
            }
            Token::Colon => in_lambda_parameters = false,
            other if word_in(other, &["LAMBDA"]) => in_lambda_parameters = true,
            _ => {}
        }
        if is_solid(&tokens[i]) {
            if !in_lambda_parameters
                && is_prefix_alias(&tokens, i, previous.as_ref(), open.last())
                && let Some(moved) = move_alias(&mut tokens, i)
            {
                // Go on from the item's first token, now where the alias was.
                previous = None;
                i = moved;
                continue;
            }
            previous = Some(token);
        }
        i += 1;
    }
    tokens
}

fn next_solid(tokens: &[TokenWithSpan], from: usize) -> Option<usize> {
    (from..tokens.len()).find(|&i| is_solid(&tokens[i]))
}

/// Whether the identifier at `i` is followed by a single colon and opens an item.
fn is_prefix_alias(
    tokens: &[TokenWithSpan],
    i: usize,
    previous: Option<&Token>,
    bracket: Option<&Token>,
) -> bool {
    // A FROM item's alias may be a string too; a select item's may not (`'j': 42` is refused).
    let in_from = previous.is_some_and(|p| word_in(p, &["FROM", "JOIN"]));
    let identifier = match &tokens[i].token {
        Token::Word(w) => w.quote_style.is_none() || w.quote_style == Some('"'),
        Token::SingleQuotedString(_) => in_from,
        _ => false,
    };
    let starts_item = match previous {
        Some(Token::Comma) => true,
        Some(token) => word_in(token, &ITEM_STARTS),
        None => false,
    };
    let in_brackets = matches!(bracket, Some(Token::LBracket | Token::LBrace));
    identifier
        && starts_item
        && !in_brackets
        && next_solid(tokens, i + 1).is_some_and(|c| tokens[c].token == Token::Colon)
}

/// Moves the alias at `alias` behind its item; the index the item now starts at, or `None`
/// when there is no item after the colon.
fn move_alias(tokens: &mut Vec<TokenWithSpan>, alias: usize) -> Option<usize> {
    let colon = next_solid(tokens, alias + 1)?;
    let start = next_solid(tokens, colon + 1)?;
    let end = item_end(tokens, start);
    if end == start {
        return None;
    }
    let name = tokens[alias].clone();
    let item: Vec<TokenWithSpan> = tokens[start..end].to_vec();
    let space = || TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space));
    let mut replacement = item;
    replacement.extend([
        space(),
        TokenWithSpan::wrap(Token::make_keyword("AS")),
        space(),
        name,
        space(),
    ]);
    tokens.splice(alias..end, replacement);
    Some(alias)
}

/// The index just past the item starting at `start`: the first `,`, closing bracket, `;` or
/// clause word outside brackets.
fn item_end(tokens: &[TokenWithSpan], start: usize) -> usize {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(start) {
        match &token.token {
            Token::LParen | Token::LBracket | Token::LBrace => depth += 1,
            Token::RParen | Token::RBracket | Token::RBrace if depth == 0 => return i,
            Token::RParen | Token::RBracket | Token::RBrace => depth -= 1,
            _ if depth > 0 => {}
            Token::Comma | Token::SemiColon | Token::EOF => return i,
            other if word_in(other, &ITEM_ENDS) && !is_call(tokens, i) => return i,
            _ => {}
        }
    }
    tokens.len()
}

/// Whether the word at `i` is a function's name (`left(s, 2)`), not a clause's.
fn is_call(tokens: &[TokenWithSpan], i: usize) -> bool {
    word_in(&tokens[i].token, &["LEFT", "RIGHT"])
        && next_solid(tokens, i + 1).is_some_and(|n| tokens[n].token == Token::LParen)
}

#[cfg(test)]
mod tests {
    fn rewritten(sql: &str) -> String {
        let text = crate::rewritten_by(super::prefix_aliases, sql);
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn select_and_from_items_take_prefix_aliases() {
        assert_eq!(rewritten("SELECT j : 42"), "SELECT 42 AS j");
        assert_eq!(
            rewritten("SELECT j1 : 42, 42 AS j2 FROM b : a WHERE x"),
            "SELECT 42 AS j1 , 42 AS j2 FROM a AS b WHERE x"
        );
        assert_eq!(rewritten("FROM r : range(1)"), "FROM range(1) AS r");
        assert_eq!(
            rewritten("FROM r : range(1) SELECT r"),
            "FROM range(1) AS r SELECT r"
        );
        assert_eq!(
            rewritten("FROM 'v' : (VALUES (42))"),
            "FROM (VALUES (42)) AS 'v'"
        );
        assert_eq!(
            rewritten("SELECT \"hel lo\" : f(a, b) + 1 FROM t"),
            "SELECT f(a, b) + 1 AS \"hel lo\" FROM t"
        );
    }

    #[test]
    fn other_colons_keep_their_meaning() {
        assert_eq!(
            rewritten("SELECT l[a : b] FROM t"),
            "SELECT l[a : b] FROM t"
        );
        assert_eq!(rewritten("SELECT {a: 1, b: 2}"), "SELECT {a: 1, b: 2}");
        assert_eq!(rewritten("SELECT 'j': 42"), "SELECT 'j': 42");
        assert_eq!(rewritten("SELECT x::INT"), "SELECT x::INT");
        assert_eq!(
            rewritten("SELECT p : left(s, 2) FROM t LEFT JOIN u ON true"),
            "SELECT left(s, 2) AS p FROM t LEFT JOIN u ON true"
        );
        assert_eq!(
            rewritten("SELECT list_reduce(l, lambda a, x: a + x), lambda y, z: y"),
            "SELECT list_reduce(l, lambda a, x: a + x), lambda y, z: y"
        );
    }
}
