//! The tree API of plans and expressions: every walk over a logical plan, a physical plan or
//! an expression goes through the few functions here, so that a pass or an operator says only
//! what it does at the nodes it cares about. Each node type says once which nodes sit under it
//! (`children`, `children_mut`) and, for plans, which expressions it holds (`exprs`,
//! `exprs_mut`); visiting, searching and rewriting follow from those.

use crate::expr::Expr;
use crate::logical::{LogicalPlan, SubqueryKind};
use crate::physical::PhysicalPlan;

/// A node of a tree whose children are nodes of the same type.
pub trait TreeNode: Sized {
    /// The nodes directly under this one, in order.
    fn children(&self) -> Vec<&Self>;

    /// The nodes directly under this one, in order, to change in place.
    fn children_mut(&mut self) -> Vec<&mut Self>;

    /// Calls `f` on this node and every node under it, each node before its children.
    fn visit(&self, f: &mut dyn FnMut(&Self)) {
        f(self);
        for child in self.children() {
            child.visit(f);
        }
    }

    /// True when `pred` holds for this node or a node under it; stops at the first.
    fn exists(&self, pred: &mut dyn FnMut(&Self) -> bool) -> bool {
        pred(self) || self.children().into_iter().any(|child| child.exists(pred))
    }

    /// Rewrites the tree bottom-up: `f` sees each node after its children were rewritten,
    /// and may change it in place or replace it whole. Stops at the first error.
    fn transform_up<E>(&mut self, f: &mut dyn FnMut(&mut Self) -> Result<(), E>) -> Result<(), E> {
        for child in self.children_mut() {
            child.transform_up(f)?;
        }
        f(self)
    }

    /// Rewrites the tree top-down: `f` sees each node before its children, and the children
    /// it leaves (or puts) there are rewritten next. Stops at the first error.
    fn transform_down<E>(
        &mut self,
        f: &mut dyn FnMut(&mut Self) -> Result<(), E>,
    ) -> Result<(), E> {
        f(self)?;
        for child in self.children_mut() {
            child.transform_down(f)?;
        }
        Ok(())
    }
}

/// A plan node, whose expressions the tree API reaches as well as its inputs.
pub trait PlanNode: TreeNode {
    /// The expressions this node holds itself (not those of its inputs), in a fixed order.
    fn exprs(&self) -> Vec<&Expr>;

    /// The same, to change in place; in the same order as `exprs`.
    fn exprs_mut(&mut self) -> Vec<&mut Expr>;

    /// Calls `f` on every expression of every node of the plan, and on every expression
    /// inside those (not inside the plans of subqueries).
    fn visit_exprs(&self, f: &mut dyn FnMut(&Expr)) {
        self.visit(&mut |node| {
            for expr in node.exprs() {
                expr.visit(f);
            }
        });
    }

    /// True when `pred` holds for an expression anywhere in the plan, or inside one.
    fn any_expr(&self, pred: &mut dyn FnMut(&Expr) -> bool) -> bool {
        self.exists(&mut |node| node.exprs().into_iter().any(|e| e.exists(pred)))
    }

    /// Replaces every expression of every node of the plan by `f` of it.
    fn map_exprs<E>(&mut self, f: &mut dyn FnMut(&Expr) -> Result<Expr, E>) -> Result<(), E> {
        self.transform_up(&mut |node| {
            for expr in node.exprs_mut() {
                *expr = f(expr)?;
            }
            Ok(())
        })
    }
}

// The listings below are written once for shared and once for mutable access by each macro:
// with `mut`, every binding the match makes is a mutable reference, and the same code yields
// `&mut` nodes and expressions.

macro_rules! expr_children {
    ($expr:expr $(, $mut:tt)?) => {{
        let mut out = Vec::new();
        match $expr {
            Expr::Column { .. }
            | Expr::Literal(_)
            | Expr::OuterColumn { .. }
            | Expr::DeepOuterColumn(_)
            | Expr::ScalarSubquery(_) => {}
            Expr::Binary { left, right, .. } => out.extend([&$($mut)? **left, &$($mut)? **right]),
            Expr::Not(e) | Expr::Negative(e) | Expr::IsNull(e) | Expr::IsNotNull(e) => {
                out.push(&$($mut)? **e)
            }
            Expr::Cast { expr, .. } => out.push(&$($mut)? **expr),
            Expr::Case {
                branches,
                otherwise,
                ..
            } => {
                for (when, then) in branches {
                    out.extend([when, then]);
                }
                out.extend(otherwise.into_iter().map(|e| &$($mut)? **e));
            }
            Expr::InList { expr, list, .. } => {
                out.push(&$($mut)? **expr);
                out.extend(list);
            }
            Expr::Like { expr, pattern, .. } => out.extend([&$($mut)? **expr, &$($mut)? **pattern]),
            Expr::Function { args, .. } => out.extend(args),
            Expr::Python(call) => out.extend(&$($mut)? call.args),
            // The body is over the lambda's own columns, not the input's: not a child.
            Expr::Lambda(lambda) => {
                out.push(&$($mut)? lambda.list);
                out.extend(&$($mut)? lambda.initial);
                out.extend(&$($mut)? lambda.captured);
            }
        }
        out
    }};
}

