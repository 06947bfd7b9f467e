//! Where a plan is cut for several nodes (ADR 0076): below the cut, the fragment every node
//! runs on its slice of one table the plan reads; above it, what the node that got the
//! query runs over the gathered rows.
//!
//! From the sliced scan the cut walks up while each operator is row-wise in the sliced input
//! (each output row comes from one input row of one slice): filters, projections, unnest, and
//! hash joins whose other input holds no slice. Above that region, a decomposable aggregate
//! is split into a partial one per slice and a final one; a top-N and a LIMIT are applied per
//! slice and again; anything else gathers the region's rows.

use pondra_catalog::Snapshot;

use crate::expr::JoinKind;
use crate::physical::{PhysicalPlan, Slice};
use crate::tree::TreeNode;

use super::{exchange, partial};

/// A plan cut for several nodes.
pub(super) struct Cut {
    /// The plan with the Gather in place.
    plan: PhysicalPlan,
    /// Where the Gather is: the child indexes from the root.
    gather_path: Vec<usize>,
    /// Whether an aggregate, top-N or LIMIT was split above the slice, so that the parts
    /// give fewer rows than they read; else the parts give the region's rows.
    pub(super) split: bool,
    /// Whether the split aggregation was one the query shares between two occurrences.
    pub(super) unshares: bool,
    /// Whether the fragment exchanges rows between its parts.
    pub(super) exchanged: bool,
}

impl Cut {
    fn gather(&self) -> &PhysicalPlan {
        node_at(&self.plan, &self.gather_path)
    }

    pub(super) fn fragment(&self) -> &PhysicalPlan {
        match self.gather() {
            PhysicalPlan::Gather { fragment, .. } => fragment,
            _ => unreachable!("the cut's path leads to its Gather"),
        }
    }

    /// The fragment's sliced scan.
    pub(super) fn sliced_scan(&self) -> &PhysicalPlan {
        sliced_scan_in(self.fragment()).expect("a fragment has a sliced scan")
    }

    pub(super) fn name_nodes(&mut self, names: &[String]) {
        if let PhysicalPlan::Gather { nodes, .. } = node_at_mut(&mut self.plan, &self.gather_path) {
            *nodes = names.to_vec();
        }
    }

    pub(super) fn into_plan(self) -> PhysicalPlan {
        self.plan
    }
}

fn sliced_scan_in(node: &PhysicalPlan) -> Option<&PhysicalPlan> {
    if let PhysicalPlan::TableScan { slice: Some(_), .. } = node {
        return Some(node);
    }
    node.children().into_iter().find_map(sliced_scan_in)
}

pub(super) fn node_at<'p>(plan: &'p PhysicalPlan, path: &[usize]) -> &'p PhysicalPlan {
    path.iter().fold(plan, |node, &i| node.children()[i])
}

pub(super) fn node_at_mut<'p>(plan: &'p mut PhysicalPlan, path: &[usize]) -> &'p mut PhysicalPlan {
    let mut node = plan;
    for &i in path {
        node = node.children_mut().swap_remove(i);
    }
    node
}

/// The scans a cut may slice: every lake table's scan in the plan (not in its scalar
/// subqueries), by their paths from the root; why none, when there is none.
pub(super) fn candidates(plan: &PhysicalPlan) -> Result<Vec<Vec<usize>>, String> {
    refuse_unsliceable(plan)?;
    let mut found = Vec::new();
    let mut path = Vec::new();
    scans(plan, &mut path, &mut |path| found.push(path.to_vec()));
    match found.is_empty() {
        true => Err("the plan reads no lake table".into()),
        false => Ok(found),
    }
}

