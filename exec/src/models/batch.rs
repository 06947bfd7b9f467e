//! One batch of `ai_embed` or `ai_complete` calls: its distinct inputs looked up, the missing
//! ones asked of the endpoint per model, then the answers laid out row by row.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Float32Builder, ListBuilder, StringArray, StringBuilder,
};
use bytes::Bytes;
use pondra_planner::ModelOp;

use super::{StatementModels, answer_key};
use crate::control::StatementControl;
use crate::{ExecError, Result};

/// The values of `op` over `rows` rows of `args`: the input text, then the model's name. NULL
/// where either is NULL.
pub(crate) fn evaluate_model(op: ModelOp, args: &[ArrayRef], rows: usize) -> Result<ArrayRef> {
    let [inputs, models] = args else {
        unreachable!("the binder gives a model call its text and its model");
    };
    let (inputs, models) = (inputs.as_string::<i32>(), models.as_string::<i32>());
    assert_eq!(inputs.len(), rows, "one input per row");
    let control = crate::control::current().ok_or_else(|| no_models(op))?;
    let statement = control.models().ok_or_else(|| no_models(op))?.clone();
    let keys = row_keys(op, inputs, models);
    let answers = answers(op, &statement, &control, &keys, inputs, models)?;
    match op {
        ModelOp::Embed => vectors(&keys, &answers),
        ModelOp::Complete => texts(&keys, &answers),
    }
}

fn no_models(op: ModelOp) -> ExecError {
    ExecError::Execution(format!(
        "{} runs only in a statement a node runs, which reaches the model's endpoint",
        op.name()
    ))
}

/// Each row's answer key; none where the input or the model is NULL.
fn row_keys(op: ModelOp, inputs: &StringArray, models: &StringArray) -> Vec<Option<String>> {
    (0..inputs.len())
        .map(|row| {
            if inputs.is_null(row) || models.is_null(row) {
                return None;
            }
            Some(answer_key(op, models.value(row), inputs.value(row)))
        })
        .collect()
}

/// The answer of every distinct key of `keys`: those the statement or the lake holds, then the
/// rest asked of the endpoint, one call per model.
fn answers(
    op: ModelOp,
    statement: &StatementModels,
    control: &Arc<StatementControl>,
    keys: &[Option<String>],
    inputs: &StringArray,
    models: &StringArray,
) -> Result<HashMap<String, Bytes>> {
    // Each distinct key with the first row that has it.
    let mut seen = HashSet::new();
    let distinct: Vec<(&str, usize)> = keys
        .iter()
        .enumerate()
        .filter_map(|(row, key)| Some((key.as_deref()?, row)))
        .filter(|(key, _)| seen.insert(*key))
        .collect();
    let known = statement.answers(&distinct.iter().map(|(key, _)| *key).collect::<Vec<_>>());
    let mut answers = HashMap::new();
    // Per model, its inputs to ask, each once, with their keys.
    let mut missing: BTreeMap<&str, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for ((key, row), known) in distinct.into_iter().zip(known) {
        match known {
            Some(answer) => {
                answers.insert(key.to_string(), answer);
            }
            None => {
                let (texts, keys) = missing.entry(models.value(row)).or_default();
                texts.push(inputs.value(row).to_string());
                keys.push(key.to_string());
            }
        }
    }
    for (model, (texts, keys)) in missing {
        control.check()?;
        let given = ask(op, statement, control, model, &texts)?;
        for (key, answer) in keys.into_iter().zip(given) {
            statement.keep(key.clone(), answer.clone());
            answers.insert(key, answer);
        }
    }
    Ok(answers)
}

/// The endpoint's answers to `texts` by `model`, as the lake keeps them: an embedding as its
/// floats little-endian, a completion as UTF-8.
fn ask(
    op: ModelOp,
    statement: &StatementModels,
    control: &StatementControl,
    model: &str,
    texts: &[String],
) -> Result<Vec<Bytes>> {
    let answers: Vec<Bytes> = match op {
        ModelOp::Embed => statement
            .access
            .embed(model, texts, control)?
            .iter()
            .map(|vector| vector.iter().flat_map(|v| v.to_le_bytes()).collect())
            .collect(),
        ModelOp::Complete => statement
            .access
            .complete(model, texts, control)?
            .into_iter()
            .map(Bytes::from)
            .collect(),
    };
    if answers.len() != texts.len() {
        return Err(ExecError::Execution(format!(
            "the endpoint of {model} gave {} answers to {} inputs",
            answers.len(),
            texts.len()
        )));
    }
    Ok(answers)
}

/// The rows' embeddings, a list of floats each.
fn vectors(keys: &[Option<String>], answers: &HashMap<String, Bytes>) -> Result<ArrayRef> {
    let mut lists = ListBuilder::new(Float32Builder::new());
    for key in keys {
        let Some(key) = key else {
            lists.append_null();
            continue;
        };
        let bytes = &answers[key];
        if !bytes.len().is_multiple_of(4) {
            return Err(ExecError::Execution(format!(
                "the embedding kept under a/{key} is {} bytes, not whole 4-byte floats",
                bytes.len()
            )));
        }
        for float in bytes.chunks_exact(4) {
            let float: [u8; 4] = float.try_into().expect("chunks of 4");
            lists.values().append_value(f32::from_le_bytes(float));
        }
        lists.append(true);
    }
    Ok(Arc::new(lists.finish()))
}

/// The rows' completions.
fn texts(keys: &[Option<String>], answers: &HashMap<String, Bytes>) -> Result<ArrayRef> {
    let mut texts = StringBuilder::new();
    for key in keys {
        let Some(key) = key else {
            texts.append_null();
            continue;
        };
        let text = std::str::from_utf8(&answers[key]).map_err(|_| {
            ExecError::Execution(format!("the completion kept under a/{key} is not UTF-8"))
        })?;
        texts.append_value(text);
    }
    Ok(Arc::new(texts.finish()))
}
