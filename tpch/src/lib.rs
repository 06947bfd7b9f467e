//! TPC-H: the 22 queries with the standard validation parameters, data generation into a lake,
//! and the benchmark runner.

mod generate;
mod run;

pub use generate::{Progress, TABLES, expected_rows, generate, write_parquet_dir};
pub use run::{QueryTiming, explain_query, run_queries};

/// The text of query `n` (1 to 22), or `None` for any other number.
pub fn query(n: usize) -> Option<&'static str> {
    QUERIES.get(n.wrapping_sub(1)).copied()
}

const QUERIES: [&str; 22] = [
    include_str!("../queries/q1.sql"),
    include_str!("../queries/q2.sql"),
    include_str!("../queries/q3.sql"),
    include_str!("../queries/q4.sql"),
    include_str!("../queries/q5.sql"),
    include_str!("../queries/q6.sql"),
    include_str!("../queries/q7.sql"),
    include_str!("../queries/q8.sql"),
    include_str!("../queries/q9.sql"),
    include_str!("../queries/q10.sql"),
    include_str!("../queries/q11.sql"),
    include_str!("../queries/q12.sql"),
    include_str!("../queries/q13.sql"),
    include_str!("../queries/q14.sql"),
    include_str!("../queries/q15.sql"),
    include_str!("../queries/q16.sql"),
    include_str!("../queries/q17.sql"),
    include_str!("../queries/q18.sql"),
    include_str!("../queries/q19.sql"),
    include_str!("../queries/q20.sql"),
    include_str!("../queries/q21.sql"),
    include_str!("../queries/q22.sql"),
];

#[cfg(test)]
mod tests {
    #[test]
    fn has_all_22_queries() {
        assert!(super::query(0).is_none());
        assert!(super::query(23).is_none());
        for n in 1..=22 {
            assert!(super::query(n).unwrap().to_lowercase().contains("select"));
        }
    }
}
