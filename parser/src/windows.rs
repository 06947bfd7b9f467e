//! Flink's window table functions read as RisingWave's short form, which sqlparser parses:
//! `TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size))` becomes `TUMBLE(t, ts, size)`, and `HOP`
//! likewise; `TABLE(SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), gap))` becomes
//! `SESSION(t, ts, gap, k)` (the partition keys last, `PARTITION BY (k1, k2)` giving both).
//! sqlparser has no grammar for a `TABLE t` argument or for `DESCRIPTOR`, so the tokens are
//! rewritten before it reads them.

use crate::tokens::next_solid;
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// The window functions of Flink's form.
const WINDOW_FUNCTIONS: [&str; 3] = ["TUMBLE", "HOP", "SESSION"];

fn is_word(token: Option<&TokenWithSpan>, word: &str) -> bool {
    matches!(token.map(|t| &t.token), Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

fn is_window_function(token: Option<&TokenWithSpan>) -> bool {
    WINDOW_FUNCTIONS.iter().any(|f| is_word(token, f))
}

/// `tokens` with each Flink window call rewritten (see the module's comment).
pub(crate) fn short_window_calls(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|t| is_window_function(Some(t))) {
        return tokens;
    }
    let mut out = Vec::with_capacity(tokens.len());
    // The depths whose closing parenthesis is dropped with the word that opened it.
    let mut dropped: Vec<usize> = Vec::new();
    // Per call being rewritten, the depth its closing parenthesis returns to, and the
    // partition keys to put before it.
    let mut calls: Vec<(usize, Vec<TokenWithSpan>)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let solid = |from: usize| next_solid(&tokens, from);
        // PARTITION BY keys, directly in a rewritten call: kept for its end.
        if is_word(tokens.get(i), "PARTITION")
            && let Some(by) = solid(i + 1).filter(|&j| is_word(tokens.get(j), "BY"))
            && let Some((close, keys)) = calls.last_mut()
            && *close + 1 == depth
        {
            let (taken, next) = partition_keys(&tokens, by + 1);
            *keys = taken;
            i = next;
            continue;
        }
        // TABLE ( TUMBLE ( TABLE t ...: keep `TUMBLE (` and `t ...`.
        if is_word(tokens.get(i), "TABLE")
            && let Some(open) = solid(i + 1).filter(|&j| tokens[j].token == Token::LParen)
            && let Some(call) = solid(open + 1).filter(|&j| is_window_function(tokens.get(j)))
            && let Some(inner) = solid(call + 1).filter(|&j| tokens[j].token == Token::LParen)
            && let Some(table) = solid(inner + 1).filter(|&j| is_word(tokens.get(j), "TABLE"))
        {
            dropped.push(depth);
            calls.push((depth + 1, Vec::new()));
            depth += 2;
            out.push(tokens[call].clone());
            out.push(tokens[inner].clone());
            i = table + 1;
            continue;
        }
        // DESCRIPTOR ( ts ): keep `ts`.
        if is_word(tokens.get(i), "DESCRIPTOR")
            && let Some(open) = solid(i + 1).filter(|&j| tokens[j].token == Token::LParen)
        {
            dropped.push(depth);
            depth += 1;
            i = open + 1;
            continue;
        }
        match tokens[i].token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth = depth.saturating_sub(1);
                if calls.last().is_some_and(|(close, _)| *close == depth) {
                    let (_, keys) = calls.pop().expect("a call");
                    if !keys.is_empty() {
                        let comma = TokenWithSpan::wrap(Token::Comma);
                        out.push(comma);
                        out.extend(keys);
                    }
                }
                if dropped.last() == Some(&depth) {
                    dropped.pop();
                    i += 1;
                    continue;
                }
            }
            _ => {}
        }
        out.push(tokens[i].clone());
        i += 1;
    }
    out
}

/// The keys after `PARTITION BY` from `from`, up to the comma that ends them, without the
/// parentheses around a list; and where the comma is.
fn partition_keys(tokens: &[TokenWithSpan], from: usize) -> (Vec<TokenWithSpan>, usize) {
    let mut depth = 0usize;
    let mut end = from;
    while end < tokens.len() {
        match tokens[end].token {
            Token::LParen => depth += 1,
            Token::RParen if depth == 0 => break,
            Token::RParen => depth -= 1,
            Token::Comma if depth == 0 => break,
            _ => {}
        }
        end += 1;
    }
    let mut keys: Vec<TokenWithSpan> = tokens[from..end]
        .iter()
        .filter(|t| !matches!(t.token, Token::Whitespace(_)))
        .cloned()
        .collect();
    if keys.first().map(|t| &t.token) == Some(&Token::LParen)
        && keys.last().map(|t| &t.token) == Some(&Token::RParen)
    {
        keys = keys[1..keys.len() - 1].to_vec();
    }
    (keys, end)
}

#[cfg(test)]
mod tests {
    use crate::parse_sql;

    fn same(flink: &str, short: &str) {
        let statement = |sql: &str| parse_sql(sql).unwrap().remove(0).statement;
        assert_eq!(statement(flink), statement(short), "{flink}");
    }

    #[test]
    fn flink_window_calls_read_as_short_ones() {
        same(
            "SELECT * FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND))",
            "SELECT * FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND)",
        );
        same(
            "SELECT window_start, count(*) FROM TABLE(\n hop ( table bid , descriptor ( ts ), \
             INTERVAL '2' SECOND, INTERVAL '10' SECOND)) AS w GROUP BY 1",
            "SELECT window_start, count(*) FROM hop(bid, ts, INTERVAL '2' SECOND, \
             INTERVAL '10' SECOND) AS w GROUP BY 1",
        );
        same(
            "SELECT * FROM TABLE(SESSION(TABLE bid PARTITION BY bidder, DESCRIPTOR(ts), \
             INTERVAL '10' SECOND))",
            "SELECT * FROM SESSION(bid, ts, INTERVAL '10' SECOND, bidder)",
        );
        same(
            "SELECT * FROM TABLE(SESSION(TABLE bid PARTITION BY (a, b), DESCRIPTOR(ts), \
             INTERVAL '10' SECOND))",
            "SELECT * FROM SESSION(bid, ts, INTERVAL '10' SECOND, a, b)",
        );
        // Other uses of the words are left alone.
        same("SELECT tumble FROM hop", "SELECT tumble FROM hop");
    }
}
