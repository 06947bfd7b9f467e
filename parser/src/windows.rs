//! Flink's window table functions read as RisingWave's short form, which sqlparser parses:
//! `TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), size))` becomes `TUMBLE(t, ts, size)`, and `HOP`
//! likewise. sqlparser has no grammar for a `TABLE t` argument or for `DESCRIPTOR`, so the
//! tokens are rewritten before it reads them.

use sqlparser::tokenizer::{Token, TokenWithSpan};

/// The window functions of Flink's form.
const WINDOW_FUNCTIONS: [&str; 2] = ["TUMBLE", "HOP"];

fn is_word(token: Option<&TokenWithSpan>, word: &str) -> bool {
    matches!(token.map(|t| &t.token), Some(Token::Word(w)) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

fn is_window_function(token: Option<&TokenWithSpan>) -> bool {
    WINDOW_FUNCTIONS.iter().any(|f| is_word(token, f))
}

/// The index of the next token from `from` that is not whitespace.
fn next_solid(tokens: &[TokenWithSpan], from: usize) -> Option<usize> {
    (from..tokens.len()).find(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
}

/// `tokens` with each Flink window call rewritten (see the module's comment).
pub(crate) fn short_window_calls(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|t| is_window_function(Some(t))) {
        return tokens;
    }
    let mut out = Vec::with_capacity(tokens.len());
    // The depths whose closing parenthesis is dropped with the word that opened it.
    let mut dropped: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let solid = |from: usize| next_solid(&tokens, from);
        // TABLE ( TUMBLE ( TABLE t ...: keep `TUMBLE (` and `t ...`.
        if is_word(tokens.get(i), "TABLE")
            && let Some(open) = solid(i + 1).filter(|&j| tokens[j].token == Token::LParen)
            && let Some(call) = solid(open + 1).filter(|&j| is_window_function(tokens.get(j)))
            && let Some(inner) = solid(call + 1).filter(|&j| tokens[j].token == Token::LParen)
            && let Some(table) = solid(inner + 1).filter(|&j| is_word(tokens.get(j), "TABLE"))
        {
            dropped.push(depth);
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
        // Other uses of the words are left alone.
        same("SELECT tumble FROM hop", "SELECT tumble FROM hop");
    }
}
