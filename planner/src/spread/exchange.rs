//! Where a cut exchanges rows between its parts (ADR 0076): a hash join whose other input
//! reads a table large next to the sliced one gets that table sliced too and both inputs
//! exchanged on their join keys; an aggregation with many groups is split into a partial one
//! per part, exchanged on its groups, and a final one per part. Either way each part then
//! holds a disjoint share of the node's rows, and the region of the cut goes on above it.
//!
//! Every node taking part decides alike: from the plan and the sizes in the snapshot of the
//! coordinator's commit, which they all read.

use arrow::datatypes::DataType;
use pondra_catalog::Snapshot;

use crate::expr::{Expr, JoinKind};
use crate::physical::PhysicalPlan;

use super::cost::{estimated_rows, group_estimate, table_rows};
use super::cut::{node_at, node_at_mut, placeholder, row_wise, scans, slice_scan};
use super::partial;

/// An aggregation whose groups number at least this share of the sliced table's rows is merged
/// by every part for its share of the groups rather than by the coordinator for all: an eighth.
const EXCHANGE_SHARE: u64 = 8;

/// A join's other input is exchanged when it keeps at least this share of the rows the
/// sliced input keeps: a half.
const JOIN_EXCHANGE_SHARE: f64 = 2.0;

/// What a cut weighs an exchange by.
pub(super) struct Sizes<'s> {
    pub(super) snapshot: &'s Snapshot,
    /// The rows of the table the cut sliced first.
    pub(super) sliced_rows: u64,
    pub(super) parts: usize,
}

/// Exchanges rows at `node`, the parent of the cut's region through its input `child`, when
/// the sizes say so: true when it did, and `node`'s rows are a disjoint share per part.
pub(super) fn exchange_at(node: &mut PhysicalPlan, child: usize, sizes: &Sizes) -> bool {
    if sizes.sliced_rows == 0 {
        return false;
    }
    match node {
        PhysicalPlan::HashJoin { .. } => exchange_join(node, child, sizes),
        PhysicalPlan::HashAggregate { .. } => exchange_aggregate(node, sizes),
        _ => false,
    }
}

fn exchange_join(join: &mut PhysicalPlan, child: usize, sizes: &Sizes) -> bool {
    let PhysicalPlan::HashJoin {
        left,
        right,
        kind,
        left_keys,
        right_keys,
        ..
    } = join
    else {
        return false;
    };
    // Rows of equal keys meet on one part, so every kind whose answer for a key needs only
    // that key's rows; not the null-aware ones, whose one NULL anywhere changes every row.
    let divisible = matches!(
        kind,
        JoinKind::Inner
            | JoinKind::Left
            | JoinKind::Right
            | JoinKind::Full
            | JoinKind::Semi
            | JoinKind::Anti
            | JoinKind::RightSemi
            | JoinKind::RightAnti
    );
    let hashed_alike = left_keys
        .iter()
        .zip(right_keys.iter())
        .all(|(l, r)| hash_alike(&l.data_type(), &r.data_type()));
    if !divisible || left_keys.is_empty() || !hashed_alike {
        return false;
    }
    let (this, other) = match child {
        0 => (left.as_ref(), right.as_mut()),
        _ => (right.as_ref(), left.as_mut()),
    };
    let Some(path) = largest_sliceable(other, sizes.snapshot) else {
        return false;
    };
    // Moving a row costs more than building it into a hash table: the other input is
    // exchanged rather than read whole by every part only when it keeps about as many rows as
    // this one (and its reading divides too); a selective other side also filters this one's
    // scan by its keys, which an exchange below the join would lose.
    let this_rows = estimated_rows(this, sizes.snapshot, 1.0);
    let other_rows = estimated_rows(other, sizes.snapshot, 1.0);
    let rows = table_rows(node_at(other, &path), sizes.snapshot);
    if rows == 0 || other_rows * JOIN_EXCHANGE_SHARE < this_rows {
        return false;
    }
    slice_scan(node_at_mut(other, &path), sizes.parts);
    wrap_in_exchange(left, left_keys.clone(), sizes.parts);
    wrap_in_exchange(right, right_keys.clone(), sizes.parts);
    true
}

/// Whether two key types hash to the same value for equal keys, as exchanges hash them (every
/// integer as a 64-bit one, every string as UTF-8); floats never, as -0 equals 0.
fn hash_alike(left: &DataType, right: &DataType) -> bool {
    let integer = |t: &DataType| t.is_integer();
    let text =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    if left.is_floating() || right.is_floating() {
        return false;
    }
    left == right || (integer(left) && integer(right)) || (text(left) && text(right))
}

/// The path in `node` to the scan of the largest lake table its rows come from row by row
/// (the first of equals), not sliced yet.
fn largest_sliceable(node: &PhysicalPlan, snapshot: &Snapshot) -> Option<Vec<usize>> {
    let mut found: Vec<Vec<usize>> = Vec::new();
    scans(node, &mut Vec::new(), &mut |path| found.push(path.to_vec()));
    let row_wise_path = |path: &[usize]| {
        (0..path.len()).all(|depth| row_wise(node_at(node, &path[..depth]), path[depth]))
    };
    let unsliced = |path: &[usize]| {
        matches!(
            node_at(node, path),
            PhysicalPlan::TableScan { slice: None, .. }
        )
    };
    let mut best: Option<(u64, Vec<usize>)> = None;
    for path in found {
        if !unsliced(&path) || !row_wise_path(&path) {
            continue;
        }
        let rows = table_rows(node_at(node, &path), snapshot);
        if best.as_ref().is_none_or(|(most, _)| rows > *most) {
            best = Some((rows, path));
        }
    }
    best.map(|(_, path)| path)
}

fn exchange_aggregate(node: &mut PhysicalPlan, sizes: &Sizes) -> bool {
    let PhysicalPlan::HashAggregate { input, group, .. } = &*node else {
        return false;
    };
    let hashable = group.iter().all(|key| !key.data_type().is_floating());
    if group.is_empty() || !hashable {
        return false;
    }
    let Some(groups) = group_estimate(input, group, sizes.snapshot) else {
        return false;
    };
    if groups < 1.0 || (groups as u64).saturating_mul(EXCHANGE_SHARE) < sizes.sliced_rows {
        return false;
    }
    if !partial::split_aggregate(node) {
        return false;
    }
    // The final aggregate (under the projection an average divides in) over the partial one.
    let mut final_aggregate = node;
    while let PhysicalPlan::Projection { input, .. } = final_aggregate {
        final_aggregate = input;
    }
    let PhysicalPlan::HashAggregate { input, group, .. } = final_aggregate else {
        unreachable!("a split aggregate ends in its final aggregate");
    };
    wrap_in_exchange(input, group.clone(), sizes.parts);
    true
}

/// Puts an Exchange on `keys` over `input`; the cut numbers the fragment's exchanges.
fn wrap_in_exchange(input: &mut Box<PhysicalPlan>, keys: Vec<Expr>, parts: usize) {
    let rows = std::mem::replace(input.as_mut(), placeholder());
    **input = PhysicalPlan::Exchange {
        input: Box::new(rows),
        keys,
        parts,
        id: 0,
    };
}

/// Numbers the exchanges of `fragment` in plan order, as every node numbers them.
pub(super) fn number_exchanges(fragment: &mut PhysicalPlan) {
    use crate::tree::TreeNode;
    let mut next = 0;
    let Ok(()) = fragment.transform_down(&mut |node| {
        if let PhysicalPlan::Exchange { id, .. } = node {
            *id = next;
            next += 1;
        }
        Ok::<_, std::convert::Infallible>(())
    });
}
