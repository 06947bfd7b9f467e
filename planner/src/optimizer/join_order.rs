//! Join order for a block of inner joins: relations and the predicates over them (from WHERE
//! and from INNER JOIN ... ON). Blocks of up to `join_search::MAX_RELATIONS` relations take
//! the order of least estimated cost found by dynamic programming over connected subsets
//! (`join_search`); larger blocks, and blocks that need a cross join, are combined greedily by
//! estimated size (greedy operator ordering): each step joins the two groups, connected by an
//! equality, whose join is estimated smallest (`cardinality`). Either way the smaller side of
//! each join is built into the hash table. Filters on one relation are applied to it before
//! any join; a predicate over several relations is applied as soon as they meet.

use std::collections::{BTreeSet, HashMap};

use pondra_catalog::Snapshot;

use crate::cardinality::{Estimate, JoinEstimate, estimate, join_estimate, selectivity};
use crate::expr::{BinaryOp, Expr, JoinKind};
use crate::logical::LogicalPlan;
use crate::optimizer::{OptimizerSettings, join_search};
use crate::tree::TreeNode;

/// One relation of a join block: its plan and its columns' positions in the block's scope.
pub struct Relation {
    pub plan: LogicalPlan,
    /// The position of the relation's first column in the block's concatenated scope.
    pub offset: usize,
}

/// A set of relations joined (or to be joined): which, where each block column is in its
/// output, and the estimate of that output.
#[derive(Clone)]
pub(crate) struct Shape {
    pub relations: BTreeSet<usize>,
    /// `layout[i]` is the block column at output position `i`.
    pub layout: Vec<usize>,
    /// The estimate of the output, whose columns follow `layout`.
    pub estimate: Estimate,
}

impl Shape {
    fn position(&self, column: usize) -> Option<usize> {
        self.layout.iter().position(|c| *c == column)
    }

    fn local(&self, expr: &Expr) -> Expr {
        expr.remap_columns(&|c| self.position(c).expect("column is in the group"))
    }

    /// The join of `self` and `other` under the predicates that first meet in it: which side
    /// is probed (the larger; the other is built), the equi-join keys (probe side, build
    /// side), the other predicates as one filter over the joined layout, and the joined shape.
    /// With `choose_sides` false, `self` is probed and `other` built, as written.
    pub fn join(&self, other: &Shape, predicates: &[&Expr], choose_sides: bool) -> Joined {
        let other_probed = choose_sides && self.estimate.rows < other.estimate.rows;
        let (probe, build) = if other_probed {
            (other, self)
        } else {
            (self, other)
        };
        let mut keys = Vec::new();
        let mut filters = Vec::new();
        for expr in predicates {
            match equi_key(expr, probe, build) {
                Some(key) => keys.push(key),
                None => filters.push((*expr).clone()),
            }
        }
        let mut layout = probe.layout.clone();
        layout.extend(&build.layout);
        let filter = Expr::and_all(filters).map(|f| {
            f.remap_columns(&|c| layout.iter().position(|l| *l == c).expect("joined column"))
        });
        let mut estimate = join_estimate(&probe.estimate, &build.estimate, &keys);
        if let Some(filter) = &filter {
            let selectivity = selectivity(filter, &estimate);
            estimate = estimate.filtered(selectivity);
        }
        let relations = probe.relations.union(&build.relations).copied().collect();
        Joined {
            other_probed,
            expected: JoinEstimate {
                probe: probe.estimate.rows,
                build: build.estimate.rows,
                rows: estimate.rows,
            },
            keys,
            filter,
            shape: Shape {
                relations,
                layout,
                estimate,
            },
        }
    }
}

/// See `Shape::join`.
pub(crate) struct Joined {
    /// Whether the other shape is the probe side.
    pub other_probed: bool,
    pub expected: JoinEstimate,
    pub keys: Vec<(Expr, Expr)>,
    pub filter: Option<Expr>,
    pub shape: Shape,
}

