//! Models in SQL (ADR 0082): `ai_embed(text [, model])` gives a vector of 4-byte floats, and
//! `ai_complete(prompt [, model])` gives text, each answered by the OpenAI-compatible endpoint
//! of a secret of type `openai`. The executor asks the endpoint; the binder only types the call.

use arrow::datatypes::DataType;

use crate::expr::{Expr, ScalarFunction};
use crate::physical::PhysicalPlan;
use crate::scalar::ScalarValue;
use crate::tree::PlanNode;
use crate::types::list_of;
use crate::{Result, bind_err};

/// The secret type whose endpoint answers the calls.
pub const OPENAI_SECRET_TYPE: &str = "openai";

/// What a call asks a model for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModelOp {
    /// `ai_embed`: an embedding of the text.
    Embed,
    /// `ai_complete`: the model's answer to the prompt.
    Complete,
}

impl ModelOp {
    /// The function's name in SQL.
    pub fn name(self) -> &'static str {
        match self {
            ModelOp::Embed => "ai_embed",
            ModelOp::Complete => "ai_complete",
        }
    }

    /// The model a call names none: OpenAI's smallest of each kind.
    pub fn default_model(self) -> &'static str {
        match self {
            ModelOp::Embed => "text-embedding-3-small",
            ModelOp::Complete => "gpt-4o-mini",
        }
    }

    /// The kind of answer, as the lake's cache keys name it.
    pub fn kind(self) -> &'static str {
        match self {
            ModelOp::Embed => "embed",
            ModelOp::Complete => "complete",
        }
    }

    /// What a call returns: a vector (a list of 4-byte floats, ADR 0082), or text.
    pub fn returns(self) -> DataType {
        match self {
            ModelOp::Embed => list_of(DataType::Float32),
            ModelOp::Complete => DataType::Utf8,
        }
    }
}

/// The bound call when `name` is a model function; `None` for any other name.
pub(crate) fn model_call(name: &str, args: &[Expr]) -> Option<Result<Expr>> {
    let op = match name {
        "ai_embed" => ModelOp::Embed,
        "ai_complete" => ModelOp::Complete,
        _ => return None,
    };
    Some(bind_model_call(op, args))
}

/// The text (or NULL) and the model (the default when not given) a call passes.
fn bind_model_call(op: ModelOp, args: &[Expr]) -> Result<Expr> {
    let name = op.name();
    let (input, model) = match args {
        [input] => (input, None),
        [input, model] => (input, Some(model)),
        _ => {
            return Err(bind_err!(
                "{name} takes the text and, optionally, a model's name: {name}(text [, model])"
            ));
        }
    };
    let text = |arg: &Expr, what: &str| match arg.data_type() {
        DataType::Utf8 | DataType::Null => Ok(arg.clone().cast(&DataType::Utf8)),
        other => Err(bind_err!(
            "{name} takes text as its {what}, not {}",
            crate::binder::type_name(&other)
        )),
    };
    let default_model = || Expr::Literal(ScalarValue::Utf8(op.default_model().to_string()));
    let model = match model {
        Some(model) => text(model, "model")?,
        None => default_model(),
    };
    Ok(Expr::Function {
        func: ScalarFunction::Model(op),
        args: vec![text(input, "input")?, model],
        data_type: op.returns(),
    })
}

/// Whether `plan` calls a model anywhere: such a plan runs on the node that runs its statement,
/// which commits the answers it gets.
pub fn calls_models(plan: &PhysicalPlan) -> bool {
    plan.any_expr(&mut |expr| {
        matches!(
            expr,
            Expr::Function {
                func: ScalarFunction::Model(_),
                ..
            }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(value: &str) -> Expr {
        Expr::Literal(ScalarValue::Utf8(value.into()))
    }

    #[test]
    fn calls_are_typed_with_the_default_model_filled_in() {
        let embed = model_call("ai_embed", &[text("hello")]).unwrap().unwrap();
        let Expr::Function {
            func,
            args,
            data_type,
        } = &embed
        else {
            panic!("a function call: {embed:?}");
        };
        assert_eq!(*func, ScalarFunction::Model(ModelOp::Embed));
        assert_eq!(args[1], text("text-embedding-3-small"));
        assert_eq!(*data_type, list_of(DataType::Float32));
        let complete = model_call("ai_complete", &[text("hi"), text("m")]).unwrap();
        assert_eq!(complete.unwrap().data_type(), DataType::Utf8);
        assert!(model_call("lower", &[text("x")]).is_none());
    }

    #[test]
    fn calls_refuse_other_arities_and_types() {
        let number = Expr::Literal(ScalarValue::Int32(1));
        let refused = model_call("ai_embed", &[number]).unwrap().unwrap_err();
        assert!(refused.to_string().contains("takes text"), "{refused}");
        let refused = model_call("ai_complete", &[]).unwrap().unwrap_err();
        assert!(
            refused.to_string().contains("ai_complete(text"),
            "{refused}"
        );
    }
}
