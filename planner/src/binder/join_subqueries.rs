//! A join whose ON condition holds a subquery (`l LEFT JOIN r ON EXISTS (SELECT ... l.a ...
//! r.b)`): the condition is bound as WHERE binds one over the pairs of rows, so that its
//! subqueries become joins as WHERE's do; an outer join then adds the rows of the side it keeps
//! that no pair matched, told apart by a row number.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use pondra_parser::ast;

use super::Binder;
use super::scope::{Scope, ScopeColumn};
use crate::Result;
use crate::expr::{Expr, Frame, FrameBound, JoinKind, WindowExpr, WindowFunction};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;

/// Which sides' unmatched rows an outer join keeps.
#[derive(Clone, Copy)]
pub(super) struct Kept {
    pub left: bool,
    pub right: bool,
}

impl Binder<'_> {
    /// `left` joined to `right` on `condition`, over `left_scope` then `right_scope`.
    pub(super) fn join_on_subqueries(
        &self,
        (left, right): (LogicalPlan, LogicalPlan),
        kept: Kept,
        condition: &ast::Expr,
        (left_scope, right_scope): (&Scope, &Scope),
    ) -> Result<LogicalPlan> {
        let (left_width, right_width) = (left_scope.columns.len(), right_scope.columns.len());
        assert_eq!(left.schema().fields().len(), left_width);
        assert_eq!(right.schema().fields().len(), right_width);
        let (left, right) = (numbered(left), numbered(right));
        let mut scope = left_scope.clone();
        scope.columns.push(row_column());
        scope.columns.extend(right_scope.columns.iter().cloned());
        scope.columns.push(row_column());
        let relations = vec![left.clone(), right.clone()];
        let pairs = self.bind_where(relations, vec![], &scope, Some(condition))?;
        let left_row = left_width;
        let right_row = left_width + 1 + right_width;
        let left_columns: Vec<usize> = (0..left_width).collect();
        let right_columns: Vec<usize> = (left_width + 1..right_row).collect();
        let pairs_schema = pairs.schema();
        let mut parts = vec![pick(&pairs, &left_columns, &right_columns, None)];
        if kept.left {
            let unmatched = unmatched(left, &pairs, left_width, left_row);
            let nulls: Vec<Field> = right_columns
                .iter()
                .map(|c| pairs_schema.field(*c).clone())
                .collect();
            parts.push(pad(unmatched, left_width, &nulls, false));
        }
        if kept.right {
            let unmatched = unmatched(right, &pairs, right_width, right_row);
            let nulls: Vec<Field> = left_columns
                .iter()
                .map(|c| pairs_schema.field(*c).clone())
                .collect();
            parts.push(pad(unmatched, right_width, &nulls, true));
        }
        if parts.len() == 1 {
            return Ok(parts.pop().expect("one part"));
        }
        let fields: Vec<Field> = parts[0]
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect();
        Ok(LogicalPlan::Union {
            inputs: parts,
            schema: Arc::new(Schema::new(fields)),
        })
    }
}

fn row_column() -> ScopeColumn {
    ScopeColumn {
        qualifier: None,
        name: "\u{1}row".into(),
        data_type: DataType::Int64,
        hidden: true,
        merged: false,
    }
}

/// `plan` with each row's number as a last column.
fn numbered(plan: LogicalPlan) -> LogicalPlan {
    let number = WindowExpr {
        func: WindowFunction::RowNumber,
        args: vec![],
        partition_by: vec![],
        order_by: vec![],
        frame: Frame::rows(
            FrameBound::UnboundedPreceding,
            FrameBound::UnboundedFollowing,
        ),
        data_type: DataType::Int64,
        ignore_nulls: false,
    };
    let field = Field::new("\u{1}row", DataType::Int64, true);
    LogicalPlan::Window {
        schema: crate::types::schema_with(&plan.schema(), vec![field]),
        input: Box::new(plan),
        exprs: vec![number],
    }
}

/// The rows of `side` (numbered in column `width`) whose number no pair holds (at `row`).
fn unmatched(side: LogicalPlan, pairs: &LogicalPlan, width: usize, row: usize) -> LogicalPlan {
    let number = Expr::column(width, "\u{1}row", DataType::Int64);
    let matched = Expr::column(row, "\u{1}row", DataType::Int64);
    LogicalPlan::join(
        side,
        pairs.clone(),
        JoinKind::Anti,
        vec![(number, matched)],
        None,
    )
}

/// The columns `first` then `second` of `plan` (or NULLs of `nulls`' types), under their names.
fn pick(
    plan: &LogicalPlan,
    first: &[usize],
    second: &[usize],
    nulls: Option<&[Field]>,
) -> LogicalPlan {
    let schema = plan.schema();
    let column = |c: &usize| {
        let f = schema.field(*c);
        (
            Expr::column(*c, f.name(), f.data_type().clone()),
            f.name().clone(),
        )
    };
    let mut columns: Vec<(Expr, String)> = first.iter().map(column).collect();
    match nulls {
        Some(nulls) => columns.extend(nulls.iter().map(null_of)),
        None => columns.extend(second.iter().map(column)),
    }
    let (exprs, names) = columns.into_iter().unzip();
    plan.clone().project(exprs, names)
}

fn null_of(field: &Field) -> (Expr, String) {
    let value = Expr::Literal(ScalarValue::Null).cast(field.data_type());
    (value, field.name().clone())
}

/// An unmatched side's rows (its first `width` columns) with NULLs for the other side's
/// columns, on the left of them unless `nulls_first`.
fn pad(rows: LogicalPlan, width: usize, nulls: &[Field], nulls_first: bool) -> LogicalPlan {
    let own: Vec<usize> = (0..width).collect();
    if !nulls_first {
        return pick(&rows, &own, &[], Some(nulls));
    }
    let schema = rows.schema();
    let mut columns: Vec<(Expr, String)> = nulls.iter().map(null_of).collect();
    columns.extend(own.iter().map(|c| {
        let f = schema.field(*c);
        (
            Expr::column(*c, f.name(), f.data_type().clone()),
            f.name().clone(),
        )
    }));
    let (exprs, names) = columns.into_iter().unzip();
    rows.project(exprs, names)
}