impl TreeNode for Expr {
    fn children(&self) -> Vec<&Expr> {
        expr_children!(self)
    }

    fn children_mut(&mut self) -> Vec<&mut Expr> {
        expr_children!(self, mut)
    }
}

/// The expressions of an aggregate call: its argument, its ORDER BY keys, its FILTER.
macro_rules! aggregate_exprs {
    ($out:ident, $aggregates:expr $(, $mut:tt)?) => {
        for call in $aggregates {
            $out.extend(&$($mut)? call.arg);
            $out.extend((&$($mut)? call.order).into_iter().map(|k| &$($mut)? k.expr));
            $out.extend(&$($mut)? call.filter);
        }
    };
}

/// The expressions of window function calls: arguments, PARTITION BY, then ORDER BY keys.
macro_rules! window_exprs {
    ($out:ident, $windows:expr $(, $mut:tt)?) => {
        for window in $windows {
            $out.extend(&$($mut)? window.args);
            $out.extend(&$($mut)? window.partition_by);
            $out.extend((&$($mut)? window.order_by).into_iter().map(|k| &$($mut)? k.expr));
        }
    };
}

macro_rules! logical_children {
    ($plan:expr $(, $mut:tt)?) => {
        match $plan {
            LogicalPlan::Scan { .. }
            | LogicalPlan::ParquetScan { .. }
            | LogicalPlan::Input { .. }
            | LogicalPlan::WorkingTable { .. }
            | LogicalPlan::ChangeRecords { .. }
            | LogicalPlan::Values { .. } => vec![],
            LogicalPlan::Filter { input, .. }
            | LogicalPlan::Project { input, .. }
            | LogicalPlan::Aggregate { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Window { input, .. }
            | LogicalPlan::Unnest { input, .. }
            | LogicalPlan::Limit { input, .. } => vec![&$($mut)? **input],
            LogicalPlan::Union { inputs, .. } => inputs.into_iter().collect(),
            LogicalPlan::Join { left, right, .. } => vec![&$($mut)? **left, &$($mut)? **right],
            LogicalPlan::JoinBlock { relations, .. } => relations.into_iter().collect(),
            LogicalPlan::Subquery { input, subquery, .. } => {
                vec![&$($mut)? **input, &$($mut)? **subquery]
            }
            LogicalPlan::RecursiveCte { anchor, step, finalize, .. } => {
                let mut children = vec![&$($mut)? **anchor, &$($mut)? **step];
                children.extend(finalize.into_iter().map(|f| &$($mut)? **f));
                children
            }
        }
    };
}

macro_rules! logical_exprs {
    ($plan:expr $(, $mut:tt)?) => {{
        let mut out = Vec::new();
        match $plan {
            LogicalPlan::Scan { .. }
            | LogicalPlan::ParquetScan { .. }
            | LogicalPlan::Input { .. }
            | LogicalPlan::WorkingTable { .. }
            | LogicalPlan::ChangeRecords { .. }
            | LogicalPlan::Limit { .. }
            | LogicalPlan::Union { .. }
            | LogicalPlan::RecursiveCte { .. } => {}
            LogicalPlan::Values { rows, .. } => out.extend(rows.into_iter().flatten()),
            LogicalPlan::Filter { predicate, .. } => out.push(predicate),
            LogicalPlan::Unnest { array, .. } => out.push(array),
            LogicalPlan::Project { exprs, .. } => out.extend(exprs),
            LogicalPlan::Aggregate {
                group, aggregates, ..
            } => {
                out.extend(group);
                aggregate_exprs!(out, aggregates $(, $mut)?);
            }
            LogicalPlan::Sort { keys, .. } => out.extend(keys.into_iter().map(|k| &$($mut)? k.expr)),
            LogicalPlan::Window { exprs, .. } => window_exprs!(out, exprs $(, $mut)?),
            LogicalPlan::Join { on, filter, .. } => {
                for (left, right) in on {
                    out.extend([left, right]);
                }
                out.extend(filter);
            }
            LogicalPlan::JoinBlock { predicates, .. } => out.extend(predicates),
            LogicalPlan::Subquery { kind, .. } => match kind {
                SubqueryKind::Filter { probe, .. } | SubqueryKind::Mark { probe } => {
                    out.extend(probe)
                }
                SubqueryKind::Scalar => {}
                SubqueryKind::Lateral { on, .. } => out.extend(on),
            },
        }
        out
    }};
}

impl TreeNode for LogicalPlan {
    fn children(&self) -> Vec<&LogicalPlan> {
        logical_children!(self)
    }

    fn children_mut(&mut self) -> Vec<&mut LogicalPlan> {
        logical_children!(self, mut)
    }
}

impl PlanNode for LogicalPlan {
    fn exprs(&self) -> Vec<&Expr> {
        logical_exprs!(self)
    }

    fn exprs_mut(&mut self) -> Vec<&mut Expr> {
        logical_exprs!(self, mut)
    }
}

macro_rules! physical_children {
    ($plan:expr $(, $mut:tt)?) => {
        match $plan {
            PhysicalPlan::TableScan { .. }
            | PhysicalPlan::Input { .. }
            | PhysicalPlan::ParquetScan { .. }
            | PhysicalPlan::Values { .. }
            | PhysicalPlan::WorkingTable { .. }
            | PhysicalPlan::ChangeRecords { .. } => vec![],
            PhysicalPlan::Window { input, .. }
            | PhysicalPlan::Filter { input, .. }
            | PhysicalPlan::Unnest { input, .. }
            | PhysicalPlan::Projection { input, .. }
            | PhysicalPlan::HashAggregate { input, .. }
            | PhysicalPlan::Sort { input, .. }
            | PhysicalPlan::Limit { input, .. }
            | PhysicalPlan::Exchange { input, .. } => vec![&$($mut)? **input],
            PhysicalPlan::Gather { fragment, .. } => vec![&$($mut)? **fragment],
            PhysicalPlan::Union { inputs, .. } => inputs.into_iter().collect(),
            PhysicalPlan::RecursiveCte { anchor, step, finalize, .. } => {
                let mut children = vec![&$($mut)? **anchor, &$($mut)? **step];
                children.extend(finalize.into_iter().map(|f| &$($mut)? **f));
                children
            }
            PhysicalPlan::HashJoin { left, right, .. } => vec![&$($mut)? **left, &$($mut)? **right],
        }
    };
}

macro_rules! physical_exprs {
    ($plan:expr $(, $mut:tt)?) => {{
        let mut out = Vec::new();
        match $plan {
            PhysicalPlan::Input { .. }
            | PhysicalPlan::WorkingTable { .. }
            | PhysicalPlan::ChangeRecords { .. }
            | PhysicalPlan::Limit { .. }
            | PhysicalPlan::Union { .. }
            | PhysicalPlan::Gather { .. }
            | PhysicalPlan::RecursiveCte { .. } => {}
            PhysicalPlan::TableScan { filter, .. } | PhysicalPlan::ParquetScan { filter, .. } => {
                out.extend(filter)
            }
            PhysicalPlan::Values { rows, .. } => out.extend(rows.into_iter().flatten()),
            PhysicalPlan::Filter { predicate, .. } => out.push(predicate),
            PhysicalPlan::Unnest { array, .. } => out.push(array),
            PhysicalPlan::Projection { exprs, .. } | PhysicalPlan::Exchange { keys: exprs, .. } => {
                out.extend(exprs)
            }
            PhysicalPlan::HashAggregate {
                group, aggregates, ..
            } => {
                out.extend(group);
                aggregate_exprs!(out, aggregates $(, $mut)?);
            }
            PhysicalPlan::Sort { keys, .. } => out.extend(keys.into_iter().map(|k| &$($mut)? k.expr)),
            PhysicalPlan::Window { exprs, .. } => window_exprs!(out, exprs $(, $mut)?),
            PhysicalPlan::HashJoin {
                left_keys,
                right_keys,
                filter,
                ..
            } => {
                out.extend(left_keys);
                out.extend(right_keys);
                out.extend(filter);
            }
        }
        out
    }};
}

impl TreeNode for PhysicalPlan {
    fn children(&self) -> Vec<&PhysicalPlan> {
        physical_children!(self)
    }

    fn children_mut(&mut self) -> Vec<&mut PhysicalPlan> {
        physical_children!(self, mut)
    }
}

impl PlanNode for PhysicalPlan {
    fn exprs(&self) -> Vec<&Expr> {
        physical_exprs!(self)
    }

    fn exprs_mut(&mut self) -> Vec<&mut Expr> {
        physical_exprs!(self, mut)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;
    use crate::expr::BinaryOp;
    use crate::physical::create_physical_plan;
    use crate::scalar::ScalarValue;

    fn column(index: usize) -> Expr {
        Expr::column(index, format!("c{index}"), DataType::Int64)
    }

    fn binary(op: BinaryOp, left: Expr, right: Expr) -> Expr {
        Expr::Binary {
            op,
            left: Box::new(left),
            right: Box::new(right),
        }
    }

    fn literal(value: i64) -> Expr {
        Expr::Literal(ScalarValue::Int64(value))
    }

    /// `SELECT c0 + 1 FROM (VALUES (1, 2)) WHERE c1 > 1`, as a plan.
    fn plan() -> LogicalPlan {
        let schema = Arc::new(Schema::new(vec![
            Field::new("c0", DataType::Int64, true),
            Field::new("c1", DataType::Int64, true),
        ]));
        let values = LogicalPlan::Values {
            schema,
            rows: vec![vec![literal(1), literal(2)]],
        };
        let filter = LogicalPlan::Filter {
            input: Box::new(values),
            predicate: binary(BinaryOp::Gt, column(1), literal(1)),
        };
        filter.project(
            vec![binary(BinaryOp::Plus, column(0), literal(1))],
            vec!["sum".into()],
        )
    }

    #[test]
    fn visits_parents_before_children_and_stops_searching_at_the_first_match() {
        let plan = plan();
        let mut names = Vec::new();
        plan.visit(&mut |node| names.push(node.to_string().lines().next().unwrap().to_string()));
        assert!(names[0].starts_with("Project"), "{names:?}");
        assert!(names[1].starts_with("Filter"), "{names:?}");
        assert!(names[2].starts_with("Values"), "{names:?}");
        let mut seen = 0;
        assert!(plan.exists(&mut |node| {
            seen += 1;
            matches!(node, LogicalPlan::Filter { .. })
        }));
        assert_eq!(seen, 2, "the search went past the filter");
    }

    #[test]
    fn reaches_the_expressions_of_every_node_and_inside_them() {
        let plan = plan();
        let mut literals = Vec::new();
        plan.visit_exprs(&mut |e| {
            if let Expr::Literal(ScalarValue::Int64(v)) = e {
                literals.push(*v);
            }
        });
        literals.sort();
        assert_eq!(literals, vec![1, 1, 1, 2]);
        assert!(plan.any_expr(&mut |e| matches!(e, Expr::Literal(ScalarValue::Int64(2)))));
        assert!(!plan.any_expr(&mut |e| matches!(e, Expr::OuterColumn { .. })));
    }

    #[test]
    fn rewrites_expressions_and_nodes_in_place() {
        let mut plan = plan();
        plan.map_exprs(&mut |e| {
            let mut e = e.clone();
            e.transform_up(&mut |e| {
                if let Expr::Literal(ScalarValue::Int64(v)) = e {
                    *v += 10;
                }
                Ok::<_, ()>(())
            })?;
            Ok::<_, ()>(e)
        })
        .unwrap();
        let mut literals = Vec::new();
        plan.visit_exprs(&mut |e| {
            if let Expr::Literal(ScalarValue::Int64(v)) = e {
                literals.push(*v);
            }
        });
        literals.sort();
        assert_eq!(literals, vec![11, 11, 11, 12]);

        // Bottom-up, a node is replaced whole: the filter goes, its input takes its place.
        plan.transform_up(&mut |node| {
            if let LogicalPlan::Filter { input, .. } = node {
                let schema = input.schema();
                *node = std::mem::replace(input.as_mut(), LogicalPlan::Input { schema });
            }
            Ok::<_, ()>(())
        })
        .unwrap();
        let text = plan.to_string();
        assert!(!text.contains("Filter"), "{text}");
        assert!(text.contains("Values"), "{text}");
    }

    #[test]
    fn an_error_stops_a_rewrite() {
        let mut plan = create_physical_plan(&plan());
        let mut calls = 0;
        let result = plan.transform_down(&mut |_| {
            calls += 1;
            Err("stop")
        });
        assert_eq!(result, Err("stop"));
        assert_eq!(calls, 1);
    }
}
