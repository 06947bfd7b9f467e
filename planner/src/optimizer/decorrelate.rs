//! Decorrelation: each subquery the binder left asked of every row of its input (`Subquery`
//! nodes: EXISTS, IN and scalar subqueries) becomes a join, so that no subquery runs per row.
//!
//! The predicates that read outer columns are pulled out of the subquery's plan (`pull_up`),
//! leaving a plan that runs once for all outer rows; they become the join's keys and filter.
//! EXISTS and IN in WHERE become semi and anti joins, moved down the input where they filter
//! early (`semi_pushdown`). A scalar subquery becomes a left join to an aggregate grouped by its
//! correlation keys, whose input is first restricted to the keys the outer rows hold where
//! that pays (`key_domain`); or, correlated other than by equality, a join over the domain of
//! its outer columns. A LATERAL subquery is rewritten to run over the domain of its outer
//! columns and joined back on them (`domain_join`, ADR 0070). Nodes are planned from the leaves up: a subquery's own subqueries, and
//! the filters of a query block below its values, are joins by the time a node is planned,
//! which is what `key_domain` and `semi_pushdown` estimate.

use pondra_catalog::Snapshot;

use crate::expr::{BinaryOp, Expr, JoinKind};
use crate::logical::{LogicalPlan, SubqueryKind};
use crate::optimizer::domain_join::{join_over_domain, mark_over_domain};
use crate::optimizer::key_domain::restrict_to_outer_keys;
use crate::optimizer::pull_up::{
    SubqueryUse, join_condition, join_scalar_by_domain, pull_up, to_joined,
};
use crate::optimizer::semi_pushdown::push_down_semi_join;
use crate::tree::{PlanNode, TreeNode};
use crate::{Result, unsupported};

/// The pass: every `Subquery` node, from the leaves up, as a join.
pub fn decorrelate(plan: &mut LogicalPlan, snapshot: &Snapshot) -> Result<()> {
    plan.transform_up(&mut |node| {
        if !matches!(node, LogicalPlan::Subquery { .. }) {
            return Ok(());
        }
        let LogicalPlan::Subquery {
            input,
            subquery,
            kind,
            ..
        } = std::mem::replace(node, LogicalPlan::empty())
        else {
            unreachable!("matched above")
        };
        // Columns of queries beyond this one are constants to this join; after it they are a
        // level nearer (at depth 1, outer columns of the query the join is in).
        let subquery = nearer(*subquery, DeepStep::Approach);
        let joined = join_subquery(*input, subquery, kind, snapshot)?;
        *node = nearer(joined, DeepStep::Arrive);
        Ok(())
    })
}

#[derive(Clone, Copy)]
enum DeepStep {
    /// Depth d becomes d - 1; depth 1 then marks the columns arrived at their query.
    Approach,
    /// Depth 1 becomes an `OuterColumn`.
    Arrive,
}

fn nearer(mut plan: LogicalPlan, step: DeepStep) -> LogicalPlan {
    fn map(expr: &Expr, step: DeepStep) -> Expr {
        match (expr, step) {
            (Expr::DeepOuterColumn(column), DeepStep::Approach) => {
                let mut nearer = column.as_ref().clone();
                assert!(nearer.depth >= 2, "depth 1 arrives as the join is built");
                nearer.depth -= 1;
                Expr::DeepOuterColumn(Box::new(nearer))
            }
            (Expr::DeepOuterColumn(column), DeepStep::Arrive) if column.depth == 1 => {
                Expr::OuterColumn {
                    index: column.index,
                    name: column.name.clone(),
                    data_type: column.data_type.clone(),
                }
            }
            (other, _) => other.map_children(&mut |e| map(e, step)),
        }
    }
    let has_deep = plan.any_expr(&mut |e| matches!(e, Expr::DeepOuterColumn(_)));
    if has_deep {
        plan.map_exprs(&mut |e| Ok::<_, std::convert::Infallible>(map(e, step)))
            .expect("infallible");
    }
    plan
}

