//! A scan filter over string columns read as dictionaries. A conjunct of one such column is
//! evaluated once per distinct value of the column chunk (and once for NULL), and each row
//! looks up its key's answer: no row's string is decoded or compared. The other conjuncts see
//! the strings decoded.

use std::sync::Arc;

use arrow::array::BooleanBufferBuilder;
use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, RecordBatch, RecordBatchOptions, new_null_array,
};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
use pondra_planner::Expr;
use pondra_storage::plain_strings;

use crate::Result;
use crate::expr::evaluate;
use crate::scan::widen;
use crate::select::predicate_mask;

/// A filter's conjuncts split by whether a dictionary can answer them.
pub struct DictionaryFilter {
    /// Conjuncts of one string column, with that column's index in the scan's schema.
    on_dictionary: Vec<(usize, Expr)>,
    /// The other conjuncts, ANDed.
    rest: Option<Expr>,
}

/// A conjunct's answer for each value of one dictionary, and for NULL.
pub struct Answers {
    conjunct: usize,
    values: ArrayRef,
    on_value: Vec<bool>,
    on_null: bool,
}

/// Answers computed for the dictionaries seen so far: a column chunk's batches share its
/// dictionary, so each conjunct is evaluated once per chunk.
pub type AnswerCache = Vec<Answers>;

impl DictionaryFilter {
    /// The split of `predicate` over a scan of `schema`, or `None` when no conjunct is over
    /// a single string column that `few_values` says holds few distinct values.
    pub fn new(
        predicate: &Expr,
        schema: &SchemaRef,
        few_values: impl Fn(usize) -> bool,
    ) -> Option<DictionaryFilter> {
        let mut on_dictionary = Vec::new();
        let mut rest = Vec::new();
        for conjunct in predicate.clone().conjuncts() {
            match conjunct.column_indices()[..] {
                [column]
                    if schema.field(column).data_type() == &DataType::Utf8
                        && few_values(column) =>
                {
                    on_dictionary.push((column, conjunct))
                }
                _ => rest.push(conjunct),
            }
        }
        if on_dictionary.is_empty() {
            return None;
        }
        Some(DictionaryFilter {
            on_dictionary,
            rest: Expr::and_all(rest),
        })
    }

    /// Which rows of `read` to keep (NULL as false). `read` holds the scan's `columns` (its
    /// schema's indexes, sorted), string columns as dictionaries.
    pub fn mask(
        &self,
        read: &RecordBatch,
        schema: &SchemaRef,
        columns: &[usize],
        cache: &mut AnswerCache,
    ) -> Result<BooleanArray> {
        let rows = read.num_rows();
        let mut keep = BooleanBuffer::new_set(rows);
        let mut rest = self.rest.clone();
        for (conjunct, (column, expr)) in self.on_dictionary.iter().enumerate() {
            let position = columns
                .binary_search(column)
                .expect("a filter reads its columns");
            let Some(dictionary) = read.column(position).as_dictionary_opt::<Int32Type>() else {
                rest = Expr::and_all(rest.into_iter().chain([expr.clone()]).collect());
                continue;
            };
            let values = dictionary.values();
            let cached = cache
                .iter()
                .position(|a| a.conjunct == conjunct && Arc::ptr_eq(&a.values, values));
            let answers = match cached {
                Some(at) => &cache[at],
                None => {
                    cache.push(answer(conjunct, expr, values, *column, schema)?);
                    cache.last().expect("just pushed")
                }
            };
            let keys = dictionary.keys();
            let bits = match keys.nulls() {
                None => BooleanBuffer::collect_bool(rows, |row| {
                    answers.on_value[keys.value(row) as usize]
                }),
                Some(nulls) => BooleanBuffer::collect_bool(rows, |row| match nulls.is_valid(row) {
                    true => answers.on_value[keys.value(row) as usize],
                    false => answers.on_null,
                }),
            };
            keep = &keep & &bits;
        }
        if let Some(rest) = rest {
            keep = keep_also(&rest, read, schema, columns, keep)?;
        }
        Ok(BooleanArray::new(keep, None))
    }
}

/// `keep` narrowed to the rows `rest` is true for. `rest` reads only its own columns of
/// `read`, strings decoded, and only the rows `keep` has when that is under half of them.
fn keep_also(
    rest: &Expr,
    read: &RecordBatch,
    schema: &SchemaRef,
    columns: &[usize],
    keep: BooleanBuffer,
) -> Result<BooleanBuffer> {
    let kept = keep.count_set_bits();
    if kept == 0 {
        return Ok(keep);
    }
    let rest_columns = rest.column_indices();
    let positions = rest_columns
        .iter()
        .map(|c| {
            columns
                .binary_search(c)
                .expect("a filter reads its columns")
        })
        .collect::<Vec<_>>();
    let mut input = plain_strings(&read.project(&positions)?)?;
    let narrowed = kept * 2 < read.num_rows();
    if narrowed {
        let selected = BooleanArray::new(keep.clone(), None);
        input = arrow::compute::filter_record_batch(&input, &selected)?;
    }
    let answered = predicate_mask(rest, &widen(&input, schema, &rest_columns)?)?;
    let mut answer = answered.values().clone();
    if let Some(nulls) = answered.nulls() {
        answer = &answer & nulls.inner();
    }
    if !narrowed {
        return Ok(&keep & &answer);
    }
    let mut bits = BooleanBufferBuilder::new(read.num_rows());
    bits.append_n(read.num_rows(), false);
    for (at, row) in keep.set_indices().enumerate() {
        if answer.value(at) {
            bits.set_bit(row, true);
        }
    }
    Ok(bits.finish())
}

/// The answers of `expr`, a conjunct over string `column` alone, for each of `values` and
/// for NULL.
fn answer(
    conjunct: usize,
    expr: &Expr,
    values: &ArrayRef,
    column: usize,
    schema: &SchemaRef,
) -> Result<Answers> {
    let over = |values: ArrayRef| -> Result<Vec<bool>> {
        let field = Field::new("values", DataType::Utf8, true);
        let options = RecordBatchOptions::new().with_row_count(Some(values.len()));
        let one = RecordBatch::try_new_with_options(
            Arc::new(Schema::new(vec![field])),
            vec![values],
            &options,
        )?;
        let answered = evaluate(expr, &widen(&one, schema, &[column])?)?;
        let answered = answered.as_boolean();
        Ok((0..answered.len())
            .map(|i| answered.is_valid(i) && answered.value(i))
            .collect())
    };
    Ok(Answers {
        conjunct,
        values: values.clone(),
        on_value: over(arrow::compute::cast(values, &DataType::Utf8)?)?,
        // A column declared NOT NULL has no NULL key to answer (nor may it hold one).
        on_null: schema.field(column).is_nullable() && over(new_null_array(&DataType::Utf8, 1))?[0],
    })
}
