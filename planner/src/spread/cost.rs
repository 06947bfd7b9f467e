//! Whether a cut plan is worth spreading under `spread = 'auto'` (ADR 0076): the time the
//! other nodes' cores save on the sliced scan, against the time moving the gathered rows takes
//! at the throughput measured between the nodes, and a round trip per node.

use pondra_catalog::Snapshot;

use crate::cardinality::{Estimate, estimate, selectivity};
use crate::expr::{Expr, JoinKind};
use crate::logical::LogicalPlan;
use crate::physical::PhysicalPlan;
use crate::tree::TreeNode;

use super::SpreadContext;
use super::cut::Cut;

/// What an exchange moves per second until one has been measured.
pub const DEFAULT_NETWORK_BYTES_PER_SECOND: f64 = 100e6;

/// The rows a core scans, filters, joins and aggregates per second in a typical fragment.
const ROWS_PER_CORE_SECOND: f64 = 30e6;

/// A filter keeping less than this share of a table is taken to skip most of its row groups,
/// reading this many times the rows it keeps.
const NARROW_FILTER: f64 = 0.01;
const NARROW_READ_FACTOR: f64 = 100.0;

/// An exchanged row costs its sender and receiver (partitioned, encoded, decoded) about as
/// much as this many rows of a scan.
const EXCHANGE_ROW_WORK: f64 = 1.0;

/// Planning the statement and starting a part on another node.
const ROUND_TRIP_SECONDS: f64 = 0.01;

/// A gathered value's bytes, on average.
const BYTES_PER_VALUE: f64 = 8.0;

/// What spreading a cut saves and moves.
struct Weighed {
    /// The rows its sliced scan reads, in all.
    read: f64,
    /// The scan time the other nodes take off the coordinator, on `cores` cores each.
    saved: f64,
    /// The bytes its Gather and its exchanges move.
    moved: f64,
    /// The time exchanging rows takes each part's cores.
    exchanging: f64,
}

fn weigh(cut: &Cut, snapshot: &Snapshot, parts: usize, cores: usize) -> Weighed {
    let parts = parts as f64;
    let fragment = cut.fragment();
    let (kept, _) = scan_rows(cut.sliced_scan(), snapshot);
    // Every sliced scan's reading is divided between the parts; the other scans are read
    // whole by every part.
    let mut read = 0.0;
    let mut exchanged = 0.0;
    let mut exchanged_rows = 0.0;
    fragment.visit(&mut |node| match node {
        PhysicalPlan::TableScan { slice: Some(_), .. } => read += scan_rows(node, snapshot).1,
        PhysicalPlan::Exchange { input, .. } => {
            let width = carried_width(&input.schema());
            let rows = estimated_rows(input, snapshot, parts);
            exchanged_rows += rows;
            // A part keeps its own share; the rest crosses the network.
            exchanged += rows * width * BYTES_PER_VALUE * (1.0 - 1.0 / parts);
        }
        _ => {}
    });
    let core_rate = ROWS_PER_CORE_SECOND * cores.max(1) as f64;
    let local = read / core_rate;
    let gathered = gathered_rows(fragment, kept, parts, snapshot);
    Weighed {
        read,
        saved: local * (1.0 - 1.0 / parts),
        moved: gathered * carried_width(&fragment.schema()) * BYTES_PER_VALUE + exchanged,
        exchanging: exchanged_rows * EXCHANGE_ROW_WORK / parts / core_rate,
    }
}

/// The columns of `schema` that carry values: a scan's unread columns are NULLs of no bytes.
fn carried_width(schema: &arrow::datatypes::Schema) -> f64 {
    let carried = schema
        .fields()
        .iter()
        .filter(|f| f.data_type() != &arrow::datatypes::DataType::Null)
        .count();
    carried.max(1) as f64
}

/// The rows a table scan keeps after its filter, and the rows it reads to keep them: its
/// whole table unless the filter is narrow enough for its files' and row groups' statistics
/// to skip most of them (a point or a short range).
pub(super) fn scan_rows(scan: &PhysicalPlan, snapshot: &Snapshot) -> (f64, f64) {
    let table = scan_estimate(scan, snapshot);
    let kept_share = match scan.scan_filter() {
        Some(filter) => selectivity(filter, &table),
        None => 1.0,
    };
    let kept = table.rows * kept_share;
    let read = match kept_share < NARROW_FILTER {
        true => (kept * NARROW_READ_FACTOR).min(table.rows),
        false => table.rows,
    };
    (kept, read)
}

/// The rows `plan` gives over all parts, roughly: what join ordering expected of a join,
/// the groups of an aggregation (per part, for a partial one under an exchange), what a scan
/// keeps.
pub(super) fn estimated_rows(plan: &PhysicalPlan, snapshot: &Snapshot, parts: f64) -> f64 {
    match plan {
        PhysicalPlan::TableScan { .. } => scan_rows(plan, snapshot).0,
        PhysicalPlan::HashJoin {
            estimate: Some(estimate),
            ..
        } => estimate.rows,
        PhysicalPlan::HashAggregate { input, group, .. } => {
            let rows = estimated_rows(input, snapshot, parts);
            let groups = group_estimate(input, group, snapshot).unwrap_or(rows);
            (groups * parts).min(rows).max(1.0)
        }
        other => other
            .children()
            .into_iter()
            .map(|child| estimated_rows(child, snapshot, parts))
            .fold(0.0, f64::max),
    }
}

