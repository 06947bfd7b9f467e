//! A seeded SQL fuzzer: statements from the SQL the tests already have (the `.slt` files, the
//! TPC-H queries, SQLite's corpus), mutated token by token, and a list of pathological
//! statements (deep nesting, huge literals and lists, thousands of UNION arms, many-way cross
//! joins, 64-bit overflow in every arithmetic and date function, endless recursive CTEs).
//! The same seed gives the same statements in the same order, so a failure replays.

use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Every statement of the project's SQL: `.slt` files, SQLite's corpus, the TPC-H queries.
pub fn corpus(tests_dir: &Path) -> Vec<String> {
    let mut statements = Vec::new();
    for folder in [
        "slt",
        "sqllogictest",
        "sqllogictest/evidence",
        "sqllogictest/random",
    ] {
        let Ok(entries) = std::fs::read_dir(tests_dir.join(folder)) else {
            continue;
        };
        let mut files: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for file in files.iter().filter(|f| f.is_file()) {
            if let Ok(text) = std::fs::read_to_string(file) {
                statements.extend(records(&text));
            }
        }
    }
    statements.extend((1..=22).filter_map(pondra_tpch::query).map(str::to_string));
    statements.retain(|s| !changes_limits(s));
    statements
}

/// Whether a statement changes the limits the fuzzing relies on (the session's timeout, the
/// process's memory limit): those are left out, and so are mutants that come to name them.
pub fn changes_limits(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    lower.contains("statement_timeout") || lower.contains("memory_limit")
}

/// The SQL of each `statement` and `query` record of a sqllogictest file.
fn records(text: &str) -> Vec<String> {
    let mut statements = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if !(line.starts_with("statement ") || line.starts_with("query ")) {
            continue;
        }
        let mut sql = String::new();
        for line in lines.by_ref() {
            if line.trim().is_empty() || line.starts_with("----") {
                break;
            }
            sql.push_str(line);
            sql.push('\n');
        }
        // Files written by the tests land in the server's own temporary folder.
        let sql = sql.replace("$__TEST_DIR__", ".");
        if !sql.trim().is_empty() {
            statements.push(sql);
        }
    }
    statements
}

/// A piece of SQL text as the mutator sees it.
#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    Number(String),
    Text(String),
    Symbol(String),
    Space,
}

impl Token {
    fn write(&self, out: &mut String) {
        match self {
            Token::Word(w) | Token::Number(w) | Token::Symbol(w) => out.push_str(w),
            Token::Text(t) => {
                out.push('\'');
                out.push_str(&t.replace('\'', "''"));
                out.push('\'');
            }
            Token::Space => out.push(' '),
        }
    }
}