/// A set of relations already joined, with its plan.
struct Group {
    plan: LogicalPlan,
    shape: Shape,
    /// The pairs of columns its joins have made equal.
    equal: Vec<(usize, usize)>,
}

/// A predicate and the relations it reads.
pub(crate) struct Predicate {
    pub expr: Expr,
    pub relations: BTreeSet<usize>,
}

/// The pass: every join block, from the leaves up, as joins in the order of least estimated
/// cost.
pub fn order_join_blocks(
    plan: &mut LogicalPlan,
    snapshot: &Snapshot,
    settings: &OptimizerSettings,
) -> crate::Result<()> {
    plan.transform_up(&mut |node| {
        if let LogicalPlan::JoinBlock { .. } = node {
            let LogicalPlan::JoinBlock {
                relations,
                predicates,
                ..
            } = std::mem::replace(node, LogicalPlan::empty())
            else {
                unreachable!("matched above")
            };
            let mut offset = 0;
            let relations = relations
                .into_iter()
                .map(|plan| {
                    let relation = Relation { offset, plan };
                    offset += relation.plan.schema().fields().len();
                    relation
                })
                .collect();
            *node = plan_join_block(relations, predicates, snapshot, settings);
        }
        Ok(())
    })
}

/// Joins `relations` under `predicates` (over the block's concatenated columns); the output
/// has the block's columns in the original order.
pub fn plan_join_block(
    relations: Vec<Relation>,
    predicates: Vec<Expr>,
    snapshot: &Snapshot,
    settings: &OptimizerSettings,
) -> LogicalPlan {
    assert!(!relations.is_empty(), "a join block has relations");
    let widths: Vec<usize> = relations
        .iter()
        .map(|r| r.plan.schema().fields().len())
        .collect();
    let owner = |column: usize| {
        relations
            .iter()
            .zip(&widths)
            .position(|(r, w)| column >= r.offset && column < r.offset + w)
            .expect("column belongs to a relation")
    };
    let mut pending: Vec<Predicate> = predicates
        .into_iter()
        .flat_map(|p| factor_or(p).conjuncts())
        .map(|expr| {
            let relations = expr.column_indices().into_iter().map(owner).collect();
            Predicate { expr, relations }
        })
        .collect();
    let derived = implied_filters(&pending, &owner);
    pending.extend(derived);
    let derived = implied_equalities(&pending, &owner);
    pending.extend(derived);
    let total_columns: usize = widths.iter().sum();

    let mut groups: Vec<Group> = Vec::new();
    for (index, relation) in relations.into_iter().enumerate() {
        let layout: Vec<usize> = (relation.offset..relation.offset + widths[index]).collect();
        let mut group = Group {
            shape: Shape {
                estimate: estimate(&relation.plan, snapshot),
                relations: BTreeSet::from([index]),
                layout,
            },
            plan: relation.plan,
            equal: Vec::new(),
        };
        apply_ready(&mut group, &mut pending);
        groups.push(group);
    }

    let sides = Sides(settings.chooses_build_sides());
    let searched = match settings.orders_joins() {
        true => join_search::best_order(
            &groups.iter().map(|g| g.shape.clone()).collect::<Vec<_>>(),
            &pending,
        ),
        false => None,
    };
    let mut group = match searched {
        Some(order) => {
            let mut slots: Vec<Option<Group>> = groups.into_iter().map(Some).collect();
            build_order(&order, &mut slots, &mut pending, sides)
        }
        None if !settings.orders_joins() => {
            // As written: each relation joined to those before it.
            let mut groups = groups.into_iter();
            let first = groups.next().expect("a join block has relations");
            groups.fold(first, |joined, next| {
                join_groups(joined, next, &mut pending, sides)
            })
        }
        None => {
            while groups.len() > 1 {
                let (a, b) = next_pair(&groups, &pending);
                let (first, second) = (a.min(b), a.max(b));
                let g2 = groups.remove(second);
                let g1 = groups.remove(first);
                groups.push(join_groups(g1, g2, &mut pending, sides));
            }
            groups.pop().expect("one group left")
        }
    };
    // Predicates over no relation at all (constants) are applied at the end.
    if let Some(rest) = Expr::and_all(pending.into_iter().map(|p| p.expr).collect()) {
        let predicate = group.shape.local(&rest);
        group.plan = LogicalPlan::Filter {
            input: Box::new(group.plan),
            predicate,
        };
    }
    restore_order(group, total_columns)
}

