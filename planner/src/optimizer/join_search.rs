//! The join order of least estimated cost for a small block of inner joins, by dynamic
//! programming over subsets of its relations (DPsub): every connected subset's cheapest plan
//! is built from the cheapest plans of the two parts it splits into, smallest subsets first.
//! Only splits whose parts an equality connects are considered, so no plan holds a cross
//! join. A plan's cost is the rows every join in it produces plus the rows it builds into hash
//! tables (C_out, with builds counted again because a hash table costs more per row than a
//! probe).

use crate::optimizer::join_order::{Predicate, Shape};

/// The most relations searched: 3^n splits are tried, 59,049 at ten.
pub const MAX_RELATIONS: usize = 10;

/// A join tree over the block's relations, by index.
#[derive(Debug, PartialEq)]
pub enum Order {
    Relation(usize),
    Join(Box<Order>, Box<Order>),
}

/// The cheapest plan found for one subset: its cost, shape and the split it was joined from.
struct Best {
    cost: f64,
    shape: Shape,
    split: Option<(usize, usize)>,
}

/// The cheapest join tree of `relations` (each one's shape, filters applied) under `pending`
/// (the predicates over several of them); none for a block too large to search, of fewer than
/// three relations (any order is the same), or one that needs a cross join.
pub fn best_order(relations: &[Shape], pending: &[Predicate]) -> Option<Order> {
    let count = relations.len();
    if !(3..=MAX_RELATIONS).contains(&count) {
        return None;
    }
    let masks: Vec<usize> = pending
        .iter()
        .map(|p| p.relations.iter().fold(0, |mask, r| mask | (1 << r)))
        .collect();
    let mut best: Vec<Option<Best>> = (0..1usize << count).map(|_| None).collect();
    for (index, shape) in relations.iter().enumerate() {
        best[1 << index] = Some(Best {
            cost: 0.0,
            shape: shape.clone(),
            split: None,
        });
    }
    for set in 1..best.len() {
        if set.count_ones() < 2 {
            continue;
        }
        let lowest = set & set.wrapping_neg();
        // Each unordered split once: the left part holds the set's lowest relation.
        let mut left = (set - 1) & set;
        while left > 0 {
            let right = set ^ left;
            if left & lowest != 0
                && let Some(candidate) = join_parts(&best, left, right, pending, &masks)
                && best[set].as_ref().is_none_or(|b| candidate.cost < b.cost)
            {
                best[set] = Some(candidate);
            }
            left = (left - 1) & set;
        }
    }
    best.last()?.as_ref()?;
    Some(order_of(&best, best.len() - 1))
}

/// The plan of `left` joined to `right` from their cheapest plans, when both are connected
/// and an equality joins them.
fn join_parts(
    best: &[Option<Best>],
    left: usize,
    right: usize,
    pending: &[Predicate],
    masks: &[usize],
) -> Option<Best> {
    let (a, b) = (best[left].as_ref()?, best[right].as_ref()?);
    let set = left | right;
    // The predicates that first meet here: within the set, within neither part.
    let meeting: Vec<&crate::expr::Expr> = pending
        .iter()
        .zip(masks)
        .filter(|(_, mask)| **mask & !set == 0 && **mask & !left != 0 && **mask & !right != 0)
        .map(|(p, _)| &p.expr)
        .collect();
    let joined = a.shape.join(&b.shape, &meeting, true);
    if joined.keys.is_empty() {
        return None;
    }
    let cost = a.cost + b.cost + joined.expected.rows + joined.expected.build;
    Some(Best {
        cost,
        shape: joined.shape,
        split: Some((left, right)),
    })
}

fn order_of(best: &[Option<Best>], set: usize) -> Order {
    match best[set].as_ref().and_then(|b| b.split) {
        None => Order::Relation(set.trailing_zeros() as usize),
        Some((left, right)) => Order::Join(
            Box::new(order_of(best, left)),
            Box::new(order_of(best, right)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use arrow::datatypes::DataType;

    use super::*;
    use crate::cardinality::{ColumnEstimate, Estimate};
    use crate::expr::{BinaryOp, Expr};

    /// A relation at block columns `layout`, of `rows` rows whose columns have `distinct`
    /// values each.
    fn relation(index: usize, layout: Vec<usize>, rows: f64, distinct: &[f64]) -> Shape {
        let columns = distinct
            .iter()
            .map(|d| ColumnEstimate {
                distinct: *d,
                known: true,
                range: None,
                nulls: None,
            })
            .collect();
        Shape {
            relations: BTreeSet::from([index]),
            layout,
            estimate: Estimate { rows, columns },
        }
    }

    fn equal(left: (usize, usize), right: (usize, usize)) -> Predicate {
        let column = |c: usize| Box::new(Expr::column(c, "c", DataType::Int64));
        Predicate {
            expr: Expr::Binary {
                op: BinaryOp::Eq,
                left: column(left.1),
                right: column(right.1),
            },
            relations: BTreeSet::from([left.0, right.0]),
        }
    }

    /// A chain a - b - c - d where a and d each pick few rows of b and c, but b and c share a
    /// key of 10 values: the cheapest plan joins a to b and c to d before joining the two (a
    /// bushy tree, which no left-deep order gives).
    #[test]
    fn finds_a_bushy_plan_when_it_is_cheapest() {
        let relations = [
            relation(0, vec![0], 100.0, &[100.0]),
            relation(1, vec![1, 2], 1e6, &[1e6, 10.0]),
            relation(2, vec![3, 4], 1e6, &[10.0, 1e6]),
            relation(3, vec![5], 100.0, &[100.0]),
        ];
        let pending = [
            equal((0, 0), (1, 1)),
            equal((1, 2), (2, 3)),
            equal((2, 4), (3, 5)),
        ];
        let pair = |a, b| Order::Join(Box::new(Order::Relation(a)), Box::new(Order::Relation(b)));
        assert_eq!(
            best_order(&relations, &pending),
            Some(Order::Join(Box::new(pair(0, 1)), Box::new(pair(2, 3))))
        );
    }

    #[test]
    fn leaves_small_large_and_disconnected_blocks_to_the_greedy_order() {
        let small: Vec<Shape> = (0..2)
            .map(|i| relation(i, vec![i], 10.0, &[10.0]))
            .collect();
        assert_eq!(best_order(&small, &[equal((0, 0), (1, 1))]), None);
        let large: Vec<Shape> = (0..=MAX_RELATIONS)
            .map(|i| relation(i, vec![i], 10.0, &[10.0]))
            .collect();
        let chain: Vec<Predicate> = (1..=MAX_RELATIONS)
            .map(|i| equal((i - 1, i - 1), (i, i)))
            .collect();
        assert_eq!(best_order(&large, &chain), None);
        // Three relations, the third joined to neither: a cross join is needed.
        let three: Vec<Shape> = (0..3)
            .map(|i| relation(i, vec![i], 10.0, &[10.0]))
            .collect();
        assert_eq!(best_order(&three, &[equal((0, 0), (1, 1))]), None);
        assert!(best_order(&three, &[equal((0, 0), (1, 1)), equal((1, 1), (2, 2))]).is_some());
    }
}