fn tokenize(sql: &str) -> Vec<Token> {
    let chars: Vec<char> = sql.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c.is_whitespace() {
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
            tokens.push(Token::Space);
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            tokens.push(Token::Number(chars[start..i].iter().collect()));
        } else if c.is_alphabetic() || c == '_' || c == '"' {
            if c == '"' {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += 1;
                }
                i = (i + 1).min(chars.len());
            } else {
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
            tokens.push(Token::Word(chars[start..i].iter().collect()));
        } else if c == '\'' {
            let mut text = String::new();
            i += 1;
            while i < chars.len() {
                if chars[i] == '\'' {
                    if chars.get(i + 1) == Some(&'\'') {
                        text.push('\'');
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                text.push(chars[i]);
                i += 1;
            }
            tokens.push(Token::Text(text));
        } else {
            i += 1;
            tokens.push(Token::Symbol(c.to_string()));
        }
    }
    tokens
}

fn render(tokens: &[Token]) -> String {
    let mut out = String::new();
    for token in tokens {
        token.write(&mut out);
    }
    out
}

/// Numbers at and past the edges of the types.
const EDGE_NUMBERS: &[&str] = &[
    "0",
    "-1",
    "2147483647",
    "-2147483648",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "99999999999999999999999999999999999999",
    "1e308",
    "1e-308",
    "0.0000000000000000000000000001",
    "3.4028235e38",
    "NaN",
    "1000000000",
];

/// Strings that have broken parsers and casts.
const EDGE_TEXTS: &[&str] = &[
    "",
    "\\",
    "%",
    "_%_",
    "NaN",
    "infinity",
    "-infinity",
    "9999-12-31",
    "0001-01-01",
    "2020-02-30",
    "294277-01-01 00:00:00",
    "1 day 2 hours",
    "{1,2,3}",
    "{{1},{2}}",
    "\u{0}",
    "é∂ƒ😀",
    "[1, 2",
    "1e400",
];

/// Words to insert, so that mutants reach clauses and functions their source did not have.
const WORDS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP BY",
    "ORDER BY",
    "HAVING",
    "LIMIT",
    "OFFSET",
    "UNION",
    "UNION ALL",
    "INTERSECT",
    "EXCEPT",
    "JOIN",
    "LEFT JOIN",
    "CROSS JOIN",
    "ON",
    "USING",
    "NULL",
    "NOT",
    "AND",
    "OR",
    "IN",
    "EXISTS",
    "BETWEEN",
    "LIKE",
    "IS",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "CAST",
    "AS",
    "DISTINCT",
    "ALL",
    "ANY",
    "OVER",
    "PARTITION BY",
    "WITH",
    "RECURSIVE",
    "VALUES",
    "INTERVAL",
    "DATE",
    "TIMESTAMP",
    "*",
    "(",
    ")",
    ",",
    "+",
    "-",
    "/",
    "%",
    "||",
    "=",
    "<",
    ">",
    "::",
    "[",
    "]",
    "count(*)",
    "sum(",
    "avg(",
    "min(",
    "max(",
    "string_agg(",
    "array_agg(",
    "repeat(",
    "generate_series(",
    "unnest(",
    "substring(",
    "date_trunc('day', ",
    "extract(year from ",
    "abs(",
    "power(",
    "ln(",
    "sqrt(",
    "round(",
    "regexp_replace(",
    "lower(",
    "coalesce(",
    "nullif(",
    "row_number() over (",
    "lag(",
    "range(",
    "ARRAY[",
    "'x'",
    "1",
    "0",
    "-1",
];

/// A statement of `corpus` changed by a few seeded mutations.
pub fn mutate(rng: &mut StdRng, corpus: &[String]) -> String {
    let source = &corpus[rng.random_range(0..corpus.len())];
    let mut tokens = tokenize(source);
    let rounds = rng.random_range(1..=4);
    for _ in 0..rounds {
        mutate_once(rng, &mut tokens, corpus);
    }
    render(&tokens)
}

fn mutate_once(rng: &mut StdRng, tokens: &mut Vec<Token>, corpus: &[String]) {
    if tokens.is_empty() {
        tokens.push(Token::Word("SELECT 1".into()));
        return;
    }
    let at = rng.random_range(0..tokens.len());
    match rng.random_range(0..10) {
        0 => {
            tokens.remove(at);
        }
        1 => {
            let copy = tokens[at].clone();
            tokens.insert(at, copy);
        }
        2 => {
            let other = rng.random_range(0..tokens.len());
            tokens.swap(at, other);
        }
        3 => {
            let word = WORDS[rng.random_range(0..WORDS.len())];
            tokens.insert(at, Token::Space);
            tokens.insert(at, Token::Word(word.into()));
            tokens.insert(at, Token::Space);
        }
        4 => {
            if let Some(i) = find(rng, tokens, |t| matches!(t, Token::Number(_))) {
                let edge = EDGE_NUMBERS[rng.random_range(0..EDGE_NUMBERS.len())];
                tokens[i] = Token::Number(edge.into());
            }
        }
        5 => {
            if let Some(i) = find(rng, tokens, |t| matches!(t, Token::Text(_))) {
                tokens[i] = Token::Text(match rng.random_range(0..4) {
                    0 => "x".repeat(rng.random_range(1_000..200_000)),
                    _ => EDGE_TEXTS[rng.random_range(0..EDGE_TEXTS.len())].into(),
                });
            }
        }
        6 => {
            // Splice: this statement's head, another's tail.
            let other = tokenize(&corpus[rng.random_range(0..corpus.len())]);
            if !other.is_empty() {
                let from = rng.random_range(0..other.len());
                tokens.truncate(at);
                tokens.extend_from_slice(&other[from..]);
            }
        }
        7 => {
            // Nest a stretch of tokens in parentheses or a function call.
            let end = (at + rng.random_range(1..6)).min(tokens.len());
            let open = ["(", "abs(", "coalesce(", "-(", "NOT ("][rng.random_range(0..5)];
            tokens.insert(end, Token::Symbol(")".into()));
            tokens.insert(at, Token::Symbol(open.into()));
        }
        8 => tokens.truncate(at),
        _ => {
            let copies = rng.random_range(2..50);
            let stretch: Vec<Token> = tokens[at..(at + 3).min(tokens.len())].to_vec();
            for _ in 0..copies {
                tokens.splice(at..at, stretch.iter().cloned());
            }
        }
    }
}