/// Cuts `plan` for `parts` nodes, slicing the scan at `scan_path`. With a snapshot, the cut
/// also exchanges rows where the snapshot's sizes make that divide the work (`exchange.rs`).
pub(super) fn cut(
    original: &PhysicalPlan,
    parts: usize,
    scan_path: &[usize],
    exchange: Option<&Snapshot>,
) -> Cut {
    assert!(parts >= 2, "a cut is for several nodes");
    assert!(
        matches!(node_at(original, scan_path), PhysicalPlan::TableScan { .. }),
        "a cut slices a table scan"
    );
    let scan_path = scan_path.to_vec();
    let mut plan = original.clone();
    clear_sharing(&mut plan);
    slice_scan(node_at_mut(&mut plan, &scan_path), parts);
    let sizes = exchange.map(|snapshot| exchange::Sizes {
        snapshot,
        sliced_rows: super::cost::table_rows(node_at(&plan, &scan_path), snapshot),
        parts,
    });
    // The region: the highest ancestor of the scan through which each part holds a disjoint
    // share of its rows: row-wise operators, and the joins and aggregates exchanged on the way.
    let mut region = scan_path.len();
    let mut exchanged = false;
    while region > 0 {
        let parent_path = &scan_path[..region - 1];
        let child = scan_path[region - 1];
        let parent = node_at_mut(&mut plan, parent_path);
        if sizes
            .as_ref()
            .is_some_and(|sizes| exchange::exchange_at(parent, child, sizes))
        {
            exchanged = true;
        } else if !row_wise(parent, child) {
            break;
        }
        region -= 1;
    }
    // An aggregation the query computes twice (a view read twice) is computed once on one
    // node; split, each occurrence is computed apart.
    let unshares = region > 0
        && matches!(
            node_at(original, &scan_path[..region - 1]),
            PhysicalPlan::HashAggregate {
                shared: Some(_),
                ..
            }
        );
    let region_path = scan_path[..region].to_vec();
    let split = match region {
        0 => None,
        _ => {
            let parent_path = &region_path[..region - 1];
            let parent = node_at_mut(&mut plan, parent_path);
            split_above(parent).then(|| parent_path.to_vec())
        }
    };
    let was_split = split.is_some();
    let gather_path = match split {
        // The parent now stands over a Gather of its per-slice part.
        Some(parent_path) => gather_below_split(&mut plan, parent_path),
        None => {
            let region_node = node_at_mut(&mut plan, &region_path);
            let fragment = std::mem::replace(region_node, placeholder());
            *region_node = gather_of(fragment, parts);
            region_path
        }
    };
    Cut {
        plan,
        gather_path,
        split: was_split,
        unshares,
        exchanged,
    }
}

/// Plans whose parts cannot run apart, by what they hold anywhere.
fn refuse_unsliceable(plan: &PhysicalPlan) -> Result<(), String> {
    let mut reason = None;
    plan.visit(&mut |node| {
        let why = match node {
            PhysicalPlan::RecursiveCte { .. } | PhysicalPlan::WorkingTable { .. } => {
                "a recursive CTE"
            }
            PhysicalPlan::ChangeRecords { .. } => "a table's change records",
            PhysicalPlan::Input { .. } => "rows handed to the plan",
            PhysicalPlan::Gather { .. } => "a plan spread already",
            _ => return,
        };
        reason.get_or_insert(why);
    });
    match reason {
        Some(why) => Err(format!("the plan reads {why}")),
        None => Ok(()),
    }
}

pub(super) fn scans(node: &PhysicalPlan, path: &mut Vec<usize>, found: &mut dyn FnMut(&[usize])) {
    if let PhysicalPlan::TableScan { .. } = node {
        found(path);
    }
    for (i, child) in node.children().into_iter().enumerate() {
        path.push(i);
        scans(child, path, found);
        path.pop();
    }
}

/// Whether each output row of `node` comes from one row of its input `child`, when that input
/// is sliced and the others are whole.
pub(super) fn row_wise(node: &PhysicalPlan, child: usize) -> bool {
    match node {
        PhysicalPlan::Filter { .. }
        | PhysicalPlan::Projection { .. }
        | PhysicalPlan::Unnest { .. } => true,
        PhysicalPlan::HashJoin { kind, .. } => match child {
            // The left input streams through the right one, which every node builds whole.
            0 => matches!(
                kind,
                JoinKind::Inner
                    | JoinKind::Left
                    | JoinKind::Semi
                    | JoinKind::Anti
                    | JoinKind::NullAwareAnti
                    | JoinKind::Single
                    | JoinKind::Mark
                    | JoinKind::MarkIn
            ),
            _ => matches!(
                kind,
                JoinKind::Inner | JoinKind::Right | JoinKind::RightSemi | JoinKind::RightAnti
            ),
        },
        _ => false,
    }
}