/// The plan of `order`, taking its relations' groups out of `slots`.
fn build_order(
    order: &join_search::Order,
    slots: &mut [Option<Group>],
    pending: &mut Vec<Predicate>,
    sides: Sides,
) -> Group {
    match order {
        join_search::Order::Relation(index) => slots[*index].take().expect("each relation once"),
        join_search::Order::Join(left, right) => {
            let left = build_order(left, slots, pending, sides);
            let right = build_order(right, slots, pending, sides);
            join_groups(left, right, pending, sides)
        }
    }
}

/// Whether a join builds its smaller input (true), or its second one as written.
#[derive(Clone, Copy)]
struct Sides(bool);

/// Joins two groups under the pending predicates that first meet in their join.
fn join_groups(g1: Group, g2: Group, pending: &mut Vec<Predicate>, sides: Sides) -> Group {
    let joined: BTreeSet<usize> = g1
        .shape
        .relations
        .union(&g2.shape.relations)
        .copied()
        .collect();
    let (meeting, rest): (Vec<Predicate>, Vec<Predicate>) = std::mem::take(pending)
        .into_iter()
        .partition(|p| p.relations.is_subset(&joined));
    *pending = rest;
    // An equality of columns that the joins below, or the join's other keys, already make
    // equal is left out: with implied equalities (`implied_equalities`) a join may meet
    // several of one class.
    let mut equal = g1.equal;
    equal.extend(g2.equal);
    let mut classes = HashMap::new();
    for &(a, b) in &equal {
        union(&mut classes, a, b);
    }
    let mut exprs: Vec<&Expr> = Vec::with_capacity(meeting.len());
    for predicate in &meeting {
        if let Some((a, b)) = equated_columns(&predicate.expr) {
            if root(&mut classes, a) == root(&mut classes, b) {
                continue;
            }
            union(&mut classes, a, b);
            equal.push((a, b));
        }
        exprs.push(&predicate.expr);
    }
    let Joined {
        other_probed,
        expected,
        keys,
        filter,
        shape,
    } = g1.shape.join(&g2.shape, &exprs, sides.0);
    // The larger side streams (probe, left); the smaller is built (right).
    let (probe_plan, build_plan) = if other_probed {
        (g2.plan, g1.plan)
    } else {
        (g1.plan, g2.plan)
    };
    let plan = LogicalPlan::join(probe_plan, build_plan, JoinKind::Inner, keys, filter)
        .with_join_estimate(expected);
    Group { plan, shape, equal }
}

/// Applies the predicates whose relations are all inside `group`.
fn apply_ready(group: &mut Group, pending: &mut Vec<Predicate>) {
    let (ready, rest): (Vec<Predicate>, Vec<Predicate>) = std::mem::take(pending)
        .into_iter()
        .partition(|p| !p.relations.is_empty() && p.relations.is_subset(&group.shape.relations));
    *pending = rest;
    if let Some(predicate) = Expr::and_all(ready.into_iter().map(|p| p.expr).collect()) {
        let predicate = group.shape.local(&predicate);
        let selectivity = selectivity(&predicate, &group.shape.estimate);
        group.shape.estimate = std::mem::replace(
            &mut group.shape.estimate,
            Estimate {
                rows: 0.0,
                columns: vec![],
            },
        )
        .filtered(selectivity);
        group.plan = LogicalPlan::Filter {
            input: Box::new(std::mem::replace(&mut group.plan, LogicalPlan::empty())),
            predicate,
        };
    }
}