fn find(rng: &mut StdRng, tokens: &[Token], wanted: impl Fn(&Token) -> bool) -> Option<usize> {
    let hits: Vec<usize> = (0..tokens.len()).filter(|&i| wanted(&tokens[i])).collect();
    (!hits.is_empty()).then(|| hits[rng.random_range(0..hits.len())])
}

/// A source of fuzzed statements: mutants of the corpus, with a pathological statement now
/// and then.
pub struct Fuzzer {
    rng: StdRng,
    corpus: Vec<String>,
    pathological: Vec<String>,
}

impl Fuzzer {
    pub fn new(seed: u64, corpus: Vec<String>) -> Fuzzer {
        assert!(!corpus.is_empty(), "a corpus to mutate");
        Fuzzer {
            rng: StdRng::seed_from_u64(seed),
            corpus,
            pathological: pathological(),
        }
    }

    /// The next statement: one in ten a pathological one, one in ten a corpus statement as
    /// it is, the rest mutants.
    pub fn next_statement(&mut self) -> String {
        match self.rng.random_range(0..10) {
            0 => self.pathological[self.rng.random_range(0..self.pathological.len())].clone(),
            1 => self.corpus[self.rng.random_range(0..self.corpus.len())].clone(),
            _ => loop {
                let mutant = mutate(&mut self.rng, &self.corpus);
                if !changes_limits(&mutant) {
                    break mutant;
                }
            },
        }
    }

    /// Random bytes, sometimes cut from an Arrow, JSON or CSV body: for the HTTP door.
    pub fn next_body(&mut self, good: &[Vec<u8>]) -> Vec<u8> {
        let rng = &mut self.rng;
        match rng.random_range(0..3) {
            0 => (0..rng.random_range(0..4096))
                .map(|_| rng.random())
                .collect(),
            _ => {
                let mut body = good[rng.random_range(0..good.len())].clone();
                match rng.random_range(0..3) {
                    0 => body.truncate(rng.random_range(0..=body.len())),
                    1 => {
                        for _ in 0..rng.random_range(1..8) {
                            if !body.is_empty() {
                                let at = rng.random_range(0..body.len());
                                body[at] = rng.random();
                            }
                        }
                    }
                    _ => body.extend((0..rng.random_range(1..64)).map(|_| rng.random::<u8>())),
                }
                body
            }
        }
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.rng.random_range(0..items.len())]
    }
}

