//! Column statistics of data files, gathered as each file is written and kept with its entry
//! in the catalog: null counts, the range of integer and date columns, and a sketch of the
//! distinct values. The planner merges them over a table's files to estimate cardinalities.

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Decimal64Type, Int64Type};
use arrow::row::{RowConverter, SortField};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What is known of one column of a data file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnStatistics {
    pub nulls: u64,
    /// The least and greatest value of an integer or date column (days for dates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<i64>,
    pub distinct: DistinctSketch,
}

impl ColumnStatistics {
    /// The statistics of the rows of two files together.
    pub fn merge(&mut self, other: &ColumnStatistics) {
        self.nulls += other.nulls;
        self.min = self.min.zip(other.min).map(|(a, b)| a.min(b));
        self.max = self.max.zip(other.max).map(|(a, b)| a.max(b));
        self.distinct.merge(&other.distinct);
    }
}

/// The statistics of each column of `batches` (rows of one schema).
pub fn gather_statistics(batches: &[RecordBatch]) -> Vec<ColumnStatistics> {
    let Some(first) = batches.first() else {
        return Vec::new();
    };
    (0..first.num_columns())
        .map(|column| {
            let mut statistics = ColumnStatistics {
                nulls: 0,
                min: None,
                max: None,
                distinct: DistinctSketch::default(),
            };
            let mut range: Option<(i64, i64)> = None;
            let mut ranged = is_exact_integer(first.schema().field(column).data_type());
            for batch in batches {
                let array = batch.column(column);
                statistics.nulls += array.null_count() as u64;
                statistics.distinct.add_array(array);
                if ranged {
                    match integer_range(array) {
                        Ok(Some((lo, hi))) => {
                            range = Some(range.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
                        }
                        Ok(None) => {}
                        Err(()) => ranged = false,
                    }
                }
            }
            if ranged {
                statistics.min = range.map(|r| r.0);
                statistics.max = range.map(|r| r.1);
            }
            statistics
        })
        .collect()
}

/// Per column of `batches`, the least and greatest value of an integer or date column (dates
/// in days); none for other columns and for columns of NULLs only. What a log segment keeps,
/// so that scans skip segments without decoding them (ADR 0048).
pub fn column_ranges(batches: &[RecordBatch]) -> Vec<Option<(i64, i64)>> {
    let Some(first) = batches.first() else {
        return Vec::new();
    };
    (0..first.num_columns())
        .map(|column| {
            if !has_value_range(first.schema().field(column).data_type()) {
                return None;
            }
            let mut range: Option<(i64, i64)> = None;
            for batch in batches {
                match integer_range(batch.column(column)) {
                    Ok(Some((lo, hi))) => {
                        range = Some(range.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
                    }
                    Ok(None) => {}
                    Err(()) => return None,
                }
            }
            range
        })
        .collect()
}

/// Integer and date types, whose values an `i64` holds exactly (dates as days): the columns
/// whose statistics keep a range, and the keys joins can address by value.
pub fn is_exact_integer(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::Date32
    )
}

/// The types whose columns keep a least and greatest value as an `i64` in statistics and log
/// segments: exact integers, and timestamps in microseconds without a zone (as microseconds),
/// which event times are and reads of recent rows compare with.
pub fn has_value_range(data_type: &DataType) -> bool {
    is_exact_integer(data_type)
        || matches!(
            data_type,
            DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None)
        )
}

/// The least and greatest non-null value, as i64; none when every value is null.
fn integer_range(array: &ArrayRef) -> Result<Option<(i64, i64)>, ()> {
    let widened = match array.data_type() {
        DataType::Date32 => cast(
            &cast(array, &DataType::Int32).map_err(|_| ())?,
            &DataType::Int64,
        ),
        _ => cast(array, &DataType::Int64),
    }
    .map_err(|_| ())?;
    let values = widened.as_primitive::<Int64Type>();
    let lo = arrow::compute::min(values);
    let hi = arrow::compute::max(values);
    Ok(lo.zip(hi))
}

/// Registers of a HyperLogLog sketch: 2^PRECISION of them, each the longest run of leading
/// zeros (plus one) among the hashes routed to it. 256 registers estimate within about 6.5%,
/// in 256 bytes per column per file.
const PRECISION: u32 = 8;
const REGISTERS: usize = 1 << PRECISION;