/// The two groups to join next: of the pairs connected by an equality, the one whose join is
/// estimated smallest; when no pair is connected, the two smallest groups (a cross join).
///
/// Only the pairs some pending predicate connects are weighed, found from the predicates, so a
/// step costs in proportion to the predicates rather than to the square of the groups.
fn next_pair(groups: &[Group], pending: &[Predicate]) -> (usize, usize) {
    let mut group_of: HashMap<usize, usize> = HashMap::new();
    for (index, group) in groups.iter().enumerate() {
        for relation in &group.shape.relations {
            group_of.insert(*relation, index);
        }
    }
    // Each pair of groups a pending predicate spans, with those predicates, in pair order.
    let mut connected: std::collections::BTreeMap<(usize, usize), Vec<&Predicate>> =
        Default::default();
    for predicate in pending {
        let spanned: BTreeSet<usize> = predicate
            .relations
            .iter()
            .filter_map(|r| group_of.get(r).copied())
            .collect();
        if let [a, b] = spanned.into_iter().collect::<Vec<_>>()[..] {
            connected.entry((a, b)).or_default().push(predicate);
        }
    }
    let mut best: Option<(f64, usize, usize)> = None;
    for ((a, b), predicates) in connected {
        let (g1, g2) = (&groups[a].shape, &groups[b].shape);
        let keys: Vec<(Expr, Expr)> = predicates
            .iter()
            .filter_map(|p| equi_key(&p.expr, g1, g2))
            .collect();
        if keys.is_empty() {
            continue;
        }
        let rows = join_estimate(&g1.estimate, &g2.estimate, &keys).rows;
        if best.is_none_or(|(least, _, _)| rows < least) {
            best = Some((rows, a, b));
        }
    }
    if let Some((_, a, b)) = best {
        return (a, b);
    }
    // A cross join's output is the product whatever the order; what the order decides is what
    // each join builds. The largest group takes the smallest one each time, so the chain is
    // left-deep, every build side is one small group, and a LIMIT above gets its first rows
    // at once instead of after building a product.
    let mut by_size: Vec<usize> = (0..groups.len()).collect();
    by_size.sort_by(|a, b| {
        groups[*a]
            .shape
            .estimate
            .rows
            .total_cmp(&groups[*b].shape.estimate.rows)
    });
    (by_size[by_size.len() - 1], by_size[0])
}

/// `probe_expr = build_expr` when the predicate is an equality with one side in each group.
fn equi_key(expr: &Expr, probe: &Shape, build: &Shape) -> Option<(Expr, Expr)> {
    let Expr::Binary {
        op: BinaryOp::Eq,
        left,
        right,
    } = expr
    else {
        return None;
    };
    let within = |e: &Expr, g: &Shape| {
        let columns = e.column_indices();
        !columns.is_empty() && columns.iter().all(|c| g.position(*c).is_some())
    };
    if within(left, probe) && within(right, build) {
        Some((probe.local(left), build.local(right)))
    } else if within(right, probe) && within(left, build) {
        Some((probe.local(right), build.local(left)))
    } else {
        None
    }
}

/// `(a AND b) OR (a AND c)` becomes `a AND (b OR c)`, so that `a` can be a join key.
pub fn factor_or(expr: Expr) -> Expr {
    let Expr::Binary {
        op: BinaryOp::Or, ..
    } = &expr
    else {
        return expr;
    };
    let disjuncts = disjuncts(expr.clone());
    let branches: Vec<Vec<Expr>> = disjuncts.iter().map(|d| d.clone().conjuncts()).collect();
    let common: Vec<Expr> = branches[0]
        .iter()
        .filter(|c| branches[1..].iter().all(|b| b.contains(c)))
        .cloned()
        .collect();
    if common.is_empty() {
        return expr;
    }
    let mut rest = Vec::new();
    for branch in branches {
        let remaining: Vec<Expr> = branch.into_iter().filter(|c| !common.contains(c)).collect();
        match Expr::and_all(remaining) {
            Some(e) => rest.push(e),
            // One branch is nothing but the common part: the OR is always true given it.
            None => return Expr::and_all(common).expect("common is not empty"),
        }
    }
    let or = rest
        .into_iter()
        .reduce(|l, r| Expr::Binary {
            op: BinaryOp::Or,
            left: Box::new(l),
            right: Box::new(r),
        })
        .expect("at least one branch");
    let mut parts = common;
    parts.push(or);
    Expr::and_all(parts).expect("parts")
}

