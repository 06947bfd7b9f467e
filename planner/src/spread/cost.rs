//! Whether a cut plan is worth spreading under `spread = 'auto'` (ADR 0076): the time the
//! other nodes' cores save on the sliced scan, against the time moving the gathered rows takes
//! at the throughput measured between the nodes, and a round trip per node.

use pondra_catalog::Snapshot;

use crate::cardinality::{Estimate, estimate, selectivity};
use crate::expr::{Expr, JoinKind};
use crate::logical::LogicalPlan;
use crate::physical::PhysicalPlan;

use super::SpreadContext;
use super::cut::Cut;

/// What an exchange moves per second until one has been measured.
pub const DEFAULT_NETWORK_BYTES_PER_SECOND: f64 = 100e6;

/// The rows a core scans, filters, joins and aggregates per second in a typical fragment.
const ROWS_PER_CORE_SECOND: f64 = 20e6;

/// Planning the statement and starting a part on another node.
const ROUND_TRIP_SECONDS: f64 = 0.005;

/// A gathered value's bytes, on average.
const BYTES_PER_VALUE: f64 = 8.0;

/// Ok when spreading `cut` saves more time than it costs; else why it stays local.
pub(super) fn worth_spreading(
    cut: &Cut,
    snapshot: &Snapshot,
    context: &SpreadContext,
) -> Result<(), String> {
    let parts = context.nodes.len() as f64;
    let scan = cut.sliced_scan();
    let table = scan_estimate(scan, snapshot);
    let kept = match scan.scan_filter() {
        Some(filter) => table.rows * selectivity(filter, &table),
        None => table.rows,
    };
    let local = kept / (ROWS_PER_CORE_SECOND * context.cores.max(1) as f64);
    let saved = local * (1.0 - 1.0 / parts);
    let fragment = cut.fragment();
    let gathered = gathered_rows(fragment, kept, snapshot) * parts;
    let moved = gathered * fragment.schema().fields().len() as f64 * BYTES_PER_VALUE;
    let network = context.network_bytes_per_second.max(1.0);
    let cost = moved / network + parts * ROUND_TRIP_SECONDS;
    match saved > cost {
        true => Ok(()),
        false => Err(format!(
            "spreading would save {saved:.3} s on ~{kept:.0} rows of {} and cost {cost:.3} s \
             moving ~{moved:.0} bytes",
            sliced_table_name(scan)
        )),
    }
}

fn sliced_table_name(scan: &PhysicalPlan) -> &str {
    match scan {
        PhysicalPlan::TableScan { table, .. } => &table.name,
        _ => "a table",
    }
}

/// The estimate of a table scan's table, over the scan's columns.
fn scan_estimate(scan: &PhysicalPlan, snapshot: &Snapshot) -> Estimate {
    let PhysicalPlan::TableScan { table, schema, .. } = scan else {
        unreachable!("the sliced scan is a table scan");
    };
    let logical = LogicalPlan::Scan {
        table: table.clone(),
        schema: schema.clone(),
    };
    estimate(&logical, snapshot)
}

/// The rows one part of `fragment` gives, when its sliced scan keeps `kept` rows in all.
fn gathered_rows(fragment: &PhysicalPlan, kept: f64, snapshot: &Snapshot) -> f64 {
    match fragment {
        PhysicalPlan::HashAggregate { input, group, .. } => {
            let groups = group
                .iter()
                .map(|key| distinct_of(input, key, snapshot).unwrap_or(kept))
                .fold(1.0, |product, distinct| product * distinct);
            groups.min(kept).max(1.0)
        }
        PhysicalPlan::Sort {
            fetch: Some(fetch), ..
        }
        | PhysicalPlan::Limit {
            fetch: Some(fetch), ..
        } => (*fetch as f64).min(kept),
        _ => kept,
    }
}

/// The distinct values of `key` over `plan`'s rows, when it is a column traced down to a
/// table's column.
fn distinct_of(plan: &PhysicalPlan, key: &Expr, snapshot: &Snapshot) -> Option<f64> {
    let Expr::Column { index, .. } = key else {
        return None;
    };
    let (scan, column) = trace_column(plan, *index)?;
    let table = scan_estimate(scan, snapshot);
    table.columns.get(column).map(|c| c.distinct)
}

/// The scan and its column that column `index` of `plan` passes on unchanged.
fn trace_column(plan: &PhysicalPlan, index: usize) -> Option<(&PhysicalPlan, usize)> {
    match plan {
        PhysicalPlan::TableScan { .. } => Some((plan, index)),
        PhysicalPlan::Filter { input, .. } => trace_column(input, index),
        PhysicalPlan::Projection { input, exprs, .. } => match exprs.get(index)? {
            Expr::Column { index, .. } => trace_column(input, *index),
            _ => None,
        },
        PhysicalPlan::HashJoin {
            left, right, kind, ..
        } => {
            let left_width = left.schema().fields().len();
            match kind {
                JoinKind::RightSemi | JoinKind::RightAnti => trace_column(right, index),
                _ if index < left_width => trace_column(left, index),
                JoinKind::Inner | JoinKind::Left | JoinKind::Right | JoinKind::Full => {
                    trace_column(right, index - left_width)
                }
                _ => None,
            }
        }
        _ => None,
    }
}