/// `subquery` asked of every row of `input` as a join.
fn join_subquery(
    input: LogicalPlan,
    subquery: LogicalPlan,
    kind: SubqueryKind,
    snapshot: &Snapshot,
) -> Result<LogicalPlan> {
    let width = input.schema().fields().len();
    match kind {
        SubqueryKind::Filter { join, probe } => {
            let pulled_up = join_filter(input.clone(), join, subquery.clone(), probe.clone());
            let joined = match pulled_up {
                Ok(joined) => joined,
                Err(e) if matches!(join, JoinKind::Semi | JoinKind::Anti) => {
                    // `pull_up` cannot take the correlation out: run it over the domain.
                    let on = probe.map(|probe| {
                        let field = subquery.schema().field(0).clone();
                        let value = Expr::column(width, field.name(), field.data_type().clone());
                        Expr::Binary {
                            op: BinaryOp::Eq,
                            left: Box::new(probe),
                            right: Box::new(value),
                        }
                    });
                    join_over_domain(input, subquery, join, on).map_err(|_| e)?
                }
                Err(e) => return Err(e),
            };
            Ok(push_down_semi_join(joined, snapshot))
        }
        SubqueryKind::Mark { probe } => {
            let join = if probe.is_some() {
                JoinKind::MarkIn
            } else {
                JoinKind::Mark
            };
            join_filter(input.clone(), join, subquery.clone(), probe.clone()).or_else(|e| {
                // `pull_up` cannot take the correlation out: count over the domain.
                mark_over_domain(input, subquery, probe).map_err(|_| e)
            })
        }
        SubqueryKind::Scalar => {
            let pulled_up = join_scalar(input.clone(), subquery.clone(), width, snapshot);
            pulled_up.or_else(|e| {
                // `pull_up` cannot take the correlation out: run it over the domain.
                join_over_domain(input, subquery, JoinKind::Single, None).map_err(|_| e)
            })
        }
        SubqueryKind::Lateral { join, on } => join_over_domain(input, subquery, join, on),
    }
}

/// Adds a correlated scalar subquery's value as column `position` (the outer plan has exactly
/// `position` columns): a left join to the decorrelated subquery on its correlation keys.
fn join_scalar(
    plan: LogicalPlan,
    subquery: LogicalPlan,
    position: usize,
    snapshot: &Snapshot,
) -> Result<LogicalPlan> {
    assert_eq!(plan.schema().fields().len(), position);
    if let LogicalPlan::Project { exprs, .. } = &subquery
        && exprs.iter().any(Expr::has_outer)
        && !is_scalar_aggregate(&subquery)
    {
        return join_scalar_computed_after(plan, subquery, position);
    }
    if !is_scalar_aggregate(&subquery) {
        // At most one row may match each outer row: a single join checks it as it joins.
        let (pulled_up, pulled) = pull_up(subquery, SubqueryUse::Scalar)?;
        // Without an equality to join on, every pair is checked against the pulled predicates.
        let (keys, filter) = join_condition(position, pulled);
        let joined = LogicalPlan::join(plan, pulled_up, JoinKind::Single, keys, filter);
        return Ok(joined.first_columns(position + 1));
    }
    let (pulled_up, pulled) = match pull_up(subquery.clone(), SubqueryUse::Scalar) {
        Ok(result) => result,
        Err(_) => return join_scalar_by_domain(plan, subquery, position),
    };
    let (keys, filter) = join_condition(position, pulled);
    if keys.is_empty() || filter.is_some() {
        return join_scalar_by_domain(plan, subquery, position);
    }
    let pulled_up = restrict_to_outer_keys(&plan, pulled_up, &keys, snapshot);
    let joined = LogicalPlan::join(plan, pulled_up, JoinKind::Left, keys, None);
    Ok(joined.first_columns(position + 1))
}