/// The rows of the table a scan reads, in the snapshot.
pub(super) fn table_rows(scan: &PhysicalPlan, snapshot: &Snapshot) -> u64 {
    match scan {
        PhysicalPlan::TableScan { table, .. } => snapshot.row_count(table.id),
        _ => 0,
    }
}

/// The time spreading `cut` saves net of what it costs; when it does not pay, why, and the
/// (negative) net.
fn net_saving(
    cut: &Cut,
    snapshot: &Snapshot,
    context: &SpreadContext,
) -> Result<f64, (String, f64)> {
    if cut.unshares {
        let reason = "its aggregation is computed once for two parts of the query";
        return Err((reason.into(), f64::NEG_INFINITY));
    }
    let parts = context.nodes.len();
    let Weighed {
        read,
        saved,
        moved,
        exchanging,
    } = weigh(cut, snapshot, parts, context.cores);
    let network = context.network_bytes_per_second.max(1.0);
    let cost = moved / network + exchanging + parts as f64 * ROUND_TRIP_SECONDS;
    match saved > cost {
        true => Ok(saved - cost),
        false => Err((
            format!(
                "spreading would save {saved:.3} s on ~{read:.0} rows of {} and cost {cost:.3} s \
                 moving ~{moved:.0} bytes",
                sliced_table_name(cut.sliced_scan())
            ),
            saved - cost,
        )),
    }
}

/// Of the cut that divides the most work without exchanging and the one that does with, the
/// one that saves the more time net of moving rows. Unless `even_at_a_loss`, why neither pays
/// when neither does.
pub(super) fn cheapest(
    cuts: Vec<super::CutChoice>,
    snapshot: &Snapshot,
    context: &SpreadContext,
    even_at_a_loss: bool,
) -> Result<super::CutChoice, String> {
    let (exchanging, plain): (Vec<_>, Vec<_>) = cuts.into_iter().partition(|c| c.2);
    let plain = super::most_divided(plain, snapshot);
    let plain_net = net_saving(&plain.0, snapshot, context);
    let Some(exchanging) =
        (!exchanging.is_empty()).then(|| super::most_divided(exchanging, snapshot))
    else {
        return match plain_net {
            Err(_) if even_at_a_loss => Ok(plain),
            Err((reason, _)) => Err(reason),
            Ok(_) => Ok(plain),
        };
    };
    let exchanging_net = net_saving(&exchanging.0, snapshot, context);
    let better = |net: &Result<f64, (String, f64)>| match net {
        Ok(net) => *net,
        Err((_, net)) => *net,
    };
    match (plain_net, exchanging_net) {
        (plain_net, exchanging_net) if better(&exchanging_net) > better(&plain_net) => {
            match exchanging_net {
                Ok(_) => Ok(exchanging),
                Err(_) if even_at_a_loss => Ok(exchanging),
                Err((reason, _)) => Err(reason),
            }
        }
        (Ok(_), _) => Ok(plain),
        (Err(_), _) if even_at_a_loss => Ok(plain),
        (Err((reason, _)), _) => Err(reason),
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

/// The rows `parts` parts of `fragment` give in all, when its sliced scan keeps `kept` rows.
fn gathered_rows(fragment: &PhysicalPlan, kept: f64, parts: f64, snapshot: &Snapshot) -> f64 {
    match fragment {
        PhysicalPlan::HashAggregate { input, group, .. } => {
            let rows = region_rows(input, kept);
            let groups = group
                .iter()
                .map(|key| distinct_of(input, key, snapshot).unwrap_or(rows))
                .fold(1.0, |product, distinct| product * distinct);
            groups.min(rows).max(1.0) * parts
        }
        PhysicalPlan::Sort {
            fetch: Some(fetch), ..
        }
        | PhysicalPlan::Limit {
            fetch: Some(fetch), ..
        } => (*fetch as f64).min(kept) * parts,
        region => region_rows(region, kept),
    }
}

/// The rows a fragment's row-wise region gives in all: what join ordering expected of its
/// topmost join, or the rows its sliced scan keeps when it joins nothing.
fn region_rows(region: &PhysicalPlan, kept: f64) -> f64 {
    match region {
        PhysicalPlan::HashJoin {
            estimate: Some(estimate),
            ..
        } => estimate.rows,
        PhysicalPlan::Filter { input, .. }
        | PhysicalPlan::Projection { input, .. }
        | PhysicalPlan::Exchange { input, .. }
        | PhysicalPlan::Unnest { input, .. } => region_rows(input, kept),
        PhysicalPlan::HashJoin { left, right, .. } => {
            region_rows(left, kept).max(region_rows(right, kept))
        }
        _ => kept,
    }
}

/// The groups an aggregation of `input` by `group` makes, when each key traces to a table's
/// column: the product of their distinct values.
pub(super) fn group_estimate(
    input: &PhysicalPlan,
    group: &[Expr],
    snapshot: &Snapshot,
) -> Option<f64> {
    group.iter().try_fold(1.0, |product, key| {
        Some(product * distinct_of(input, key, snapshot)?)
    })
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
        PhysicalPlan::Filter { input, .. } | PhysicalPlan::Exchange { input, .. } => {
            trace_column(input, index)
        }
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
