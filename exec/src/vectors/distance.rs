//! Distances between vectors (ADR 0082): the kernels the HNSW graphs and the SQL functions
//! share, written so the compiler keeps eight lanes of each sum in registers.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, ListArray};
use arrow::compute::{CastOptions, cast_with_options};
use arrow::datatypes::{DataType, Float32Type};
use pondra_catalog::{VectorMetric, vector_type};
use pondra_planner::VectorDistance;

use crate::{ExecError, Result};

const LANES: usize = 8;

/// The sum of `term(a[i], b[i])` over two slices of one length, in eight lanes.
#[inline(always)]
fn lanes_sum(a: &[f32], b: &[f32], term: impl Fn(f32, f32) -> f32) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let mut sums = [0f32; LANES];
    let (a_chunks, b_chunks) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (a_rest, b_rest) = (a_chunks.remainder(), b_chunks.remainder());
    for (x, y) in a_chunks.zip(b_chunks) {
        for lane in 0..LANES {
            sums[lane] += term(x[lane], y[lane]);
        }
    }
    let mut total: f32 = sums.iter().sum();
    for (x, y) in a_rest.iter().zip(b_rest) {
        total += term(*x, *y);
    }
    total
}

/// The squared Euclidean distance.
#[inline]
pub fn l2_squared(a: &[f32], b: &[f32]) -> f32 {
    lanes_sum(a, b, |x, y| (x - y) * (x - y))
}

#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    lanes_sum(a, b, |x, y| x * y)
}

/// The distance a graph of `metric` orders by; vectors of a `Cosine` graph are normalized, so
/// their cosine distance is one less their product.
#[inline]
pub fn metric_distance(metric: VectorMetric, a: &[f32], b: &[f32]) -> f32 {
    match metric {
        VectorMetric::L2Sq => l2_squared(a, b),
        VectorMetric::Cosine => 1.0 - dot(a, b),
        VectorMetric::Ip => -dot(a, b),
    }
}

/// `vector` scaled to length one (left as it is when all zeros).
pub fn normalized(vector: &mut [f32]) {
    let norm = dot(vector, vector).sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
}

/// One SQL distance of two vectors, computed in double precision from their floats, as DuckDB
/// and pgvector do.
fn distance_of(distance: VectorDistance, a: &[f32], b: &[f32]) -> f64 {
    let sum = |term: &dyn Fn(f64, f64) -> f64| -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| term(*x as f64, *y as f64))
            .sum()
    };
    let product = || sum(&|x, y| x * y);
    let cosine = || {
        let norms = (sum(&|x, _| x * x) * sum(&|_, y| y * y)).sqrt();
        match norms {
            0.0 => f64::NAN,
            norms => product() / norms,
        }
    };
    match distance {
        VectorDistance::Euclidean => sum(&|x, y| (x - y) * (x - y)).sqrt(),
        VectorDistance::CosineDistance => 1.0 - cosine(),
        VectorDistance::CosineSimilarity => cosine(),
        VectorDistance::InnerProduct => product(),
        VectorDistance::NegativeInnerProduct => -product(),
    }
}

/// `values` as lists of 4-byte floats.
pub fn as_vectors(values: &ArrayRef) -> Result<ListArray> {
    let cast = match values.data_type() == &vector_type() {
        true => values.clone(),
        false => cast_with_options(values, &vector_type(), &CastOptions::default())?,
    };
    Ok(cast.as_list::<i32>().clone())
}

/// The floats of row `row`, or none when it is NULL; an error when one of them is NULL.
pub fn vector_at(list: &ListArray, row: usize) -> Result<Option<&[f32]>> {
    if list.is_null(row) {
        return Ok(None);
    }
    let offsets = list.value_offsets();
    let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
    let values = list.values().as_primitive::<Float32Type>();
    if values.null_count() > 0 && (start..end).any(|i| values.is_null(i)) {
        return Err(ExecError::Execution("a vector cannot hold NULL".into()));
    }
    Ok(Some(&values.values()[start..end]))
}

/// A SQL distance function over two columns of vectors (one may be a single constant row).
pub fn vector_distance(
    distance: VectorDistance,
    left: &ArrayRef,
    right: &ArrayRef,
) -> Result<ArrayRef> {
    let (left, right) = (as_vectors(left)?, as_vectors(right)?);
    let rows = left.len().max(right.len());
    let row_of = |list: &ListArray, row: usize| if list.len() == 1 { 0 } else { row };
    let mut out = Vec::with_capacity(rows);
    for row in 0..rows {
        let a = vector_at(&left, row_of(&left, row))?;
        let b = vector_at(&right, row_of(&right, row))?;
        out.push(match (a, b) {
            (Some(a), Some(b)) if a.len() != b.len() => {
                return Err(ExecError::Execution(format!(
                    "{}: the vectors have {} and {} dimensions",
                    distance.name(),
                    a.len(),
                    b.len()
                )));
            }
            (Some(a), Some(b)) => Some(distance_of(distance, a, b)),
            _ => None,
        });
    }
    Ok(Arc::new(Float64Array::from(out)))
}

/// `values` checked to hold vectors of `dimensions` floats each, for a column of that type:
/// an error names the length found.
pub fn vector_check(values: &ArrayRef, dimensions: u32) -> Result<ArrayRef> {
    if matches!(values.data_type(), DataType::Null) {
        return Ok(arrow::array::new_null_array(&vector_type(), values.len()));
    }
    let list = as_vectors(values)?;
    for row in 0..list.len() {
        if let Some(vector) = vector_at(&list, row)?
            && vector.len() != dimensions as usize
        {
            return Err(ExecError::Execution(format!(
                "expected a vector of {dimensions} dimensions, not {}",
                vector.len()
            )));
        }
    }
    Ok(Arc::new(list))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_agree_with_plain_sums() {
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..19).map(|i| (19 - i) as f32).collect();
        let plain_l2: f32 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
        let plain_dot: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((l2_squared(&a, &b) - plain_l2).abs() < 1e-3);
        assert!((dot(&a, &b) - plain_dot).abs() < 1e-3);
    }

    #[test]
    fn distances_match_their_definitions() {
        let (a, b) = ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]);
        assert_eq!(distance_of(VectorDistance::Euclidean, &a, &b), 27f64.sqrt());
        assert_eq!(distance_of(VectorDistance::InnerProduct, &a, &b), 32.0);
        assert_eq!(
            distance_of(VectorDistance::NegativeInnerProduct, &a, &b),
            -32.0
        );
        let cosine = 32.0 / (14f64.sqrt() * 77f64.sqrt());
        assert!(
            (distance_of(VectorDistance::CosineDistance, &a, &b) - (1.0 - cosine)).abs() < 1e-12
        );
    }
}