/// A sketch of a column's distinct values (HyperLogLog). Sketches of two files merge into the
/// sketch of both, so a table's distinct values are estimated without reading its rows. The
/// hash is fixed (not seeded per process): sketches written by any version must merge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistinctSketch {
    registers: Vec<u8>,
}

impl Default for DistinctSketch {
    fn default() -> DistinctSketch {
        DistinctSketch {
            registers: vec![0; REGISTERS],
        }
    }
}

impl DistinctSketch {
    pub fn add_hash(&mut self, hash: u64) {
        let register = (hash >> (64 - PRECISION)) as usize;
        // The remaining bits, with a sentinel so that a run never passes their end.
        let rest = (hash << PRECISION) | (1 << (PRECISION - 1));
        let rank = rest.leading_zeros() as u8 + 1;
        let slot = &mut self.registers[register];
        *slot = (*slot).max(rank);
    }

    /// Adds every non-null value of `array`.
    pub fn add_array(&mut self, array: &ArrayRef) {
        let valid = |row: usize| array.is_valid(row);
        // Decimals are hashed as 128-bit values whatever width holds them, so that sketches of
        // files written before 64-bit decimals (ADR 0028) merge with later ones.
        if let DataType::Decimal64(..) = array.data_type() {
            let values = array.as_primitive::<Decimal64Type>();
            for (row, &value) in values.values().iter().enumerate() {
                if valid(row) {
                    self.add_hash(hash_bytes(&i128::from(value).to_le_bytes()));
                }
            }
            return;
        }
        if let Some(width) = array.data_type().primitive_width() {
            let data = array.to_data();
            let start = data.offset() * width;
            let bytes = &data.buffers()[0].as_slice()[start..start + array.len() * width];
            for (row, value) in bytes.chunks_exact(width).enumerate() {
                if valid(row) {
                    self.add_hash(hash_bytes(value));
                }
            }
            return;
        }
        match array.data_type() {
            DataType::Boolean => {
                for value in array.as_boolean().iter().flatten() {
                    self.add_hash(hash_bytes(&[u8::from(value)]));
                }
            }
            DataType::Utf8 => self.add_values(array.as_string::<i32>().iter()),
            DataType::LargeUtf8 => self.add_values(array.as_string::<i64>().iter()),
            DataType::Utf8View => self.add_values(array.as_string_view().iter()),
            DataType::Binary => self.add_values(array.as_binary::<i32>().iter()),
            DataType::LargeBinary => self.add_values(array.as_binary::<i64>().iter()),
            DataType::BinaryView => self.add_values(array.as_binary_view().iter()),
            DataType::Null => {}
            data_type => {
                // Nested values: hashed in Arrow's row format, which is the same for equal values.
                let converter = RowConverter::new(vec![SortField::new(data_type.clone())]);
                let Ok(rows) =
                    converter.and_then(|c| c.convert_columns(std::slice::from_ref(array)))
                else {
                    return;
                };
                for row in (0..array.len()).filter(|r| valid(*r)) {
                    self.add_hash(hash_bytes(rows.row(row).as_ref()));
                }
            }
        }
    }

    fn add_values<T: AsRef<[u8]>>(&mut self, values: impl Iterator<Item = Option<T>>) {
        for value in values.flatten() {
            self.add_hash(hash_bytes(value.as_ref()));
        }
    }

    pub fn merge(&mut self, other: &DistinctSketch) {
        for (mine, theirs) in self.registers.iter_mut().zip(&other.registers) {
            *mine = (*mine).max(*theirs);
        }
    }

    /// The estimated number of distinct values added.
    pub fn estimate(&self) -> f64 {
        let m = REGISTERS as f64;
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let sum: f64 = self
            .registers
            .iter()
            .map(|r| 2f64.powi(-i32::from(*r)))
            .sum();
        let raw = alpha * m * m / sum;
        let zeros = self.registers.iter().filter(|r| **r == 0).count();
        if raw <= 2.5 * m && zeros > 0 {
            // Few values: linear counting over the empty registers is the better estimate.
            m * (m / zeros as f64).ln()
        } else {
            raw
        }
    }
}

/// A fixed 64-bit hash of a value's bytes: 8-byte words folded through SplitMix64's mixer.
fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut hash = mix(bytes.len() as u64);
    for chunk in bytes.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        hash = mix(hash ^ u64::from_le_bytes(word));
    }
    hash
}

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Sketches are kept in the catalog's JSON as hex text: two characters a register.
impl Serialize for DistinctSketch {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text: String = self.registers.iter().map(|r| format!("{r:02x}")).collect();
        serializer.serialize_str(&text)
    }
}

