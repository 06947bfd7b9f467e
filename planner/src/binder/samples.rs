//! `TABLESAMPLE` on a table in FROM: `BERNOULLI (p)` and `SYSTEM (p)` keep each row with
//! probability p percent (SYSTEM, which PostgreSQL draws by pages, is drawn by rows here);
//! `(n ROWS)` keeps n rows drawn uniformly (all of them when there are fewer). Draws differ
//! from run to run: `REPEATABLE (seed)` is refused by name.

use arrow::datatypes::DataType;
use pondra_parser::ast;

use crate::expr::{BinaryOp, Expr, ScalarFunction, SortKey};
use crate::logical::LogicalPlan;
use crate::scalar::ScalarValue;
use crate::{Result, bind_err, unsupported};

/// `plan` sampled as `sample` says.
pub(super) fn sampled(plan: LogicalPlan, sample: &ast::TableSampleKind) -> Result<LogicalPlan> {
    let (ast::TableSampleKind::BeforeTableAlias(sample)
    | ast::TableSampleKind::AfterTableAlias(sample)) = sample;
    if sample.seed.is_some() {
        return Err(unsupported!("TABLESAMPLE ... REPEATABLE (a seeded sample)"));
    }
    if sample.bucket.is_some() || sample.offset.is_some() {
        return Err(unsupported!("TABLESAMPLE with BUCKET or OFFSET"));
    }
    if let Some(ast::TableSampleMethod::Block) = sample.name {
        return Err(unsupported!("TABLESAMPLE BLOCK"));
    }
    let Some(quantity) = &sample.quantity else {
        return Err(bind_err!(
            "TABLESAMPLE needs a percentage or a count of rows"
        ));
    };
    let amount = number(&quantity.value)?;
    let random = Expr::Function {
        func: ScalarFunction::Random,
        args: Vec::new(),
        data_type: DataType::Float64,
    };
    match quantity.unit {
        Some(ast::TableSampleUnit::Rows) => {
            if amount < 0.0 || amount.fract() != 0.0 {
                return Err(bind_err!(
                    "a sample of rows needs a whole count, not {amount}"
                ));
            }
            let shuffled = LogicalPlan::Sort {
                input: Box::new(plan),
                keys: vec![SortKey {
                    expr: random,
                    descending: false,
                    nulls_first: false,
                }],
                fetch: None,
            };
            Ok(LogicalPlan::Limit {
                input: Box::new(shuffled),
                skip: 0,
                fetch: Some(amount as usize),
            })
        }
        _ => {
            if !(0.0..=100.0).contains(&amount) {
                return Err(bind_err!(
                    "sample percentage must be between 0 and 100, not {amount}"
                ));
            }
            Ok(LogicalPlan::Filter {
                input: Box::new(plan),
                predicate: Expr::Binary {
                    op: BinaryOp::Lt,
                    left: Box::new(random),
                    right: Box::new(Expr::Literal(ScalarValue::Float64(amount / 100.0))),
                },
            })
        }
    }
}

fn number(value: &ast::Expr) -> Result<f64> {
    let text = match value {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.clone(),
            other => return Err(bind_err!("TABLESAMPLE needs a number, not {other}")),
        },
        other => {
            return Err(bind_err!(
                "TABLESAMPLE needs a constant number, not {other}"
            ));
        }
    };
    text.parse()
        .map_err(|_| bind_err!("TABLESAMPLE needs a number, not {text}"))
}
