//! DuckDB's ASOF joins read as sqlparser reads ASOF joins (Snowflake's form, which needs a
//! `MATCH_CONDITION`): `a ASOF [LEFT] JOIN b ON a.k = b.k AND a.ts >= b.ts` becomes
//! `a ASOF JOIN b MATCH_CONDITION ('duckdb' | 'duckdb left') ON ...`. The binder reads the
//! marker as "the inequality is in ON", and whether rows of `a` without a match are kept.
//! A join that already has a `MATCH_CONDITION` is left as it is.

use crate::tokens::{is_word, next_solid};
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

/// The marker of DuckDB's inner ASOF join.
pub const DUCKDB_ASOF: &str = "duckdb";
/// The marker of DuckDB's `ASOF LEFT JOIN`.
pub const DUCKDB_ASOF_LEFT: &str = "duckdb left";

/// `tokens` with each DuckDB ASOF join rewritten (see the module's comment).
pub(crate) fn duckdb_asof_joins(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut i = 0;
    while i < tokens.len() {
        if !is_word(&tokens[i], "ASOF") {
            i += 1;
            continue;
        }
        let Some(mut join) = next_solid(&tokens, i + 1) else {
            break;
        };
        let left = is_word(&tokens[join], "LEFT");
        if left {
            let Some(after) = next_solid(&tokens, join + 1) else {
                break;
            };
            tokens.drain(join..after);
        }
        join = match next_solid(&tokens, i + 1) {
            Some(j) if is_word(&tokens[j], "JOIN") => j,
            _ => {
                i += 1;
                continue;
            }
        };
        if let Some(on) = on_of(&tokens, join + 1) {
            let marker = match left {
                true => DUCKDB_ASOF_LEFT,
                false => DUCKDB_ASOF,
            };
            let inserted = [
                TokenWithSpan::wrap(Token::make_word("MATCH_CONDITION", None)),
                TokenWithSpan::wrap(Token::LParen),
                TokenWithSpan::wrap(Token::SingleQuotedString(marker.into())),
                TokenWithSpan::wrap(Token::RParen),
                TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space)),
            ];
            tokens.splice(on..on, inserted);
        }
        i = join + 1;
    }
    tokens
}

/// The index of the `ON` (or `USING`) that ends the relation starting at `from`, at its depth; `None`
/// when a `MATCH_CONDITION` comes first or the relation has no `ON`.
fn on_of(tokens: &[TokenWithSpan], from: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(from) {
        match token.token {
            Token::LParen => depth += 1,
            Token::RParen if depth == 0 => return None,
            Token::RParen => depth -= 1,
            _ if depth > 0 => {}
            _ if is_word(token, "MATCH_CONDITION") || is_word(token, "JOIN") => return None,
            _ if is_word(token, "ON") || is_word(token, "USING") => return Some(i),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::rewritten_by(duckdb_asof_joins, sql)
    }

    #[test]
    fn duckdb_asof_joins_gain_a_marker() {
        assert_eq!(
            rewritten("SELECT * FROM t ASOF JOIN (SELECT 1) q ON t.a >= q.b"),
            "SELECT * FROM t ASOF JOIN (SELECT 1) q MATCH_CONDITION('duckdb') ON t.a >= q.b"
        );
        assert_eq!(
            rewritten("SELECT * FROM t asof left join q ON t.a >= q.b"),
            "SELECT * FROM t asof join q MATCH_CONDITION('duckdb left') ON t.a >= q.b"
        );
        let snowflake = "SELECT * FROM t ASOF JOIN q MATCH_CONDITION (t.a >= q.b) ON t.k = q.k";
        assert_eq!(rewritten(snowflake), snowflake);
        let named = "SELECT asof FROM t";
        assert_eq!(rewritten(named), named);
    }
}