/// `join_scalar` for a subquery whose value reads outer columns (`SELECT f(s.x, outer.y) FROM
/// s WHERE s.k = outer.k`): the subquery gives its input's columns and a marker, joined as
/// usual, and the value is computed over the joined row; NULL where no row matched.
fn join_scalar_computed_after(
    plan: LogicalPlan,
    subquery: LogicalPlan,
    position: usize,
) -> Result<LogicalPlan> {
    use crate::scalar::ScalarValue;
    let LogicalPlan::Project {
        input,
        exprs,
        schema,
    } = subquery
    else {
        unreachable!("a projection")
    };
    let [value] = exprs.as_slice() else {
        return Err(unsupported!(
            "a subquery used as an expression with several columns"
        ));
    };
    let input_schema = input.schema();
    let width = input_schema.fields().len();
    let mut columns = Expr::columns_of(&input_schema);
    columns.push(Expr::Literal(ScalarValue::Boolean(true)));
    let mut names: Vec<String> = input_schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    names.push("matched".into());
    let (pulled_up, pulled) = pull_up(input.project(columns, names), SubqueryUse::Scalar)?;
    // Without an equality to join on, every pair is checked against the pulled predicates.
    let (keys, filter) = join_condition(position, pulled);
    let joined = LogicalPlan::join(plan, pulled_up, JoinKind::Single, keys, filter);
    let joined_schema = joined.schema();
    let matched = Expr::column(
        position + width,
        "matched",
        arrow::datatypes::DataType::Boolean,
    );
    let value = to_joined(value, position);
    let data_type = value.data_type();
    let result = Expr::Case {
        branches: vec![(Expr::IsNotNull(Box::new(matched)), value)],
        otherwise: None,
        data_type,
    };
    let mut exprs = Expr::columns_of(&joined_schema);
    exprs.truncate(position);
    exprs.push(result);
    let mut names: Vec<String> = joined_schema.fields()[..position]
        .iter()
        .map(|f| f.name().clone())
        .collect();
    names.push(schema.field(0).name().clone());
    Ok(joined.project(exprs, names))
}

/// True for `SELECT f(aggregates) ...` without GROUP BY: one row whatever the input.
fn is_scalar_aggregate(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Aggregate { group, .. } => group.is_empty(),
        LogicalPlan::Project { input, .. } => is_scalar_aggregate(input),
        _ => false,
    }
}

/// `EXISTS`, `NOT EXISTS`, `IN` and `NOT IN` (and their marks) as a join of `plan` with the
/// decorrelated subquery.
fn join_filter(
    plan: LogicalPlan,
    kind: JoinKind,
    subquery: LogicalPlan,
    probe: Option<Expr>,
) -> Result<LogicalPlan> {
    let width = plan.schema().fields().len();
    let (subquery, pulled) = pull_up(subquery, SubqueryUse::Filter)?;
    let (mut keys, filter) = join_condition(width, pulled);
    if let Some(probe) = probe {
        let field = subquery.schema().field(0).clone();
        assert_eq!(
            &probe.data_type(),
            field.data_type(),
            "the binder casts IN's sides to one type"
        );
        let value = Expr::column(0, field.name(), field.data_type().clone());
        keys.insert(0, (probe, value));
    }
    let correlated = keys.len() != 1 || filter.is_some();
    if kind == JoinKind::NullAwareAnti && correlated {
        return Ok(correlated_not_in(plan, subquery, keys, filter, width));
    }
    if kind == JoinKind::MarkIn && correlated {
        return Err(unsupported!(
            "IN with a correlated subquery as a value (in WHERE it is built)"
        ));
    }
    Ok(LogicalPlan::join(plan, subquery, kind, keys, filter))
}

/// `x NOT IN (correlated subquery)` in a filter: the rows for which no row of the subquery,
/// among those the correlation matches, equals `x`, is NULL, or meets a NULL `x` — an anti
/// join on the correlation with that condition. A NOT IN that is NULL drops the row as a
/// false one does, so the two agree wherever a filter reads them.
fn correlated_not_in(
    plan: LogicalPlan,
    subquery: LogicalPlan,
    mut keys: Vec<(Expr, Expr)>,
    filter: Option<Expr>,
    width: usize,
) -> LogicalPlan {
    let (probe, value) = keys.remove(0);
    let value = super::pull_up::to_joined(&value, width);
    let or = |left: Expr, right: Expr| Expr::Binary {
        op: BinaryOp::Or,
        left: Box::new(left),
        right: Box::new(right),
    };
    let equal = Expr::Binary {
        op: BinaryOp::Eq,
        left: Box::new(value.clone()),
        right: Box::new(probe.clone()),
    };
    let blocks = or(
        or(equal, Expr::IsNull(Box::new(value))),
        Expr::IsNull(Box::new(probe)),
    );
    let filter = Expr::and_all(filter.into_iter().chain([blocks]).collect());
    LogicalPlan::join(plan, subquery, JoinKind::Anti, keys, filter)
}