/// Scans and aggregations share their rows within one node's run only (ADR 0019, 0034): the
/// cut plan shares none across its cut.
fn clear_sharing(plan: &mut PhysicalPlan) {
    plan.for_each_with_subqueries(&mut |node| match node {
        PhysicalPlan::TableScan { repeat, .. } | PhysicalPlan::ParquetScan { repeat, .. } => {
            *repeat = None;
        }
        PhysicalPlan::HashAggregate { shared, .. } => *shared = None,
        _ => {}
    });
}

pub(super) fn slice_scan(scan: &mut PhysicalPlan, parts: usize) {
    match scan {
        PhysicalPlan::TableScan { slice, .. } => *slice = Some(Slice { part: 0, parts }),
        _ => unreachable!("a cut slices a table scan"),
    }
}

/// Splits `parent`, which stands right above the row-wise region, into its final part (left in
/// place) over its per-slice part (its new input, not yet gathered); false when it cannot be.
fn split_above(parent: &mut PhysicalPlan) -> bool {
    match parent {
        PhysicalPlan::HashAggregate { .. } => partial::split_aggregate(parent),
        PhysicalPlan::Sort {
            input,
            keys,
            fetch: Some(fetch),
        } => {
            let per_slice = PhysicalPlan::Sort {
                input: std::mem::replace(input, Box::new(placeholder())),
                keys: keys.clone(),
                fetch: Some(*fetch),
            };
            **input = per_slice;
            true
        }
        PhysicalPlan::Limit {
            input,
            skip,
            fetch: Some(fetch),
        } => {
            let per_slice = PhysicalPlan::Limit {
                input: std::mem::replace(input, Box::new(placeholder())),
                skip: 0,
                fetch: Some(skip.saturating_add(*fetch)),
            };
            **input = per_slice;
            true
        }
        _ => false,
    }
}

/// Puts a Gather between the split node at `parent_path` and its per-slice part (its first
/// child, or the child a final aggregate's projection stands over); returns the Gather's path.
fn gather_below_split(plan: &mut PhysicalPlan, parent_path: Vec<usize>) -> Vec<usize> {
    let mut path = parent_path;
    let parts = sliced_parts(node_at(plan, &path));
    // A split aggregate may have become a projection over the final aggregate.
    while !is_split_point(node_at(plan, &path)) {
        path.push(0);
    }
    path.push(0);
    let per_slice = node_at_mut(plan, &path);
    let fragment = std::mem::replace(per_slice, placeholder());
    *per_slice = gather_of(fragment, parts);
    path
}

/// Whether `node`'s first child is the per-slice part: the node has a sliced scan below it and
/// its first child is the per-slice operator the split made.
fn is_split_point(node: &PhysicalPlan) -> bool {
    let Some(child) = node.children().first().copied() else {
        return true;
    };
    matches!(
        (node, child),
        (
            PhysicalPlan::HashAggregate { .. },
            PhysicalPlan::HashAggregate { .. }
        ) | (PhysicalPlan::Sort { .. }, PhysicalPlan::Sort { .. })
            | (PhysicalPlan::Limit { .. }, PhysicalPlan::Limit { .. })
    )
}

fn sliced_parts(node: &PhysicalPlan) -> usize {
    match sliced_scan_in(node) {
        Some(PhysicalPlan::TableScan {
            slice: Some(slice), ..
        }) => slice.parts,
        _ => unreachable!("a split node has a sliced scan below it"),
    }
}

/// A Gather of `fragment`'s parts. The fragment shares scans and aggregations within itself;
/// its sliced scan shares nothing with the scans that read its table whole.
fn gather_of(fragment: PhysicalPlan, parts: usize) -> PhysicalPlan {
    let mut fragment = fragment;
    exchange::number_exchanges(&mut fragment);
    crate::shared_aggregates::number_repeated_aggregates(&mut fragment);
    if !super::exchanges(&fragment) {
        crate::repeated_scans::mark_repeated_scans(&mut fragment);
    }
    PhysicalPlan::Gather {
        fragment: Box::new(fragment),
        parts,
        nodes: Vec::new(),
    }
}

/// What stands in a node's place while it is moved.
pub(super) fn placeholder() -> PhysicalPlan {
    PhysicalPlan::Values {
        schema: std::sync::Arc::new(arrow::datatypes::Schema::empty()),
        rows: Vec::new(),
    }
}
