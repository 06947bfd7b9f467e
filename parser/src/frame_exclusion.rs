//! A window frame's `EXCLUDE CURRENT ROW | GROUP | TIES | NO OTHERS`, which sqlparser does
//! not read: the clause is taken out of `OVER (...)` and, but for `NO OTHERS` (the default),
//! a marker is put where a window name would stand, `OVER (pondra_exclude_ties ORDER BY ...)`.
//! The binder reads the marker back as the frame's exclusion.

use crate::tokens::{enclosing_open, is_word, next_solid, previous_solid};
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

/// The window names that stand for `EXCLUDE CURRENT ROW`, `EXCLUDE GROUP` and `EXCLUDE TIES`.
pub const EXCLUDE_CURRENT_ROW: &str = "pondra_exclude_current_row";
pub const EXCLUDE_GROUP: &str = "pondra_exclude_group";
pub const EXCLUDE_TIES: &str = "pondra_exclude_ties";

/// `tokens` with each frame exclusion of an `OVER (...)` turned into its marker (see the
/// module's comment). An `EXCLUDE` anywhere else is left for the parser.
pub(crate) fn frame_exclusions(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut i = 0;
    while i < tokens.len() {
        if !is_word(&tokens[i], "EXCLUDE") {
            i += 1;
            continue;
        }
        let Some((marker, last)) = exclusion_at(&tokens, i) else {
            i += 1;
            continue;
        };
        let closes_spec =
            next_solid(&tokens, last + 1).is_some_and(|close| tokens[close].token == Token::RParen);
        let Some(open) = enclosing_open(&tokens, i).filter(|_| closes_spec) else {
            i += 1;
            continue;
        };
        // `OVER (...)`, or a named window's `WINDOW w AS (...)`.
        let opens_window = previous_solid(&tokens, open)
            .is_some_and(|over| is_word(&tokens[over], "OVER") || is_word(&tokens[over], "AS"));
        if !opens_window {
            i += 1;
            continue;
        }
        tokens.drain(i..=last);
        if let Some(marker) = marker {
            let inserted = [
                TokenWithSpan::wrap(Token::make_word(marker, None)),
                TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space)),
            ];
            tokens.splice(open + 1..open + 1, inserted);
        }
        i = open + 1;
    }
    tokens
}

/// The marker (none for `NO OTHERS`) of the exclusion whose `EXCLUDE` is at `at`, and the
/// index of its last word.
fn exclusion_at(tokens: &[TokenWithSpan], at: usize) -> Option<(Option<&'static str>, usize)> {
    let first = next_solid(tokens, at + 1)?;
    let second = next_solid(tokens, first + 1);
    let followed_by = |word: &str| second.filter(|&s| is_word(&tokens[s], word));
    if is_word(&tokens[first], "CURRENT") {
        return followed_by("ROW").map(|last| (Some(EXCLUDE_CURRENT_ROW), last));
    }
    if is_word(&tokens[first], "NO") {
        return followed_by("OTHERS").map(|last| (None, last));
    }
    if is_word(&tokens[first], "GROUP") {
        return Some((Some(EXCLUDE_GROUP), first));
    }
    if is_word(&tokens[first], "TIES") {
        return Some((Some(EXCLUDE_TIES), first));
    }
    None
}

/// SQL text written from a parsed statement (an output column's name) with each marker back
/// as the `EXCLUDE` clause it stands for, at the end of its window.
pub fn with_exclusions_written(text: &str) -> String {
    let mut text = text.to_string();
    for (marker, clause) in [
        (EXCLUDE_CURRENT_ROW, " EXCLUDE CURRENT ROW"),
        (EXCLUDE_GROUP, " EXCLUDE GROUP"),
        (EXCLUDE_TIES, " EXCLUDE TIES"),
    ] {
        let marked = format!("({marker} ");
        while let Some(at) = text.find(&marked) {
            let inside = at + marked.len();
            let Some(close) = closing_paren(&text[inside..]) else {
                break;
            };
            text.insert_str(inside + close, clause);
            text.replace_range(at + 1..inside, "");
        }
    }
    text
}

/// The byte offset of the `)` that closes text inside parentheses.
fn closing_paren(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::rewritten_by(frame_exclusions, sql)
    }

    #[test]
    fn exclusions_become_window_names() {
        assert_eq!(
            rewritten(
                "SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW) FROM t"
            ),
            "SELECT sum(x) OVER (pondra_exclude_current_row ORDER BY x ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING ) FROM t"
        );
        assert_eq!(
            rewritten("SELECT sum(x) OVER (PARTITION BY (a) ORDER BY x exclude ties) FROM t"),
            "SELECT sum(x) OVER (pondra_exclude_ties PARTITION BY (a) ORDER BY x ) FROM t"
        );
        assert_eq!(
            rewritten("SELECT sum(x) OVER (ORDER BY x EXCLUDE NO OTHERS), 1 FROM t"),
            "SELECT sum(x) OVER (ORDER BY x ), 1 FROM t"
        );
    }

    #[test]
    fn markers_are_written_back() {
        assert_eq!(
            with_exclusions_written(
                "sum(x) OVER (pondra_exclude_ties PARTITION BY f(a) ORDER BY x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)"
            ),
            "sum(x) OVER (PARTITION BY f(a) ORDER BY x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW EXCLUDE TIES)"
        );
        assert_eq!(
            with_exclusions_written("(pondra_exclude_group x"),
            "(pondra_exclude_group x"
        );
    }

    #[test]
    fn other_excludes_stay() {
        for sql in [
            "SELECT * EXCLUDE (a) FROM t",
            "SELECT * EXCLUDE a FROM t",
            "SELECT f(EXCLUDE GROUP) FROM t",
        ] {
            assert_eq!(rewritten(sql), sql);
        }
    }
}