impl<'de> Deserialize<'de> for DistinctSketch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<DistinctSketch, D::Error> {
        let text = String::deserialize(deserializer)?;
        let invalid = || serde::de::Error::custom("a distinct sketch is 512 hex digits");
        if text.len() != REGISTERS * 2 || !text.is_ascii() {
            return Err(invalid());
        }
        let registers = (0..REGISTERS)
            .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| invalid()))
            .collect::<Result<Vec<u8>, D::Error>>()?;
        Ok(DistinctSketch { registers })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Date32Array, Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};

    use super::*;

    fn sketch_of(values: impl Iterator<Item = i64>) -> DistinctSketch {
        let mut sketch = DistinctSketch::default();
        let array: ArrayRef = Arc::new(Int64Array::from_iter_values(values));
        sketch.add_array(&array);
        sketch
    }

    #[test]
    fn estimates_distinct_values_within_a_tenth() {
        for distinct in [1i64, 10, 200, 5_000, 100_000, 1_000_000] {
            // Every value three times: repeats do not count.
            let sketch = sketch_of((0..distinct * 3).map(|i| i % distinct));
            let estimate = sketch.estimate();
            let error = (estimate - distinct as f64).abs() / distinct as f64;
            assert!(error < 0.1, "{distinct} distinct estimated {estimate}");
        }
        assert_eq!(DistinctSketch::default().estimate(), 0.0);
    }

    #[test]
    fn merged_sketches_count_shared_values_once() {
        let mut first = sketch_of(0..60_000);
        let second = sketch_of(30_000..90_000);
        first.merge(&second);
        let error = (first.estimate() - 90_000.0).abs() / 90_000.0;
        assert!(error < 0.1, "{}", first.estimate());
    }

    #[test]
    fn decimal_sketches_agree_across_widths() {
        let values = || (0..5_000i64).map(|v| v * 7 - 9_000);
        let narrow: ArrayRef = Arc::new(
            arrow::array::Decimal64Array::from_iter_values(values())
                .with_precision_and_scale(15, 2)
                .unwrap(),
        );
        let wide: ArrayRef = Arc::new(
            arrow::array::Decimal128Array::from_iter_values(values().map(i128::from))
                .with_precision_and_scale(15, 2)
                .unwrap(),
        );
        let (mut a, mut b) = (DistinctSketch::default(), DistinctSketch::default());
        a.add_array(&narrow);
        b.add_array(&wide);
        assert_eq!(a.registers, b.registers);
    }

    #[test]
    fn sketches_survive_the_catalog_json() {
        let sketch = sketch_of(0..1000);
        let json = serde_json::to_string(&sketch).unwrap();
        assert_eq!(json.len(), REGISTERS * 2 + 2);
        let back: DistinctSketch = serde_json::from_str(&json).unwrap();
        assert_eq!(back, sketch);
        assert!(serde_json::from_str::<DistinctSketch>("\"00ff\"").is_err());
    }

    #[test]
    fn gathers_nulls_ranges_and_distinct_values_per_column() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int64, true),
            Field::new("d", DataType::Date32, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let batch = |n: Vec<Option<i64>>, d: Vec<i32>, s: Vec<Option<&str>>| {
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int64Array::from(n)),
                    Arc::new(Date32Array::from(d)),
                    Arc::new(StringArray::from(s)),
                ],
            )
            .unwrap()
        };
        let batches = [
            batch(
                vec![Some(5), None],
                vec![100, 90],
                vec![Some("a"), Some("b")],
            ),
            batch(
                vec![Some(-3), Some(5)],
                vec![95, 120],
                vec![None, Some("a")],
            ),
        ];
        let statistics = gather_statistics(&batches);
        assert_eq!(statistics.len(), 3);
        assert_eq!(
            (statistics[0].nulls, statistics[0].min, statistics[0].max),
            (1, Some(-3), Some(5))
        );
        assert_eq!(statistics[0].distinct.estimate().round(), 2.0);
        assert_eq!(
            (statistics[1].min, statistics[1].max),
            (Some(90), Some(120))
        );
        assert_eq!(statistics[1].distinct.estimate().round(), 4.0);
        assert_eq!(
            (statistics[2].nulls, statistics[2].min, statistics[2].max),
            (1, None, None)
        );
        assert_eq!(statistics[2].distinct.estimate().round(), 2.0);
    }
}