/// Filters on one relation implied by an OR over several: from `(a1 AND b1) OR (a2 AND b2)`
/// where `a1` and `a2` read only relation R, `a1 OR a2` filters R before any join (TPC-H q7's
/// and q19's nation and part conditions). The OR itself still applies where its relations meet.
fn implied_filters(pending: &[Predicate], owner: &dyn Fn(usize) -> usize) -> Vec<Predicate> {
    let mut implied = Vec::new();
    for predicate in pending.iter().filter(|p| p.relations.len() > 1) {
        let branches: Vec<Vec<Expr>> = disjuncts(predicate.expr.clone())
            .into_iter()
            .map(Expr::conjuncts)
            .collect();
        if branches.len() < 2 {
            continue;
        }
        for relation in &predicate.relations {
            let only_this = |e: &Expr| {
                let columns = e.column_indices();
                !columns.is_empty() && columns.into_iter().all(|c| owner(c) == *relation)
            };
            let parts: Option<Vec<Expr>> = branches
                .iter()
                .map(|b| Expr::and_all(b.iter().filter(|c| only_this(c)).cloned().collect()))
                .collect();
            let Some(parts) = parts else { continue };
            let expr = parts
                .into_iter()
                .reduce(|l, r| Expr::Binary {
                    op: BinaryOp::Or,
                    left: Box::new(l),
                    right: Box::new(r),
                })
                .expect("two branches or more");
            implied.push(Predicate {
                expr,
                relations: BTreeSet::from([*relation]),
            });
        }
    }
    implied
}

/// The most columns a class of equal columns may have for the equalities between all its
/// pairs to be implied.
const IMPLIED_CLASS_LIMIT: usize = 16;

/// Equalities between columns of two relations implied by equalities through others: from
/// `c.x = s.y` and `s.y = n.z`, `c.x = n.z` (TPC-H q5's customers and nations, joined through
/// suppliers). Join order may then join the two directly, before the relation between. A join
/// leaves out an equality that those below it already make true (`join_groups`).
fn implied_equalities(pending: &[Predicate], owner: &dyn Fn(usize) -> usize) -> Vec<Predicate> {
    let mut equal: Vec<(usize, usize)> = Vec::new();
    let mut columns = HashMap::new();
    for predicate in pending.iter().filter(|p| p.relations.len() == 2) {
        let (Some((a, b)), Expr::Binary { left, right, .. }) =
            (equated_columns(&predicate.expr), &predicate.expr)
        else {
            continue;
        };
        if left.data_type() == right.data_type() {
            equal.push((a, b));
            columns.insert(a, left.as_ref().clone());
            columns.insert(b, right.as_ref().clone());
        }
    }
    let mut classes = HashMap::new();
    for &(a, b) in &equal {
        union(&mut classes, a, b);
    }
    let mut members: Vec<usize> = columns.keys().copied().collect();
    members.sort_unstable();
    let mut by_class: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for column in members {
        by_class
            .entry(root(&mut classes, column))
            .or_default()
            .push(column);
    }
    let mut implied = Vec::new();
    // A class of many columns (a chain of joins on one key) would imply the square of its
    // size; join order needs the direct equalities only where it has few relations to weigh.
    let within_reach = |class: &&Vec<usize>| class.len() > 2 && class.len() <= IMPLIED_CLASS_LIMIT;
    for class in by_class.values().filter(within_reach) {
        for (i, &a) in class.iter().enumerate() {
            for &b in &class[i + 1..] {
                if owner(a) == owner(b) || equal.contains(&(a, b)) || equal.contains(&(b, a)) {
                    continue;
                }
                implied.push(Predicate {
                    expr: Expr::Binary {
                        op: BinaryOp::Eq,
                        left: Box::new(columns[&a].clone()),
                        right: Box::new(columns[&b].clone()),
                    },
                    relations: BTreeSet::from([owner(a), owner(b)]),
                });
            }
        }
    }
    implied
}