/// Statements built to exhaust, hang or crash a server: each must get an answer or a clear
/// error.
pub fn pathological() -> Vec<String> {
    let mut out = vec![
        format!("SELECT 1{}", " + 1".repeat(100_000)),
        format!("SELECT 1{}", " + 1".repeat(5_000)),
        vec!["SELECT 1"; 10_000].join(" UNION ALL "),
        format!("SELECT {}1{}", "(".repeat(5_000), ")".repeat(5_000)),
        format!("SELECT {}1{}", "abs(".repeat(300), ")".repeat(300)),
        format!("SELECT {}1", "- ".repeat(10_000)),
        format!("SELECT {}true", "NOT ".repeat(10_000)),
        format!("SELECT * FROM {}SELECT 1{}", "(".repeat(3_000), ") t".repeat(3_000)),
        format!("SELECT 1 IN ({})", (0..100_000).map(|i| i.to_string()).collect::<Vec<_>>().join(",")),
        format!("SELECT '{}'", "x".repeat(4_000_000)),
        format!(
            "SELECT * FROM {} LIMIT 1",
            (0..40).map(|i| format!("nation n{i}")).collect::<Vec<_>>().join(", ")
        ),
        format!(
            "SELECT count(*) FROM {}",
            (0..12).map(|i| format!("nation n{i}")).collect::<Vec<_>>().join(", ")
        ),
        format!(
            "SELECT count(*) FROM nation n0 {}",
            (1..200)
                .map(|i| format!("JOIN nation n{i} ON n{}.n_nationkey = n{i}.n_nationkey", i - 1))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        format!(
            "SELECT 1 FROM {}",
            (0..5_000).map(|i| format!("region r{i}")).collect::<Vec<_>>().join(", ")
        ),
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
            .into(),
        "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT count(*) FROM r"
            .into(),
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n FROM r) SELECT * FROM r".into(),
        "SELECT repeat('x', 2000000000)".into(),
        // Errors that would quote a huge input: cut short, and answered at once.
        "SELECT 'a' ~ repeat('x', 100000000)".into(),
        "SELECT CAST(repeat('9', 10000000) AS INT)".into(),
        "SELECT length(repeat(repeat('x', 100000), 100000))".into(),
        "SELECT count(*) FROM generate_series(1, 100000000000)".into(),
        "SELECT count(*) FROM generate_series(1, 2000000000)".into(),
        "SELECT unnest(generate_series(1, 100000000)), repeat('y', 1000000)".into(),
        "SELECT string_agg(repeat('x', 100000), ',') FROM lineitem".into(),
        "SELECT array_agg(l_comment) FROM lineitem a, lineitem b".into(),
        "SELECT count(*) FROM lineitem a, lineitem b, lineitem c".into(),
        "SELECT * FROM lineitem a, lineitem b ORDER BY a.l_comment".into(),
        "SELECT row_number() OVER (ORDER BY a.l_orderkey) FROM lineitem a, lineitem b".into(),
        "SELECT a.l_comment || b.l_comment FROM lineitem a, lineitem b".into(),
        "SELECT DISTINCT a.l_comment, b.l_comment FROM lineitem a, lineitem b".into(),
        "SELECT * FROM (VALUES (1), (2)) t(x), generate_series(1, 1000000000)".into(),
        "SELECT lpad('x', 2000000000)".into(),
        "SELECT 9223372036854775807 + 1".into(),
        "SELECT -9223372036854775807 - 2".into(),
        "SELECT 9223372036854775807 * 9223372036854775807".into(),
        "SELECT (-9223372036854775808)::BIGINT / -1".into(),
        "SELECT (-9223372036854775808)::BIGINT % -1".into(),
        "SELECT abs((-9223372036854775808)::BIGINT)".into(),
        "SELECT 2147483647::INT + 1::INT".into(),
        "SELECT (-2147483648)::INT / (-1)::INT".into(),
        "SELECT power(10, 400)".into(),
        "SELECT power(-1, 0.5)".into(),
        "SELECT exp(100000)".into(),
        "SELECT ln(0)".into(),
        "SELECT sqrt(-1)".into(),
        "SELECT 1 << 64".into(),
        "SELECT 1 >> -1".into(),
        "SELECT round(1.5, 2147483647)".into(),
        "SELECT round(1.5, -2147483648)".into(),
        "SELECT 99999999999999999999999999999999999999::DECIMAL(38,0) + 1".into(),
        "SELECT 99999999999999999999999999999999999999::DECIMAL(38,0) * 10".into(),
        "SELECT CAST(1e308 AS BIGINT)".into(),
        "SELECT CAST('NaN' AS DOUBLE)::BIGINT".into(),
        "SELECT CAST(9223372036854775807 AS INT)".into(),
        "SELECT sum(x) FROM (VALUES (9223372036854775807), (9223372036854775807)) t(x)".into(),
        "SELECT avg(x) FROM (VALUES (9223372036854775807), (9223372036854775807)) t(x)".into(),
        "SELECT date '9999-12-31' + 1".into(),
        "SELECT date '0001-01-01' - 1".into(),
        "SELECT date '2020-01-01' + interval '2147483647 days'".into(),
        "SELECT date '2020-01-01' + interval '2147483647 months'".into(),
        "SELECT date '2020-01-01' + interval '1000000000 years'".into(),
        "SELECT timestamp '2020-01-01 00:00:00' + interval '9223372036854775807 microseconds'"
            .into(),
        "SELECT timestamp '294276-12-31 23:59:59' + interval '1 day'".into(),
        "SELECT date_trunc('year', timestamp '294276-12-31 23:59:59')".into(),
        "SELECT extract(epoch FROM timestamp '294276-12-31 23:59:59')".into(),
        "SELECT date_diff('microsecond', timestamp '0001-01-01 00:00:00', timestamp '294276-12-31 00:00:00')".into(),
        "SELECT date_part('year', date '2020-01-01' + 2147483647)".into(),
        "SELECT interval '2147483647 days' * 2147483647".into(),
        "SELECT interval '1 day' / 0".into(),
        "SELECT 1 / 0".into(),
        "SELECT 1 % 0".into(),
        "SELECT 1.0 / 0.0".into(),
        "SELECT substring('abc', 2147483647, 2147483647)".into(),
        "SELECT substring('abc', -2147483648, 2147483647)".into(),
        "SELECT left('abc', -9223372036854775808)".into(),
        "SELECT repeat('abc', -1)".into(),
        "SELECT '{1,2}'::INT[][9223372036854775807]".into(),
        "SELECT generate_series(9223372036854775800, 9223372036854775807, 5)".into(),
        "SELECT generate_series(1, 10, 0)".into(),
        "SELECT range(-9223372036854775808, 9223372036854775807, 9223372036854775807)".into(),
        "SELECT regexp_replace(repeat('a', 100000), '(a*)*b', 'x')".into(),
        "SELECT repeat('a', 100000) ~ '(a|aa)*c'".into(),
        "SELECT 'x' LIKE repeat('%', 100000)".into(),
        format!("SELECT '{}' LIKE '{}b'", "a".repeat(10_000), "%a".repeat(5_000)),
        format!(
            "SELECT CASE {} END",
            (0..20_000).map(|i| format!("WHEN {i} = 1 THEN {i}")).collect::<Vec<_>>().join(" ")
        ),
        format!(
            "INSERT INTO fuzz_scratch VALUES {}",
            (0..100_000).map(|i| format!("({i})")).collect::<Vec<_>>().join(",")
        ),
        "SELECT * FROM read_parquet('/nonexistent/*.parquet')".into(),
        "SELECT * FROM read_csv('/etc/hostname')".into(),
        "SELECT * FROM read_parquet('/etc/hostname')".into(),
    ];
    out.push(format!("SELECT {}", vec!["1"; 20_000].join(", ")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_render_back_to_the_text() {
        let sql = "SELECT a, 'it''s' FROM t WHERE x >= 1.5 -- c";
        assert_eq!(render(&tokenize(sql)).replace("  ", " "), sql);
    }

    #[test]
    fn the_same_seed_gives_the_same_statements() {
        let corpus = vec!["SELECT 1 + 2 FROM t WHERE 'a' = s".to_string()];
        let mut a = Fuzzer::new(7, corpus.clone());
        let mut b = Fuzzer::new(7, corpus);
        for _ in 0..100 {
            assert_eq!(a.next_statement(), b.next_statement());
        }
    }
}
