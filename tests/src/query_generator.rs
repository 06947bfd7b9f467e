//! Seeded random queries for the DuckDB oracle: correlated subqueries whose rows an ORDER BY
//! with LIMIT / OFFSET cuts (in the select list, in WHERE, in a derived table, as LATERAL
//! joins), correlated aggregates, EXISTS / IN, and set-returning functions over an earlier
//! FROM item, over small tables with NULLs and repeated values. Every ORDER BY ends with a
//! unique key, so that each query has one answer; the outer queries vary in size, since a
//! subquery's limit must hold per outer row however many there are.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The tables the queries read: each statement creates or fills one, in both engines.
pub fn oracle_tables(seed: u64) -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut statements = vec![
        "CREATE TABLE t1 (id INT, g INT, v INT, s VARCHAR)".to_string(),
        "CREATE TABLE t2 (id INT, g INT, w INT, s VARCHAR)".to_string(),
        "CREATE TABLE t3 (id INT, lst INT[], lo INT, hi INT)".to_string(),
    ];
    for (table, count) in [("t1", 24), ("t2", 40)] {
        let rows: Vec<String> = (1..=count)
            .map(|id| {
                let g = number_or_null(&mut rng, 0..6);
                let v = number_or_null(&mut rng, -5..40);
                let s = word_or_null(&mut rng);
                format!("({id}, {g}, {v}, {s})")
            })
            .collect();
        statements.push(format!("INSERT INTO {table} VALUES {}", rows.join(", ")));
    }
    let rows: Vec<String> = (1..=8)
        .map(|id| {
            let length = rng.random_range(0..5);
            let items: Vec<String> = (0..length)
                .map(|_| number_or_null(&mut rng, 0..9))
                .collect();
            let list = match rng.random_range(0..6) {
                0 => "NULL".to_string(),
                _ => format!("[{}]::INT[]", items.join(", ")),
            };
            let lo = number_or_null(&mut rng, -2..4);
            let hi = number_or_null(&mut rng, -2..6);
            format!("({id}, {list}, {lo}, {hi})")
        })
        .collect();
    statements.push(format!("INSERT INTO t3 VALUES {}", rows.join(", ")));
    statements
}

/// A number of `range`, or one time in eight NULL.
fn number_or_null(rng: &mut StdRng, range: std::ops::Range<i32>) -> String {
    match rng.random_range(0..8) {
        0 => "NULL".to_string(),
        _ => rng.random_range(range).to_string(),
    }
}

/// One of a few words, or one time in eight NULL.
fn word_or_null(rng: &mut StdRng) -> String {
    match rng.random_range(0..8) {
        0 => "NULL".to_string(),
        _ => format!("'{}'", ["a", "b", "c", "d"][rng.random_range(0..4)]),
    }
}

/// The random queries, each one statement both engines run.
pub struct QueryGenerator {
    rng: StdRng,
}

