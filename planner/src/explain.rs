//! How physical plans print: each node on one line (EXPLAIN (VERBOSE), EXPLAIN ANALYZE),
//! with what physical planning decided for it (a scan's filter, a top-N's rows, a shared
//! aggregation's number).

use std::fmt::{self, Write};

use crate::expr::{Expr, SortKey};
use crate::physical::PhysicalPlan;
use crate::repeated_scans::RepeatedScan;
use crate::tree::TreeNode;

impl fmt::Display for PhysicalPlan {
    /// The plan as a tree, one node per line, inputs indented under it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.render(&|_| String::new());
        write!(f, "{}", text.trim_end_matches('\n'))
    }
}

/// A sort as EXPLAIN shows it, logical or physical: its keys, and the rows it keeps when a
/// LIMIT cuts it short (top-N).
pub(crate) fn sort_text(keys: &[SortKey], fetch: Option<usize>) -> String {
    let keys: Vec<String> = keys
        .iter()
        .map(|k| format!("{}{}", k.expr, if k.descending { " DESC" } else { "" }))
        .collect();
    match fetch {
        Some(rows) => format!("TopN {rows}: {}", keys.join(", ")),
        None => format!("Sort: {}", keys.join(", ")),
    }
}

impl PhysicalPlan {
    /// The plan as a tree, one line per node (`describe`, then what `annotate` adds for it),
    /// each node's inputs indented under it.
    pub fn render(&self, annotate: &dyn Fn(&PhysicalPlan) -> String) -> String {
        let mut out = String::new();
        self.render_into(0, annotate, &mut out);
        out
    }

    fn render_into(
        &self,
        depth: usize,
        annotate: &dyn Fn(&PhysicalPlan) -> String,
        out: &mut String,
    ) {
        let pad = "  ".repeat(depth);
        let _ = writeln!(out, "{pad}{}{}", self.describe(), annotate(self));
        for child in self.children() {
            child.render_into(depth + 1, annotate, out);
        }
    }
}

fn list<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A scan's filter as EXPLAIN ANALYZE shows it.
fn filter_text(filter: &Option<Expr>) -> String {
    filter
        .as_ref()
        .map_or(String::new(), |filter| format!(" filter={filter}"))
}

/// What a scan shares with the query's other scans of its table, as EXPLAIN shows it: the
/// group of scans whose rows the first to run keeps, and the unfiltered group whose kept rows
/// it may filter again.
fn repeat_text(repeat: Option<&RepeatedScan>) -> String {
    let Some(repeat) = repeat else {
        return String::new();
    };
    let mut text = String::new();
    if repeat.keep.is_some() {
        let _ = write!(text, " scan_group={}", repeat.group);
    }
    if let Some(unfiltered) = repeat.unfiltered {
        let _ = write!(text, " refilters={unfiltered}");
    }
    text
}

impl PhysicalPlan {
    /// The node as one line of EXPLAIN: its operator and what it holds, not its inputs.
    pub fn describe(&self) -> String {
        match self {
            PhysicalPlan::TableScan {
                table,
                filter,
                slice,
                nearest,
                ..
            } => {
                let repeat = repeat_text(self.scan_repeat());
                let slice = match slice {
                    Some(slice) => format!(" sliced={}/{}", slice.part, slice.parts),
                    None => String::new(),
                };
                let nearest = match nearest {
                    Some(nearest) => format!(" {nearest}"),
                    None => String::new(),
                };
                format!(
                    "TableScan: {}{}{repeat}{slice}{nearest}",
                    table.name,
                    filter_text(filter)
                )
            }
            PhysicalPlan::Gather { parts, nodes, .. } => match nodes.is_empty() {
                true => format!("Gather: {parts} parts"),
                false => format!("Gather: {parts} parts on {}", nodes.join(", ")),
            },
            PhysicalPlan::Exchange {
                keys, parts, id, ..
            } => format!("Exchange {id}: {parts} parts by {}", list(keys)),
            PhysicalPlan::Input { .. } => "Input".into(),
            PhysicalPlan::ParquetScan { table, filter, .. } => format!(
                "ParquetScan: {} ({} files){}{}",
                table.name,
                table.files.len(),
                filter_text(filter),
                repeat_text(self.scan_repeat())
            ),
            PhysicalPlan::Values { rows, .. } => format!("Values: {} rows", rows.len()),
            PhysicalPlan::WorkingTable { id, rows, .. } => format!("WorkingTable {id}: {rows:?}"),
            PhysicalPlan::ChangeRecords {
                table, from, to, ..
            } => format!("ChangeRecords: {} {from}..={to}", table.name),
            PhysicalPlan::Window { exprs, .. } => format!("Window: {} functions", exprs.len()),
            PhysicalPlan::Filter { predicate, .. } => format!("Filter: {predicate}"),
            PhysicalPlan::Unnest { array, .. } => format!("Unnest: {array}"),
            PhysicalPlan::Projection { exprs, .. } => format!("Projection: {}", list(exprs)),
            PhysicalPlan::HashAggregate {
                group,
                aggregates,
                shared,
                ..
            } => {
                let shared = shared.map_or(String::new(), |number| format!(" shared={number}"));
                format!(
                    "HashAggregate: group=[{}] aggregates=[{}]{shared}",
                    list(group),
                    list(aggregates)
                )
            }
            PhysicalPlan::Sort { keys, fetch, .. } => sort_text(keys, *fetch),
            PhysicalPlan::Limit { skip, fetch, .. } => {
                format!("Limit: skip={skip} fetch={fetch:?}")
            }
            PhysicalPlan::Union { inputs, .. } => format!("Union: {} inputs", inputs.len()),
            PhysicalPlan::HashJoin {
                kind,
                left_keys,
                right_keys,
                filter,
                estimate,
                ..
            } => {
                let keys: Vec<String> = left_keys
                    .iter()
                    .zip(right_keys)
                    .map(|(l, r)| format!("{l} = {r}"))
                    .collect();
                let mut text = format!("HashJoin {kind:?}: on=[{}]", keys.join(", "));
                if let Some(filter) = filter {
                    let _ = write!(text, " filter={filter}");
                }
                if let Some(estimate) = estimate {
                    let _ = write!(text, " {estimate}");
                }
                text
            }
            PhysicalPlan::RecursiveCte {
                id, distinct, key, ..
            } => {
                let union = if *distinct { "UNION" } else { "UNION ALL" };
                let key = key
                    .as_ref()
                    .map(|k| format!(" USING KEY {k:?}"))
                    .unwrap_or_default();
                format!("RecursiveCte {id}: {union}{key}")
            }
        }
    }
}