/// The two columns an equality of plain columns equates.
fn equated_columns(expr: &Expr) -> Option<(usize, usize)> {
    match expr {
        Expr::Binary {
            op: BinaryOp::Eq,
            left,
            right,
        } => match (left.as_ref(), right.as_ref()) {
            (Expr::Column { index: a, .. }, Expr::Column { index: b, .. }) => Some((*a, *b)),
            _ => None,
        },
        _ => None,
    }
}

/// The representative of `column`'s class of equal columns (union-find).
fn root(parent: &mut HashMap<usize, usize>, column: usize) -> usize {
    let up = *parent.entry(column).or_insert(column);
    if up == column {
        return column;
    }
    let top = root(parent, up);
    parent.insert(column, top);
    top
}

fn union(parent: &mut HashMap<usize, usize>, a: usize, b: usize) {
    let (ra, rb) = (root(parent, a), root(parent, b));
    if ra != rb {
        parent.insert(ra.max(rb), ra.min(rb));
    }
}

fn disjuncts(expr: Expr) -> Vec<Expr> {
    match expr {
        Expr::Binary {
            op: BinaryOp::Or,
            left,
            right,
        } => {
            let mut parts = disjuncts(*left);
            parts.extend(disjuncts(*right));
            parts
        }
        other => vec![other],
    }
}

/// Projects the group's columns back into the block's original order.
fn restore_order(group: Group, total_columns: usize) -> LogicalPlan {
    if group.shape.layout.iter().copied().eq(0..total_columns) {
        return group.plan;
    }
    let schema = group.plan.schema();
    let mut exprs = Vec::new();
    let mut names = Vec::new();
    for column in 0..total_columns {
        let position = group.shape.position(column).expect("every column survives");
        let field = schema.field(position);
        exprs.push(Expr::column(
            position,
            field.name(),
            field.data_type().clone(),
        ));
        names.push(field.name().clone());
    }
    group.plan.project(exprs, names)
}

#[cfg(test)]
mod tests {
    use arrow::datatypes::DataType;

    use super::*;

    fn equal(a: usize, b: usize, data_type: DataType) -> Predicate {
        Predicate {
            expr: Expr::Binary {
                op: BinaryOp::Eq,
                left: Box::new(Expr::column(a, "a", data_type.clone())),
                right: Box::new(Expr::column(b, "b", data_type)),
            },
            relations: BTreeSet::from([a / 10, b / 10]),
        }
    }

    #[test]
    fn equalities_through_a_third_relation_imply_one_between_the_other_two() {
        // Relation r owns block columns 10 * r to 10 * r + 9.
        let owner = |column: usize| column / 10;
        let pending = vec![
            equal(1, 12, DataType::Int64),
            equal(12, 25, DataType::Int64),
            equal(3, 14, DataType::Int32),
        ];
        let implied = implied_equalities(&pending, &owner);
        assert_eq!(implied.len(), 1);
        assert_eq!(equated_columns(&implied[0].expr), Some((1, 25)));
        assert_eq!(implied[0].relations, BTreeSet::from([0, 2]));

        // Already equated, or of other types: nothing implied.
        let mut pending = pending;
        pending.push(equal(25, 1, DataType::Int64));
        assert!(implied_equalities(&pending, &owner).is_empty());
        let cast_apart = Predicate {
            expr: Expr::Binary {
                op: BinaryOp::Eq,
                left: Box::new(Expr::column(12, "b", DataType::Int64)),
                right: Box::new(Expr::column(25, "c", DataType::Int32)),
            },
            relations: BTreeSet::from([1, 2]),
        };
        let mixed = vec![equal(1, 12, DataType::Int64), cast_apart];
        assert!(implied_equalities(&mixed, &owner).is_empty());
    }
}
