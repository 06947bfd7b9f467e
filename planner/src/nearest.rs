//! Nearest-neighbour queries through a vector index (ADR 0082): `ORDER BY distance(col,
//! constant) LIMIT k` over one unfiltered table whose HNSW index on `col` has the distance's
//! metric gives that table's scan a nearest clause. The sort above the scan stays, so the
//! rows are ordered by their exact distance; the index only picks which rows are read.

use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;

use pondra_catalog::VectorMetric;

use crate::expr::{Expr, ScalarFunction};
use crate::physical::PhysicalPlan;
use crate::tree::TreeNode;

/// What a scan reads through a vector index.
#[derive(Clone, Debug)]
pub struct Nearest {
    pub index: String,
    /// The table's column the index holds.
    pub column: usize,
    pub metric: VectorMetric,
    /// The vector searched for: an expression of constants.
    pub query: Expr,
    /// How many rows the query keeps.
    pub k: usize,
}

impl fmt::Display for Nearest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "nearest={} (hnsw, {}, k={})",
            self.index,
            self.metric.name(),
            self.k
        )
    }
}

/// Gives the scans under a top-k sort by a vector distance their nearest clause.
pub(crate) fn use_vector_indexes(plan: &mut PhysicalPlan) {
    let Ok(()) = plan.transform_up(&mut |node| {
        if let PhysicalPlan::Sort {
            input,
            keys,
            fetch: Some(k),
        } = node
            && let [key] = keys.as_slice()
            && !key.descending
            && !key.nulls_first
        {
            mark_scan(input, key.expr.clone(), *k);
        }
        Ok::<_, Infallible>(())
    });
}

/// Follows `key`, an expression of `node`'s rows, down through projections to a table scan,
/// and gives that scan a nearest clause when `key` is a distance its index orders by.
fn mark_scan(node: &mut PhysicalPlan, key: Expr, k: usize) {
    match node {
        PhysicalPlan::Projection { input, exprs, .. } => {
            let mut below = key;
            let Ok(()) = below.transform_up(&mut |e| {
                if let Expr::Column { index, .. } = e {
                    *e = exprs[*index].clone();
                }
                Ok::<_, Infallible>(())
            });
            mark_scan(input, below, k);
        }
        PhysicalPlan::TableScan {
            table,
            filter: None,
            slice: None,
            nearest,
            ..
        } => {
            let Some((column, metric, query)) = distance_to_constant(&key) else {
                return;
            };
            let Some(name) = table.columns.get(column).map(|c| &c.name) else {
                return;
            };
            let index = table.indexes.iter().find(|index| {
                index.columns.first() == Some(name)
                    && index.vector.is_some_and(|vector| vector.metric == metric)
            });
            if let Some(index) = index {
                *nearest = Some(Arc::new(Nearest {
                    index: index.name.clone(),
                    column,
                    metric,
                    query,
                    k,
                }));
            }
        }
        _ => {}
    }
}

/// The column, the index metric and the constant vector of `key` when it is a distance
/// between a column and a constant.
fn distance_to_constant(key: &Expr) -> Option<(usize, VectorMetric, Expr)> {
    let Expr::Function {
        func: ScalarFunction::VectorDistance(distance),
        args,
        ..
    } = key
    else {
        return None;
    };
    let metric = distance.metric()?;
    let [left, right] = args.as_slice() else {
        return None;
    };
    let (column, query) = match (left, right) {
        (Expr::Column { index, .. }, query) | (query, Expr::Column { index, .. }) => {
            (*index, query)
        }
        _ => return None,
    };
    is_constant(query).then(|| (column, metric, query.clone()))
}

/// Whether `expr` reads no row: no column, subquery or Python call.
fn is_constant(expr: &Expr) -> bool {
    let mut constant = true;
    expr.visit(&mut |e| {
        if matches!(
            e,
            Expr::Column { .. } | Expr::ScalarSubquery(_) | Expr::Python(_)
        ) {
            constant = false;
        }
    });
    constant
}
