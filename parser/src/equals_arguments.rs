//! sqlparser's DuckDB dialect reads `f(a = b)` as an argument named `a`; DuckDB itself reads
//! it as the comparison `a = b` (its named arguments are written `a := b`). Each such argument
//! of a function called in an expression is turned back into the comparison, so that
//! `if(i = 0, x, y)` and `count(x = 1)` mean what they say.

use std::ops::ControlFlow;

use sqlparser::ast::{self, VisitMut, VisitorMut};

struct EqualsArguments;

impl VisitorMut for EqualsArguments {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        let ast::Expr::Function(function) = expr else {
            return ControlFlow::Continue(());
        };
        let ast::FunctionArguments::List(list) = &mut function.args else {
            return ControlFlow::Continue(());
        };
        for argument in &mut list.args {
            let (left, right) = match argument {
                ast::FunctionArg::Named {
                    name,
                    arg: ast::FunctionArgExpr::Expr(value),
                    operator: ast::FunctionArgOperator::Equals,
                } => (ast::Expr::Identifier(name.clone()), value.clone()),
                ast::FunctionArg::ExprNamed {
                    name,
                    arg: ast::FunctionArgExpr::Expr(value),
                    operator: ast::FunctionArgOperator::Equals,
                } => (name.clone(), value.clone()),
                _ => continue,
            };
            let comparison = ast::Expr::BinaryOp {
                left: Box::new(left),
                op: ast::BinaryOperator::Eq,
                right: Box::new(right),
            };
            *argument = ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(comparison));
        }
        ControlFlow::Continue(())
    }
}

/// Turns `f(a = b)`'s named argument into the comparison `a = b` throughout `statement`.
pub(crate) fn equals_as_comparisons(statement: &mut ast::Statement) {
    let _ = statement.visit(&mut EqualsArguments);
}

#[cfg(test)]
mod tests {
    use sqlparser::ast;

    #[test]
    fn an_equals_argument_is_a_comparison() {
        let parsed = crate::parse_sql("SELECT if(i = 0, NULL, i), count(t.x = 1) FROM t")
            .expect("parses")
            .remove(0);
        let crate::Statement::Sql(statement) = parsed.statement else {
            panic!("a SQL statement");
        };
        let ast::Statement::Query(query) = *statement else {
            panic!("a query");
        };
        let ast::SetExpr::Select(select) = *query.body else {
            panic!("a select");
        };
        for item in &select.projection {
            let ast::SelectItem::UnnamedExpr(ast::Expr::Function(function)) = item else {
                panic!("a function call");
            };
            let ast::FunctionArguments::List(list) = &function.args else {
                panic!("arguments");
            };
            assert!(matches!(
                &list.args[0],
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::BinaryOp {
                    op: ast::BinaryOperator::Eq,
                    ..
                }))
            ));
        }
    }
}
