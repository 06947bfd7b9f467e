//! What a session turns off in the optimizer: DuckDB's `SET disabled_optimizers = 'a,b'`, by
//! DuckDB's names. Three name passes Pondra has: `join_order` (the joins of a block are made in
//! the order written, not the cheapest found), `build_side_probe_side` (each join builds its
//! right input and streams its left, as written) and `top_n` (a sort under a LIMIT sorts every
//! row). DuckDB's other optimizers have no pass here: turning one off changes nothing, since
//! nothing of it runs, and is accepted so that scripts written for DuckDB run. Any other name
//! is an error, as in DuckDB.

use std::collections::BTreeSet;

use crate::{Result, bind_err};

/// The optimizers of DuckDB (`duckdb_optimizers()`), which `disabled_optimizers` may name.
const DUCKDB_OPTIMIZERS: &[&str] = &[
    "expression_rewriter",
    "filter_pullup",
    "filter_pushdown",
    "empty_result_pullup",
    "cte_filter_pusher",
    "regex_range",
    "in_clause",
    "join_order",
    "deliminator",
    "unnest_rewriter",
    "unused_columns",
    "statistics_propagation",
    "common_subexpressions",
    "common_aggregate",
    "column_lifetime",
    "limit_pushdown",
    "row_group_pruner",
    "top_n",
    "top_n_window_elimination",
    "build_side_probe_side",
    "compressed_materialization",
    "duplicate_groups",
    "reorder_filter",
    "sampling_pushdown",
    "join_filter_pushdown",
    "extension",
    "materialized_cte",
    "aggregate_function_rewriter",
    "late_materialization",
    "cte_inlining",
    "common_subplan",
    "join_elimination",
    "window_self_join",
    "projection_pullup",
    "outer_join_simplification",
    "window_rewriter",
    "partitioned_execution",
    "partial_aggregate_pushdown",
    "remote_pushdown",
    "grouping_sets",
    "type_pushdown",
    "scalar_fn_pushdown",
    "distinct_aggregate_rewrite",
    "aggregate_reuse",
    "projection_placement",
    "redundant_order_keys",
    "self_join_aggregate",
];

/// The optimizers a session has turned off; none by default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OptimizerSettings {
    disabled: BTreeSet<&'static str>,
}

impl OptimizerSettings {
    /// The settings `disabled_optimizers = text` asks for: names separated by commas.
    pub fn disabling(text: &str) -> Result<OptimizerSettings> {
        let mut disabled = BTreeSet::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let lower = name.to_ascii_lowercase();
            let Some(known) = DUCKDB_OPTIMIZERS.iter().find(|known| **known == lower) else {
                return Err(bind_err!(
                    "optimizer \"{name}\" does not exist (see DuckDB's duckdb_optimizers())"
                ));
            };
            disabled.insert(*known);
        }
        Ok(OptimizerSettings { disabled })
    }

    /// The names turned off, as `SHOW disabled_optimizers` gives them.
    pub fn text(&self) -> String {
        self.disabled.iter().copied().collect::<Vec<_>>().join(",")
    }

    /// Whether the optimizer `name` (one of DuckDB's names) is turned off.
    pub fn is_disabled(&self, name: &str) -> bool {
        self.disabled.contains(name)
    }

    /// Whether join blocks take the cheapest order found (else the order written).
    pub fn orders_joins(&self) -> bool {
        !self.is_disabled("join_order")
    }

    /// Whether joins build their smaller input (else the right one, as written).
    pub fn chooses_build_sides(&self) -> bool {
        !self.is_disabled("build_side_probe_side")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_duckdbs_and_unknown_ones_are_refused() {
        let settings = OptimizerSettings::disabling(" join_order, TOP_N ,").unwrap();
        assert_eq!(settings.text(), "join_order,top_n");
        assert!(!settings.orders_joins());
        assert!(settings.chooses_build_sides());
        assert_eq!(
            OptimizerSettings::disabling("").unwrap(),
            OptimizerSettings::default()
        );
        let error = OptimizerSettings::disabling("join_order,no_such_pass").unwrap_err();
        assert!(error.to_string().contains("no_such_pass"), "{error}");
    }
}