impl QueryGenerator {
    pub fn new(seed: u64) -> QueryGenerator {
        QueryGenerator {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// The next query.
    pub fn next_query(&mut self) -> String {
        match self.rng.random_range(0..9) {
            0 | 1 => self.scalar_limited(),
            2 => self.scalar_aggregate(),
            3 | 4 => self.lateral_limited(),
            5 => self.filtered_by_subquery(),
            6 => self.limited_derived_table(),
            7 => self.table_function(),
            _ => self.nested_lateral(),
        }
    }

    /// Which rows of t1 a query starts from: all, a range of ids, or a group.
    fn outer_filter(&mut self) -> String {
        match self.rng.random_range(0..4) {
            0 => String::new(),
            1 => {
                let low = self.rng.random_range(1..20);
                let high = low + self.rng.random_range(0..8);
                format!(" WHERE t1.id BETWEEN {low} AND {high}")
            }
            2 => format!(" WHERE t1.g = {}", self.rng.random_range(0..6)),
            _ => format!(" WHERE t1.v > {}", self.rng.random_range(-5..30)),
        }
    }

    /// A condition tying a row of t2 to the outer row of t1.
    fn correlation(&mut self) -> String {
        match self.rng.random_range(0..5) {
            0 | 1 => "t2.g = t1.g".to_string(),
            2 => "t2.w > t1.v".to_string(),
            3 => format!(
                "t2.g = t1.g AND t2.w < t1.v + {}",
                self.rng.random_range(0..20)
            ),
            _ => "t2.s = t1.s OR t2.g = t1.g".to_string(),
        }
    }

    /// An ORDER BY over t2 that ends with its unique id, so that a limit cuts one way.
    fn order_by(&mut self) -> String {
        let mut keys = Vec::new();
        for column in ["t2.w", "t2.s", "t2.g"] {
            if self.rng.random_bool(0.5) {
                let direction = ["ASC", "DESC"][self.rng.random_range(0..2)];
                let nulls = ["NULLS FIRST", "NULLS LAST"][self.rng.random_range(0..2)];
                keys.push(format!("{column} {direction} {nulls}"));
            }
        }
        let direction = ["", " DESC"][self.rng.random_range(0..2)];
        keys.push(format!("t2.id{direction}"));
        keys.join(", ")
    }

    /// `LIMIT n` and perhaps `OFFSET k`.
    fn limit(&mut self, most: u32) -> String {
        let mut limit = format!(" LIMIT {}", self.rng.random_range(1..=most));
        if self.rng.random_bool(0.3) {
            limit.push_str(&format!(" OFFSET {}", self.rng.random_range(1..3)));
        }
        limit
    }

    fn scalar_limited(&mut self) -> String {
        let column = ["t2.id", "t2.w", "t2.s"][self.rng.random_range(0..3)];
        let (correlation, order, limit) = (self.correlation(), self.order_by(), self.limit(1));
        format!(
            "SELECT t1.id, (SELECT {column} FROM t2 WHERE {correlation} ORDER BY {order}{limit}) AS x FROM t1{}",
            self.outer_filter()
        )
    }

    fn scalar_aggregate(&mut self) -> String {
        let aggregate = [
            "count(*)",
            "sum(t2.w)",
            "min(t2.w)",
            "max(t2.s)",
            "count(t2.w)",
        ][self.rng.random_range(0..5)];
        let correlation = self.correlation();
        format!(
            "SELECT t1.id, (SELECT {aggregate} FROM t2 WHERE {correlation}) AS x FROM t1{}",
            self.outer_filter()
        )
    }

    fn lateral_limited(&mut self) -> String {
        let (correlation, order, limit) = (self.correlation(), self.order_by(), self.limit(3));
        let subquery =
            format!("SELECT t2.id AS i2, t2.w FROM t2 WHERE {correlation} ORDER BY {order}{limit}");
        let join = match self.rng.random_bool(0.5) {
            true => format!("CROSS JOIN LATERAL ({subquery}) x"),
            false => format!("LEFT JOIN LATERAL ({subquery}) x ON true"),
        };
        format!(
            "SELECT t1.id, x.i2, x.w FROM t1 {join}{}",
            self.outer_filter()
        )
    }

    fn filtered_by_subquery(&mut self) -> String {
        let correlation = self.correlation();
        let cut = match self.rng.random_bool(0.5) {
            true => {
                let order = self.order_by();
                format!(" ORDER BY {order}{}", self.limit(3))
            }
            false => String::new(),
        };
        let test = match self.rng.random_range(0..4) {
            0 => format!("EXISTS (SELECT 1 FROM t2 WHERE {correlation}{cut})"),
            1 => format!("NOT EXISTS (SELECT 1 FROM t2 WHERE {correlation}{cut})"),
            2 => format!("t1.v IN (SELECT t2.w FROM t2 WHERE {correlation}{cut})"),
            _ => format!("t1.s NOT IN (SELECT t2.s FROM t2 WHERE {correlation}{cut})"),
        };
        let extra = match self.outer_filter().strip_prefix(" WHERE ") {
            Some(filter) => format!(" AND {filter}"),
            None => String::new(),
        };
        format!("SELECT t1.id, t1.v FROM t1 WHERE {test}{extra}")
    }

    fn limited_derived_table(&mut self) -> String {
        let (correlation, order, limit) = (self.correlation(), self.order_by(), self.limit(4));
        let aggregate =
            ["max(d.w)", "min(d.w)", "count(*)", "sum(d.w)"][self.rng.random_range(0..4)];
        format!(
            "SELECT t1.id, (SELECT {aggregate} FROM (SELECT t2.w FROM t2 WHERE {correlation} ORDER BY {order}{limit}) d) AS x FROM t1{}",
            self.outer_filter()
        )
    }

    fn table_function(&mut self) -> String {
        let filter = match self.rng.random_bool(0.3) {
            true => format!(" WHERE t3.id <= {}", self.rng.random_range(1..9)),
            false => String::new(),
        };
        match self.rng.random_range(0..5) {
            0 => format!("SELECT t3.id, u.x FROM t3, unnest(t3.lst) AS u(x){filter}"),
            1 => format!(
                "SELECT t3.id, u.x, u.n FROM t3, unnest(t3.lst) WITH ORDINALITY AS u(x, n){filter}"
            ),
            2 => format!(
                "SELECT t3.id, g.x FROM t3 CROSS JOIN LATERAL generate_series(t3.lo, t3.hi) AS g(x){filter}"
            ),
            3 => format!(
                "SELECT t3.id, g.x FROM t3 LEFT JOIN LATERAL generate_series(t3.lo, t3.hi) AS g(x) ON true{filter}"
            ),
            _ => format!("SELECT t3.id, r.x FROM t3, range(t3.lo, t3.hi) AS r(x){filter}"),
        }
    }

    /// A lateral subquery whose own select list holds a correlated, limited subquery.
    fn nested_lateral(&mut self) -> String {
        let (order, limit) = (self.order_by(), self.limit(1));
        let bound = self.rng.random_range(-5..30);
        format!(
            "SELECT t1.id, x.i2, x.best FROM t1 CROSS JOIN LATERAL (SELECT t2.id AS i2, \
             (SELECT t2.w FROM t2 WHERE t2.g = t1.g AND t2.w > {bound} ORDER BY {order}{limit}) AS best \
             FROM t2 WHERE t2.g = t1.g ORDER BY t2.id LIMIT 2) x{}",
            self.outer_filter()
        )
    }
}
