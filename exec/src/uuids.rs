//! UUIDs held as text (ADR 0069): read in any of their forms and written in the canonical
//! one, and drawn at random.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};

use crate::{ExecError, Result};

/// Text read as UUIDs (hyphenated or not, in braces, as a URN) and written in their canonical
/// form, lower-case and hyphenated; text that is no UUID is an error naming it.
pub fn uuid_text(value: &ArrayRef) -> Result<ArrayRef> {
    let texts = value.as_string::<i32>();
    let mut out = Vec::with_capacity(texts.len());
    for text in texts {
        out.push(match text {
            None => None,
            Some(text) => Some(
                uuid::Uuid::parse_str(text.trim())
                    .map_err(|_| {
                        ExecError::Execution(format!(
                            "invalid input syntax for type uuid: \"{text}\""
                        ))
                    })?
                    .hyphenated()
                    .to_string(),
            ),
        });
    }
    Ok(Arc::new(arrow::array::StringArray::from(out)))
}

/// `rows` random (version 4) UUIDs as canonical text.
pub fn random_uuids(rows: usize) -> ArrayRef {
    let uuids: arrow::array::StringArray = (0..rows)
        .map(|_| Some(uuid::Uuid::new_v4().hyphenated().to_string()))
        .collect();
    Arc::new(uuids)
}
