//! Hash aggregation: group keys interned into a hash table split by key hash over partitions
//! (`GroupIndex`); one vectorized accumulator per aggregate, indexed by group. Each worker
//! aggregates its morsels on its own; their partial aggregations are merged partition by
//! partition on every worker when there are many groups, on one thread when there are few.

use std::sync::{Arc, Mutex};

use arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch, RecordBatchOptions,
    StringArray, new_null_array,
};
use arrow::compute::{SortOptions, cast};
use arrow::datatypes::{DataType, Float64Type, Int64Type, SchemaRef};
use arrow::row::{OwnedRow, RowConverter, SortField};
use pondra_planner::{AggregateCall, AggregateFunction, Expr};
use std::collections::HashSet;

use crate::collected::{ArrayAggState, OrderedInput};
use crate::expr::{evaluate, evaluate_all};
use crate::keys::{GROUP_PARTITIONS, GroupIndex};
use crate::memory::{MemoryPool, Reservation};
use crate::spill::{PartitionedSpill, SpillFile};
use crate::sums::{DecimalSums, Sums};
use crate::{ExecError, Result};
use distinct_pairs::DistinctPairs;
use few_groups::{FEW_GROUPS, FEW_GROUPS_MIN_ROWS, RowsByGroup};
use float_folds::{FloatFold, FloatFolds};
pub use lists::aggregate_lists;
use pass_on::pass_on;
use runs::MorselRuns;

mod distinct_pairs;
mod few_groups;
mod float_folds;
mod lists;
mod pass_on;
mod runs;

/// The state of one aggregate over every group seen so far.
enum Accumulator {
    Count {
        counts: Vec<i64>,
        star: bool,
    },
    SumInt {
        sums: Sums<i64>,
    },
    SumFloat {
        sums: Sums<f64>,
    },
    SumDecimal {
        sums: DecimalSums,
        data_type: DataType,
    },
    /// Min or max of any orderable type, compared in Arrow's order-preserving row format.
    Extreme {
        converter: RowConverter,
        best: Vec<Option<OwnedRow>>,
        max: bool,
        data_type: DataType,
    },
    Avg {
        sums: Vec<f64>,
        counts: Vec<i64>,
    },
    /// The average of decimals: their exact sum and count per group.
    AvgDecimal {
        sums: DecimalSums,
        counts: Vec<i64>,
        scale: i8,
    },
    /// Count, mean and sum of squared differences from it (Welford), per group.
    Moments {
        counts: Vec<i64>,
        means: Vec<f64>,
        squares: Vec<f64>,
        func: AggregateFunction,
    },
    /// Distinct values per group, summed or averaged at the end.
    Distinct {
        converter: RowConverter,
        seen: HashSet<(usize, Box<[u8]>)>,
        inner: AggregateCall,
        groups: usize,
    },
    /// The values of each group joined by the separator, in input order; with `seen`, each
    /// distinct value once.
    StringAgg {
        joined: Vec<Option<String>>,
        separator: String,
        seen: Option<HashSet<(usize, String)>>,
    },
    ArrayAgg(ArrayAggState),
    /// An aggregate with ORDER BY: its rows are kept, then fed to `inner` in order at the end.
    Ordered {
        input: OrderedInput,
        inner: Box<Accumulator>,
        groups: usize,
    },
    /// 0 for every group: a plain GROUP BY's grouping set id (grouping sets fill theirs in).
    Zero {
        groups: usize,
    },
    /// Distinct values per group, and how many each group has.
    CountDistinct {
        pairs: DistinctPairs,
        counts: Vec<i64>,
    },
    /// `product`, `fsum`: a DOUBLE fold per group.
    FloatFold(FloatFolds),
}

impl Accumulator {
    fn new(call: &AggregateCall) -> Result<Accumulator> {
        let arg_type = call.arg.as_ref().map(Expr::data_type);
        if !call.order.is_empty() {
            let unordered = AggregateCall {
                order: Vec::new(),
                ..call.clone()
            };
            return Ok(Accumulator::Ordered {
                input: OrderedInput::new(call.order.iter().map(|k| (k.descending, k.nulls_first))),
                inner: Box::new(Accumulator::new(&unordered)?),
                groups: 0,
            });
        }
        Ok(match call.func {
            AggregateFunction::CountStar => Accumulator::Count {
                counts: Vec::new(),
                star: true,
            },
            AggregateFunction::Count => Accumulator::Count {
                counts: Vec::new(),
                star: false,
            },
            AggregateFunction::Sum => match arg_type {
                Some(DataType::Int32 | DataType::Int64) => Accumulator::SumInt {
                    sums: Sums::default(),
                },
                Some(DataType::Float64) => Accumulator::SumFloat {
                    sums: Sums::default(),
                },
                Some(DataType::Decimal64(..) | DataType::Decimal128(..)) => {
                    Accumulator::SumDecimal {
                        sums: DecimalSums::default(),
                        data_type: call.data_type.clone(),
                    }
                }
                other => {
                    return Err(ExecError::Execution(format!("sum of {other:?}")));
                }
            },
            AggregateFunction::Min | AggregateFunction::Max => {
                let data_type = arg_type.unwrap_or(DataType::Null);
                // NULLs are skipped, so the option places only the NULLs inside a nested
                // value: as the greatest, DuckDB's order (and ORDER BY's).
                let nulls_greatest = SortOptions {
                    descending: false,
                    nulls_first: false,
                };
                let field = SortField::new_with_options(data_type.clone(), nulls_greatest);
                Accumulator::Extreme {
                    converter: RowConverter::new(vec![field])?,
                    best: Vec::new(),
                    max: call.func == AggregateFunction::Max,
                    data_type,
                }
            }
            AggregateFunction::SumDistinct | AggregateFunction::AvgDistinct => {
                let arg_type = arg_type.clone().unwrap_or(DataType::Null);
                let func = if call.func == AggregateFunction::SumDistinct {
                    AggregateFunction::Sum
                } else {
                    AggregateFunction::Avg
                };
                Accumulator::Distinct {
                    converter: RowConverter::new(vec![SortField::new(arg_type.clone())])?,
                    seen: HashSet::new(),
                    inner: AggregateCall {
                        func,
                        arg: Some(Expr::column(0, "value", arg_type)),
                        data_type: call.data_type.clone(),
                        separator: None,
                        order: Vec::new(),
                        filter: None,
                    },
                    groups: 0,
                }
            }
            AggregateFunction::CountDistinct => Accumulator::CountDistinct {
                pairs: DistinctPairs::new(&arg_type.unwrap_or(DataType::Null))?,
                counts: Vec::new(),
            },
            AggregateFunction::StddevSamp
            | AggregateFunction::StddevPop
            | AggregateFunction::VarSamp
            | AggregateFunction::VarPop => Accumulator::Moments {
                counts: Vec::new(),
                means: Vec::new(),
                squares: Vec::new(),
                func: call.func,
            },
            AggregateFunction::Avg => match arg_type {
                // Summed exactly, divided once per group.
                Some(DataType::Decimal64(_, scale) | DataType::Decimal128(_, scale)) => {
                    Accumulator::AvgDecimal {
                        sums: DecimalSums::default(),
                        counts: Vec::new(),
                        scale,
                    }
                }
                _ => Accumulator::Avg {
                    sums: Vec::new(),
                    counts: Vec::new(),
                },
            },
            AggregateFunction::GroupingId => Accumulator::Zero { groups: 0 },
            AggregateFunction::Product => {
                Accumulator::FloatFold(FloatFolds::new(FloatFold::Product))
            }
            AggregateFunction::KahanSum => {
                Accumulator::FloatFold(FloatFolds::new(FloatFold::CompensatedSum))
            }
            AggregateFunction::ArrayAgg => {
                Accumulator::ArrayAgg(ArrayAggState::new(arg_type.unwrap_or(DataType::Null)))
            }
            AggregateFunction::StringAgg | AggregateFunction::StringAggDistinct => {
                Accumulator::StringAgg {
                    joined: Vec::new(),
                    separator: call.separator.clone().unwrap_or_default(),
                    seen: (call.func == AggregateFunction::StringAggDistinct).then(HashSet::new),
                }
            }
        })
    }

    fn resize(&mut self, groups: usize) {
        match self {
            Accumulator::Count { counts, .. } => counts.resize(groups, 0),
            Accumulator::SumInt { sums } => sums.resize(groups),
            Accumulator::SumFloat { sums } => sums.resize(groups),
            Accumulator::SumDecimal { sums, .. } => sums.resize(groups),
            Accumulator::Extreme { best, .. } => best.resize(groups, None),
            Accumulator::Avg { sums, counts } => {
                sums.resize(groups, 0.0);
                counts.resize(groups, 0);
            }
            Accumulator::AvgDecimal { sums, counts, .. } => {
                sums.resize(groups);
                counts.resize(groups, 0);
            }
            Accumulator::CountDistinct { counts, .. } => counts.resize(groups, 0),
            Accumulator::StringAgg { joined, .. } => joined.resize(groups, None),
            Accumulator::Zero { groups: n }
            | Accumulator::Distinct { groups: n, .. }
            | Accumulator::Ordered { groups: n, .. } => *n = (*n).max(groups),
            Accumulator::ArrayAgg(state) => state.resize(groups),
            Accumulator::FloatFold(folds) => folds.resize(groups),
            Accumulator::Moments {
                counts,
                means,
                squares,
                ..
            } => {
                counts.resize(groups, 0);
                means.resize(groups, 0.0);
                squares.resize(groups, 0.0);
            }
        }
    }

    /// Folds in the rows of `batch` that `call` aggregates: `groups` are their groups, or
    /// `None` when all are in group 0 (an aggregation without GROUP BY).
    /// With `by_group`, the same rows sorted by group, for an accumulator that takes them.
    fn update_from(
        &mut self,
        call: &AggregateCall,
        batch: &RecordBatch,
        groups: Option<&[usize]>,
        by_group: Option<&RowsByGroup>,
    ) -> Result<usize> {
        let value = call.arg.as_ref().map(|a| evaluate(a, batch)).transpose()?;
        // What a collecting state keeps of this batch: its values.
        let kept = match (&value, self.collects()) {
            (Some(value), true) => crate::memory::array_bytes(value),
            _ => 0,
        };
        if let Some(by_group) = by_group.filter(|_| self.takes_rows_by_group()) {
            self.update_by_group(value.as_ref(), by_group)?;
            return Ok(kept);
        }
        let zeros;
        let groups = match groups {
            Some(groups) => groups,
            None => {
                if self.update_first_group(value.as_ref(), batch.num_rows())? {
                    return Ok(kept);
                }
                zeros = vec![0; batch.num_rows()];
                &zeros
            }
        };
        let Accumulator::Ordered { input, .. } = self else {
            self.update(value.as_ref(), groups)?;
            return Ok(kept);
        };
        let keys = call
            .order
            .iter()
            .map(|k| evaluate(&k.expr, batch))
            .collect::<Result<Vec<_>>>()?;
        let kept = kept + keys.iter().map(crate::memory::array_bytes).sum::<usize>();
        let value = value.expect("an aggregate with ORDER BY has an argument");
        input.update(&value, keys, groups);
        Ok(kept)
    }

    /// Folds in a batch of `rows` rows all in group 0, when this accumulator has a way that
    /// needs no group per row: counts and sums total the batch first. False when it has none.
    fn update_first_group(&mut self, value: Option<&ArrayRef>, rows: usize) -> Result<bool> {
        // Logical NULLs: a NULL literal's array has no validity buffer.
        let valid = |value: &ArrayRef| (value.len() - value.logical_null_count()) as i64;
        match self {
            Accumulator::Count { counts, star } => {
                counts[0] += match value.filter(|_| !*star) {
                    Some(value) => valid(value),
                    None => rows as i64,
                };
            }
            Accumulator::SumInt { sums } => {
                let value = cast(value.expect("sum has an argument"), &DataType::Int64)?;
                sums.add_all_to(value.as_primitive::<Int64Type>(), 0)?;
            }
            Accumulator::SumFloat { sums } => {
                let value = value.expect("sum has an argument");
                sums.add_all_to(value.as_primitive::<Float64Type>(), 0)?;
            }
            Accumulator::SumDecimal { sums, .. } => {
                let value = value.expect("sum has an argument");
                sums.add_all_to(value, 0)?;
            }
            Accumulator::AvgDecimal { sums, counts, .. } => {
                let value = value.expect("avg has an argument");
                sums.add_all_to(value, 0)?;
                counts[0] += valid(value);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Whether the state keeps the values it is given, growing with its input.
    fn collects(&self) -> bool {
        matches!(
            self,
            Accumulator::StringAgg { .. } | Accumulator::ArrayAgg(_) | Accumulator::Ordered { .. }
        )
    }

    /// Whether `update_by_group` can fold in a batch's rows sorted by group.
    fn takes_rows_by_group(&self) -> bool {
        matches!(
            self,
            Accumulator::Count { .. }
                | Accumulator::SumInt { .. }
                | Accumulator::SumDecimal { .. }
                | Accumulator::AvgDecimal { .. }
        )
    }

    /// Folds one batch in, its rows sorted by group: each group's values are totalled, then
    /// added to its state once.
    fn update_by_group(&mut self, value: Option<&ArrayRef>, by_group: &RowsByGroup) -> Result<()> {
        let valid_rows = |value: &ArrayRef, rows: &[u32]| match value.logical_nulls() {
            None => rows.len() as i64,
            Some(nulls) => rows.iter().filter(|&&r| nulls.is_valid(r as usize)).count() as i64,
        };
        match self {
            Accumulator::Count { counts, star } => {
                let value = value.filter(|_| !*star);
                for (group, rows) in by_group.groups() {
                    counts[group] += match value {
                        Some(value) => valid_rows(value, rows),
                        None => rows.len() as i64,
                    };
                }
            }
            Accumulator::SumInt { sums } => {
                let value = cast(value.expect("sum has an argument"), &DataType::Int64)?;
                for (group, rows) in by_group.groups() {
                    sums.add_rows(value.as_primitive::<Int64Type>(), group, rows)?;
                }
            }
            Accumulator::SumDecimal { sums, .. } => {
                let value = value.expect("sum has an argument");
                for (group, rows) in by_group.groups() {
                    sums.add_rows(value, group, rows)?;
                }
            }
            Accumulator::AvgDecimal { sums, counts, .. } => {
                let value = value.expect("avg has an argument");
                for (group, rows) in by_group.groups() {
                    sums.add_rows(value, group, rows)?;
                    counts[group] += valid_rows(value, rows);
                }
            }
            _ => unreachable!("takes_rows_by_group chose the accumulators that come here"),
        }
        Ok(())
    }

    /// Folds one batch in: `value` is the argument (absent for count(*)), `groups[i]` row i's group.
    fn update(&mut self, value: Option<&ArrayRef>, groups: &[usize]) -> Result<()> {
        match self {
            Accumulator::Zero { .. } => {}
            Accumulator::ArrayAgg(state) => {
                state.update(value.expect("array_agg has an argument"), groups);
            }
            Accumulator::FloatFold(folds) => {
                folds.update(value.expect("a fold has an argument"), groups)?;
            }
            Accumulator::Ordered { .. } => {
                unreachable!("an aggregate with ORDER BY is given its keys")
            }
            Accumulator::StringAgg {
                joined,
                separator,
                seen,
            } => {
                let value = value
                    .expect("string_agg has an argument")
                    .as_string::<i32>();
                let mut made = crate::functions::StringSize::default();
                for (row, &g) in groups.iter().enumerate() {
                    if value.is_null(row) {
                        continue;
                    }
                    let text = value.value(row);
                    made.add(text.len() + separator.len())?;
                    if let Some(seen) = seen
                        && !seen.insert((g, text.to_string()))
                    {
                        continue;
                    }
                    match &mut joined[g] {
                        Some(out) => {
                            out.push_str(separator);
                            out.push_str(text);
                        }
                        none => *none = Some(text.to_string()),
                    }
                }
            }
            Accumulator::Count { counts, star } => match value.filter(|_| !*star) {
                Some(value) => count_valid(counts, value, groups),
                None => groups.iter().for_each(|&g| counts[g] += 1),
            },
            Accumulator::SumInt { sums } => {
                let value = cast(value.expect("sum has an argument"), &DataType::Int64)?;
                sums.add_all(value.as_primitive::<Int64Type>(), groups)?;
            }
            Accumulator::SumFloat { sums } => {
                let value = value.expect("sum has an argument");
                sums.add_all(value.as_primitive::<Float64Type>(), groups)?;
            }
            Accumulator::SumDecimal { sums, .. } => {
                let value = value.expect("sum has an argument");
                sums.add_all(value, groups)?;
            }
            Accumulator::AvgDecimal { sums, counts, .. } => {
                let value = value.expect("avg has an argument");
                sums.add_all(value, groups)?;
                count_valid(counts, value, groups);
            }
            Accumulator::Extreme {
                converter,
                best,
                max,
                ..
            } => {
                let value = value.expect("min/max has an argument");
                let rows = converter.convert_columns(std::slice::from_ref(value))?;
                for (row, &g) in groups.iter().enumerate() {
                    if !value.is_valid(row) {
                        continue;
                    }
                    let candidate = rows.row(row);
                    let better = match &best[g] {
                        None => true,
                        Some(current) if *max => candidate > current.row(),
                        Some(current) => candidate < current.row(),
                    };
                    if better {
                        best[g] = Some(candidate.owned());
                    }
                }
            }
            Accumulator::Distinct {
                converter, seen, ..
            } => {
                let value = value.expect("has an argument");
                let rows = converter.convert_columns(std::slice::from_ref(value))?;
                for (row, &g) in groups.iter().enumerate() {
                    if value.is_valid(row) {
                        seen.insert((g, rows.row(row).as_ref().into()));
                    }
                }
            }
            Accumulator::CountDistinct { pairs, counts } => {
                let value = value.expect("count(DISTINCT) has an argument");
                pairs.add(value, groups, counts)?;
            }
            Accumulator::Moments {
                counts,
                means,
                squares,
                ..
            } => {
                let value = cast(value.expect("has an argument"), &DataType::Float64)?;
                let value = value.as_primitive::<Float64Type>();
                for (row, &g) in groups.iter().enumerate() {
                    if value.is_valid(row) {
                        let x = value.value(row);
                        counts[g] += 1;
                        let delta = x - means[g];
                        means[g] += delta / counts[g] as f64;
                        squares[g] += delta * (x - means[g]);
                    }
                }
            }
            Accumulator::Avg { sums, counts } => {
                let value = cast(value.expect("avg has an argument"), &DataType::Float64)?;
                let value = value.as_primitive::<Float64Type>();
                for (row, &g) in groups.iter().enumerate() {
                    if value.is_valid(row) {
                        sums[g] += value.value(row);
                        counts[g] += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether partial states of this accumulator can be merged (a DISTINCT string_agg keeps
    /// only its joined text, whose parts are no longer known).
    fn can_merge(&self) -> bool {
        !matches!(self, Accumulator::StringAgg { seen: Some(_), .. })
    }

    /// Whether `merge_groups` can fold in any subset of this accumulator's groups.
    fn can_split(&self) -> bool {
        matches!(
            self,
            Accumulator::Count { .. }
                | Accumulator::SumInt { .. }
                | Accumulator::SumFloat { .. }
                | Accumulator::SumDecimal { .. }
                | Accumulator::Extreme { .. }
                | Accumulator::Avg { .. }
                | Accumulator::AvgDecimal { .. }
                | Accumulator::Moments { .. }
                | Accumulator::FloatFold(_)
                | Accumulator::Zero { .. }
        )
    }

    /// Folds in the groups `from` of `other`, another accumulator of the same call over other
    /// rows (one that `can_split`): its group `from[i]` is this one's group `map[i]`.
    fn merge_groups(&mut self, other: &Accumulator, from: &[u32], map: &[usize]) -> Result<()> {
        let pairs = || from.iter().map(|&g| g as usize).zip(map.iter().copied());
        match (self, other) {
            (Accumulator::Count { counts, .. }, Accumulator::Count { counts: theirs, .. }) => {
                pairs().for_each(|(g, to)| counts[to] += theirs[g]);
            }
            (Accumulator::SumInt { sums }, Accumulator::SumInt { sums: theirs }) => {
                sums.merge_groups(theirs, from, map)?;
            }
            (Accumulator::SumFloat { sums }, Accumulator::SumFloat { sums: theirs }) => {
                sums.merge_groups(theirs, from, map)?;
            }
            (Accumulator::FloatFold(folds), Accumulator::FloatFold(theirs)) => {
                folds.merge_groups(theirs, from, map);
            }
            (
                Accumulator::SumDecimal { sums, .. },
                Accumulator::SumDecimal { sums: theirs, .. },
            ) => {
                sums.merge_groups(theirs, from, map)?;
            }
            (
                Accumulator::Extreme {
                    best,
                    max,
                    converter,
                    ..
                },
                Accumulator::Extreme { best: theirs, .. },
            ) => {
                // Both encode with the same fields, so their rows compare byte for byte; a row
                // kept is parsed again as one of this converter's.
                let parser = converter.parser();
                for (g, to) in pairs() {
                    let Some(candidate) = &theirs[g] else {
                        continue;
                    };
                    let better = match &best[to] {
                        None => true,
                        Some(current) if *max => candidate.as_ref() > current.as_ref(),
                        Some(current) => candidate.as_ref() < current.as_ref(),
                    };
                    if better {
                        best[to] = Some(parser.parse(candidate.as_ref()).owned());
                    }
                }
            }
            (
                Accumulator::AvgDecimal { sums, counts, .. },
                Accumulator::AvgDecimal {
                    sums: theirs,
                    counts: c,
                    ..
                },
            ) => {
                sums.merge_groups(theirs, from, map)?;
                pairs().for_each(|(g, to)| counts[to] += c[g]);
            }
            (Accumulator::Avg { sums, counts }, Accumulator::Avg { sums: s, counts: c }) => {
                for (g, to) in pairs() {
                    sums[to] += s[g];
                    counts[to] += c[g];
                }
            }
            (
                Accumulator::Moments {
                    counts,
                    means,
                    squares,
                    ..
                },
                Accumulator::Moments {
                    counts: nb,
                    means: mb,
                    squares: sb,
                    ..
                },
            ) => {
                // Chan et al.'s pairwise combination of Welford states.
                for (g, to) in pairs() {
                    if nb[g] == 0 {
                        continue;
                    }
                    let (n_a, n_b) = (counts[to] as f64, nb[g] as f64);
                    let n = n_a + n_b;
                    let delta = mb[g] - means[to];
                    means[to] += delta * n_b / n;
                    squares[to] += sb[g] + delta * delta * n_a * n_b / n;
                    counts[to] += nb[g];
                }
            }
            (Accumulator::Zero { .. }, Accumulator::Zero { .. }) => {}
            _ => unreachable!("merged accumulators are of the same call, and can split"),
        }
        Ok(())
    }

    /// Folds in `other`, another accumulator of the same call over other rows, whose group
    /// `g` is this one's group `map[g]`.
    fn merge(&mut self, other: Accumulator, map: &[usize]) -> Result<()> {
        if other.can_split() {
            let every: Vec<u32> = (0..map.len() as u32).collect();
            return self.merge_groups(&other, &every, map);
        }
        match (self, other) {
            (Accumulator::Distinct { seen, .. }, Accumulator::Distinct { seen: theirs, .. }) => {
                seen.extend(theirs.into_iter().map(|(g, value)| (map[g], value)));
            }
            (
                Accumulator::CountDistinct { pairs, counts },
                Accumulator::CountDistinct { pairs: theirs, .. },
            ) => pairs.merge(theirs, map, counts),
            (
                Accumulator::StringAgg {
                    joined, separator, ..
                },
                Accumulator::StringAgg { joined: theirs, .. },
            ) => {
                for (g, text) in theirs.into_iter().enumerate() {
                    let Some(text) = text else { continue };
                    match &mut joined[map[g]] {
                        Some(out) => {
                            out.push_str(separator);
                            out.push_str(&text);
                        }
                        none => *none = Some(text),
                    }
                }
            }
            (Accumulator::ArrayAgg(state), Accumulator::ArrayAgg(theirs)) => {
                state.merge(theirs, map);
            }
            (Accumulator::Ordered { input, .. }, Accumulator::Ordered { input: theirs, .. }) => {
                input.merge(theirs, map);
            }
            _ => unreachable!("merged accumulators are of the same call"),
        }
        Ok(())
    }

    fn finish(self) -> Result<ArrayRef> {
        Ok(match self {
            Accumulator::Ordered {
                input,
                mut inner,
                groups,
            } => {
                inner.resize(groups);
                if let Some((values, ids)) = input.sorted()? {
                    inner.update(Some(&values), &ids)?;
                }
                inner.finish()?
            }
            Accumulator::ArrayAgg(state) => state.finish()?,
            Accumulator::FloatFold(folds) => folds.finish(),
            Accumulator::Distinct {
                converter,
                seen,
                inner,
                groups,
            } => {
                let parser = converter.parser();
                let (ids, values): (Vec<usize>, Vec<_>) = seen
                    .iter()
                    .map(|(g, bytes)| (*g, parser.parse(bytes)))
                    .unzip();
                let values = if values.is_empty() {
                    new_null_array(&inner.arg.as_ref().expect("argument").data_type(), 0)
                } else {
                    converter.convert_rows(values)?.remove(0)
                };
                let mut accumulator = Accumulator::new(&inner)?;
                accumulator.resize(groups);
                accumulator.update(Some(&values), &ids)?;
                accumulator.finish()?
            }
            Accumulator::Count { counts, .. } | Accumulator::CountDistinct { counts, .. } => {
                Arc::new(Int64Array::from(counts))
            }
            Accumulator::SumInt { sums } => Arc::new(sums.into_array::<Int64Type>()),
            Accumulator::StringAgg { joined, .. } => {
                let bytes: usize = joined.iter().flatten().map(String::len).sum();
                crate::functions::check_string_bytes(bytes as u128)?;
                Arc::new(StringArray::from(joined))
            }
            Accumulator::Zero { groups } => Arc::new(Int64Array::from(vec![0; groups])),
            Accumulator::SumFloat { sums } => Arc::new(sums.into_array::<Float64Type>()),
            Accumulator::SumDecimal { sums, data_type } => {
                let DataType::Decimal128(p, s) = data_type else {
                    unreachable!("decimal sums are decimals")
                };
                Arc::new(sums.into_array().with_precision_and_scale(p, s)?)
            }
            Accumulator::Extreme {
                converter,
                best,
                data_type,
                ..
            } => {
                if best.is_empty() {
                    return Ok(new_null_array(&data_type, 0));
                }
                let null_row = converter
                    .convert_columns(&[new_null_array(&data_type, 1)])?
                    .row(0)
                    .owned();
                let rows = best.iter().map(|b| b.as_ref().unwrap_or(&null_row).row());
                converter.convert_rows(rows)?.remove(0)
            }
            Accumulator::Moments {
                counts,
                squares,
                func,
                ..
            } => Arc::new(
                counts
                    .iter()
                    .zip(&squares)
                    .map(|(n, m2)| {
                        let n = *n as f64;
                        match func {
                            AggregateFunction::VarPop if n >= 1.0 => Some(m2 / n),
                            AggregateFunction::StddevPop if n >= 1.0 => Some((m2 / n).sqrt()),
                            AggregateFunction::VarSamp if n >= 2.0 => Some(m2 / (n - 1.0)),
                            AggregateFunction::StddevSamp if n >= 2.0 => {
                                Some((m2 / (n - 1.0)).sqrt())
                            }
                            _ => None,
                        }
                    })
                    .collect::<Float64Array>(),
            ),
            Accumulator::AvgDecimal {
                sums,
                counts,
                scale,
            } => {
                let unit = 10f64.powi(scale as i32);
                Arc::new(
                    (0..counts.len())
                        .map(|g| {
                            let sum = sums.get(g)?;
                            (counts[g] > 0).then(|| sum as f64 / unit / counts[g] as f64)
                        })
                        .collect::<Float64Array>(),
                )
            }
            Accumulator::Avg { sums, counts } => Arc::new(
                sums.iter()
                    .zip(&counts)
                    .map(|(s, c)| (*c > 0).then(|| s / *c as f64))
                    .collect::<Float64Array>(),
            ),
        })
    }
}

/// The sink of a hash aggregation.
pub struct HashAggregateSink {
    group: Vec<Expr>,
    aggregates: Vec<AggregateCall>,
    schema: SchemaRef,
    /// The distinct group keys; `None` without GROUP BY.
    index: Option<GroupIndex>,
    /// Each group's key values in id order, as slices of the batches that first held them.
    group_keys: Vec<Vec<ArrayRef>>,
    accumulators: Vec<Accumulator>,
    groups: usize,
    ids: Vec<u32>,
    new_rows: Vec<u32>,
    /// Partial aggregations of other parts of the input, merged when this one finishes.
    deferred: Vec<HashAggregateSink>,
    /// The condition of a filter right above (HAVING), applied to each part of the output as
    /// it is finished: the groups it drops are never held all at once.
    output_filter: Option<Expr>,
    /// Groups of key runs finished morsel by morsel (ADR 0029): output rows, HAVING applied.
    finished: Vec<RecordBatch>,
    /// The runs of the morsel being read, when its keys are known to arrive clustered.
    runs: Option<Box<MorselRuns>>,
    /// How many groups were finished as runs.
    run_groups: usize,
    /// Rows sunk through the hash table so far, until it is decided whether to pass rows on.
    hashed_rows: usize,
    /// Once the groups come close to the rows (ADR 0032), the rows of later batches, split by
    /// their key's partition, to be aggregated only by the merge.
    passed: Option<Vec<Vec<RecordBatch>>>,
    /// What the groups and rows passed on hold, reserved from the memory pool.
    memory: Option<Reservation>,
    /// Bytes of the group keys taken so far, and of the rows passed on in memory.
    key_bytes: usize,
    passed_bytes: usize,
    /// Bytes of the rows collecting aggregates (`string_agg`, `array_agg`, ORDER BY inside the
    /// call) have kept.
    collected_bytes: usize,
    /// Once the pool refused more memory: later rows, by their key's partition, on disk.
    spill: Option<PartitionedSpill>,
}

/// About what a group holds besides its key values: its entry in the index, and a word or two
/// per aggregate.
const GROUP_BYTES: usize = 16;
const ACCUMULATOR_BYTES: usize = 16;

/// Partial aggregations with at least this many groups in all are merged partition by
/// partition on the thread pool; fewer are merged into one on the calling thread.
const PARALLEL_MERGE_GROUPS: usize = 1 << 16;

/// After this many rows, a partial aggregation that can be merged partition by partition
/// checks whether its groups reduce its rows; if they do not, it passes later rows on.
const PASS_ON_CHECK_ROWS: usize = 1 << 16;

/// A partial aggregation passes rows on when it has more groups than this share of its rows:
/// aggregating them first would save the merge almost nothing.
const PASS_ON_GROUPS_PER_ROW: f64 = 0.8;

impl HashAggregateSink {
    pub fn new(group: &[Expr], aggregates: &[AggregateCall], schema: SchemaRef) -> Result<Self> {
        let index = if group.is_empty() {
            None
        } else {
            let types: Vec<DataType> = group.iter().map(Expr::data_type).collect();
            Some(GroupIndex::new(&types)?)
        };
        let mut accumulators = aggregates
            .iter()
            .map(Accumulator::new)
            .collect::<Result<Vec<_>>>()?;
        // Without GROUP BY there is exactly one group, even over no rows.
        let groups = usize::from(group.is_empty());
        for a in &mut accumulators {
            a.resize(groups);
        }
        Ok(HashAggregateSink {
            group: group.to_vec(),
            aggregates: aggregates.to_vec(),
            schema,
            index,
            group_keys: Vec::new(),
            accumulators,
            groups,
            ids: Vec::new(),
            new_rows: Vec::new(),
            deferred: Vec::new(),
            output_filter: None,
            finished: Vec::new(),
            runs: None,
            run_groups: 0,
            hashed_rows: 0,
            passed: None,
            memory: None,
            key_bytes: 0,
            passed_bytes: 0,
            collected_bytes: 0,
            spill: None,
        })
    }

    /// This aggregation, holding its groups within `memory`: past what the pool grants, it
    /// writes later rows to disk by partition, for the merge (when it can be merged by
    /// partition).
    pub fn with_memory(mut self, memory: &Arc<MemoryPool>) -> HashAggregateSink {
        self.memory = Some(memory.reservation());
        self
    }

    /// The bytes of rows this aggregation and the partial ones it will merge wrote to disk.
    pub fn spilled_bytes(&self) -> usize {
        let own = self.spill.as_ref().map_or(0, PartitionedSpill::bytes);
        own + self
            .deferred
            .iter()
            .map(HashAggregateSink::spilled_bytes)
            .sum::<usize>()
    }

    /// Reserves what the groups and passed rows hold now; if the pool refuses, passes every
    /// later row on to disk (and the rows passed on so far), so that the groups stop growing.
    fn account(&mut self) -> Result<()> {
        let can_split = self.can_split();
        let Some(reservation) = &mut self.memory else {
            return Ok(());
        };
        let per_group = GROUP_BYTES + ACCUMULATOR_BYTES * self.accumulators.len();
        let groups = self.key_bytes + self.groups * per_group + self.collected_bytes;
        if reservation.try_resize(groups + self.passed_bytes) {
            return Ok(());
        }
        if self.spill.is_some() {
            // Later rows go to disk: the groups held stop growing, a little over the limit.
            reservation.resize(groups + self.passed_bytes);
            return Ok(());
        }
        if !can_split {
            // Nothing can go to disk: the groups may grow a little past the limit, no more.
            if reservation.try_resize_unspillable(groups + self.passed_bytes) {
                return Ok(());
            }
            return Err(ExecError::OutOfMemory {
                limit: reservation.pool().limit(),
            });
        }
        let spill = PartitionedSpill::new(reservation.pool().spill_dir(), GROUP_PARTITIONS);
        let passed = self.passed.replace(vec![Vec::new(); GROUP_PARTITIONS]);
        for (partition, batches) in passed.into_iter().flatten().enumerate() {
            for batch in batches {
                spill.add(partition, batch)?;
            }
        }
        self.passed_bytes = 0;
        self.spill = Some(spill);
        reservation.resize(groups);
        Ok(())
    }

    pub fn sink(&mut self, batch: &RecordBatch) -> Result<()> {
        if let Some(mut runs) = self.runs.take() {
            let sunk = runs.sink(self, batch);
            self.runs = Some(runs);
            return sunk;
        }
        self.sink_hashed(batch)
    }

    /// Sinks `batch` through the hash table of group keys, or passes its rows on.
    fn sink_hashed(&mut self, batch: &RecordBatch) -> Result<()> {
        // Without GROUP BY every row is in group 0, which needs no id per row.
        let Some(index) = &self.index else {
            self.update(batch, None)?;
            return self.account();
        };
        let keys = evaluate_all(&self.group, batch)?;
        if let Some(spill) = &self.spill {
            return spill.add_rows(batch, &index.partitions_of(&keys)?);
        }
        if let Some(passed) = &mut self.passed {
            let partitions = index.partitions_of(&keys)?;
            pass_on(batch, &partitions, passed)?;
            self.passed_bytes += batch.get_array_memory_size();
            return self.account();
        }
        let group_ids = self.group_ids(&keys)?;
        self.update(batch, Some(&group_ids))?;
        self.decide_pass_on(batch.num_rows());
        self.account()
    }

    /// Counts `rows` more rows hashed and, once there are enough to judge, starts passing
    /// rows on if the groups do not reduce them and the merge can take rows by partition.
    fn decide_pass_on(&mut self, rows: usize) {
        if self.hashed_rows >= PASS_ON_CHECK_ROWS {
            return;
        }
        self.hashed_rows += rows;
        // Keys looked up by value cost a load each, less than passing their rows on.
        let by_value = self
            .index
            .as_ref()
            .is_some_and(GroupIndex::looks_up_by_value);
        if self.hashed_rows >= PASS_ON_CHECK_ROWS
            && self.groups as f64 > self.hashed_rows as f64 * PASS_ON_GROUPS_PER_ROW
            && !by_value
            && self.can_split()
        {
            self.passed = Some(vec![Vec::new(); GROUP_PARTITIONS]);
        }
    }

    /// Adds `batch`'s rows to the accumulators, each row to its group in `group_ids`.
    fn update(&mut self, batch: &RecordBatch, group_ids: Option<&[usize]>) -> Result<()> {
        // With few groups, rows sorted by group once let sums and counts total each group's
        // rows in a register (ADR 0036).
        let by_group = match group_ids {
            Some(ids)
                if self.groups <= FEW_GROUPS
                    && ids.len() >= FEW_GROUPS_MIN_ROWS
                    && self
                        .accumulators
                        .iter()
                        .any(Accumulator::takes_rows_by_group) =>
            {
                Some(RowsByGroup::new(ids, self.groups))
            }
            _ => None,
        };
        for (call, accumulator) in self.aggregates.iter().zip(&mut self.accumulators) {
            accumulator.resize(self.groups);
            self.collected_bytes += match &call.filter {
                None => accumulator.update_from(call, batch, group_ids, by_group.as_ref())?,
                Some(condition) => {
                    let keep = evaluate(condition, batch)?;
                    let keep = crate::functions::nulls_as_false(keep.as_boolean());
                    let kept = crate::select::filter_batch(batch, &keep)?;
                    let groups: Option<Vec<usize>> = group_ids.map(|ids| {
                        ids.iter()
                            .zip(keep.values())
                            .filter_map(|(g, k)| k.then_some(*g))
                            .collect()
                    });
                    accumulator.update_from(call, &kept, groups.as_deref(), None)?
                }
            };
        }
        Ok(())
    }

    /// Each row's group id for these group key columns, adding the groups not seen before
    /// (and their keys).
    fn group_ids(&mut self, keys: &[ArrayRef]) -> Result<Vec<usize>> {
        let index = self.index.as_mut().expect("a grouped aggregation");
        self.new_rows.clear();
        index.intern(keys, &mut self.ids, &mut self.new_rows)?;
        if !self.new_rows.is_empty() {
            let rows = arrow::array::UInt32Array::from(self.new_rows.clone());
            // Keys that came as dictionaries are kept plain, as the output has them.
            let taken = keys
                .iter()
                .zip(&self.group)
                .map(|(k, expr)| {
                    let taken = arrow::compute::take(k, &rows, None)?;
                    match taken.data_type() == &expr.data_type() {
                        true => Ok(taken),
                        false => cast(&taken, &expr.data_type()),
                    }
                })
                .collect::<Result<Vec<_>, _>>()?;
            self.key_bytes += taken
                .iter()
                .map(|k| k.get_array_memory_size())
                .sum::<usize>();
            self.group_keys.push(taken);
        }
        self.groups = index.len();
        Ok(self.ids.iter().map(|&id| id as usize).collect())
    }

    /// The input columns this aggregation reads only as whole group keys, which may come as
    /// dictionaries (ADR 0037).
    pub fn columns_read_only_as_keys(&self) -> Vec<usize> {
        let mut read_otherwise = Vec::new();
        let mut keys = Vec::new();
        for expr in &self.group {
            match expr {
                Expr::Column { index, .. } => keys.push(*index),
                other => read_otherwise.extend(other.column_indices()),
            }
        }
        for call in &self.aggregates {
            let exprs = call.arg.iter().chain(&call.filter);
            let order = call.order.iter().map(|key| &key.expr);
            for expr in exprs.chain(order) {
                read_otherwise.extend(expr.column_indices());
            }
        }
        keys.retain(|k| !read_otherwise.contains(k));
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// Whether partial aggregations of this kind over parts of the input can be merged.
    pub fn can_merge(&self) -> bool {
        self.accumulators.iter().all(Accumulator::can_merge)
    }

    /// An empty aggregation of the same groups and aggregates, for another part of the input.
    pub fn empty_like(&self) -> Result<HashAggregateSink> {
        let mut empty = HashAggregateSink::new(&self.group, &self.aggregates, self.schema.clone())?
            .with_output_filter(self.output_filter.clone());
        if let Some(memory) = &self.memory {
            empty = empty.with_memory(memory.pool());
        }
        Ok(empty)
    }

    /// This aggregation with `filter` applied to its output.
    pub fn with_output_filter(mut self, filter: Option<Expr>) -> HashAggregateSink {
        self.output_filter = filter;
        self
    }

    /// Whether partial aggregations of this kind can be merged partition by partition.
    fn can_split(&self) -> bool {
        self.index.is_some() && self.accumulators.iter().all(Accumulator::can_split)
    }

    /// Folds in the aggregation of another part of the input: at once, or when this one
    /// finishes if both can be merged partition by partition.
    pub fn merge(&mut self, mut other: HashAggregateSink) -> Result<()> {
        self.finished.append(&mut other.finished);
        self.run_groups += other.run_groups;
        if self.can_split() {
            self.deferred.push(other);
            return Ok(());
        }
        if self.index.is_some() && self.groups == 0 {
            // Nothing to fold into: the other part's groups are kept as they are, not
            // interned again.
            other.finished = std::mem::take(&mut self.finished);
            other.run_groups = self.run_groups;
            *self = other;
            return Ok(());
        }
        let map: Vec<usize> = match &self.index {
            None => vec![0],
            Some(_) => self.group_ids(&other.key_columns()?)?,
        };
        for (mine, mut theirs) in self.accumulators.iter_mut().zip(other.accumulators) {
            mine.resize(self.groups);
            theirs.resize(other.groups);
            mine.merge(theirs, &map)?;
        }
        self.collected_bytes += other.collected_bytes;
        self.account()
    }

    /// Each group key column, in group id order.
    fn key_columns(&self) -> Result<Vec<ArrayRef>> {
        let mut columns: Vec<ArrayRef> = Vec::new();
        for (position, key) in self.group.iter().enumerate() {
            let pieces: Vec<&dyn Array> = self
                .group_keys
                .iter()
                .map(|piece| piece[position].as_ref())
                .collect();
            columns.push(if pieces.is_empty() {
                arrow::array::new_empty_array(&key.data_type())
            } else {
                arrow::compute::concat(&pieces)?
            });
        }
        Ok(columns)
    }

    /// The aggregation's rows, with those of the partial aggregations merged into it.
    pub fn finish(mut self) -> Result<Vec<RecordBatch>> {
        let mut finished = std::mem::take(&mut self.finished);
        let mut rows = self.finish_hashed()?;
        rows.append(&mut finished);
        Ok(rows)
    }

    /// The rows of the groups in the hash tables, with those of the partial aggregations.
    fn finish_hashed(mut self) -> Result<Vec<RecordBatch>> {
        let filter = self.output_filter.take();
        let filter = filter.as_ref();
        let mut parts = std::mem::take(&mut self.deferred);
        parts.push(self);
        if parts.iter().all(|p| p.groups == 0 && p.passed.is_none()) {
            let empty = parts.pop().expect("this aggregation");
            return Ok(vec![keep(filter, &empty.finish_one()?)?]);
        }
        parts.retain(|p| p.groups > 0 || p.passed.is_some());
        let groups: usize = parts.iter().map(|p| p.groups).sum();
        let passed = parts.iter().any(|p| p.passed.is_some());
        if !passed && (parts.len() < 2 || groups < PARALLEL_MERGE_GROUPS) {
            let mut parts = parts.into_iter();
            let Some(mut merged) = parts.next() else {
                return Ok(Vec::new());
            };
            for part in parts {
                merged.merge_now(part)?;
            }
            return Ok(vec![keep(filter, &merged.finish_one()?)?]);
        }
        finish_by_partition(parts, filter)
    }

    /// Folds in another partial aggregation now.
    fn merge_now(&mut self, mut other: HashAggregateSink) -> Result<()> {
        let map = self.group_ids(&other.key_columns()?)?;
        for (mine, theirs) in self.accumulators.iter_mut().zip(&mut other.accumulators) {
            mine.resize(self.groups);
            theirs.resize(other.groups);
            mine.merge_groups(theirs, &(0..other.groups as u32).collect::<Vec<_>>(), &map)?;
        }
        Ok(())
    }

    fn finish_one(self) -> Result<RecordBatch> {
        let mut columns = self.key_columns()?;
        for mut accumulator in self.accumulators {
            accumulator.resize(self.groups);
            columns.push(accumulator.finish()?);
        }
        let columns = columns
            .into_iter()
            .zip(self.schema.fields())
            .map(|(c, f)| {
                if c.data_type() == f.data_type() {
                    Ok(c)
                } else {
                    cast(&c, f.data_type())
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(self.groups));
        Ok(RecordBatch::try_new_with_options(
            self.schema,
            columns,
            &options,
        )?)
    }
}

/// Merges partial aggregations (grouped, every accumulator able to split) partition by
/// partition on the thread pool, and finishes each partition: its groups are interned once,
/// into a table sized for them.
fn finish_by_partition(
    parts: Vec<HashAggregateSink>,
    filter: Option<&Expr>,
) -> Result<Vec<RecordBatch>> {
    use rayon::prelude::*;
    /// What the merge needs of a partial aggregation: its key columns in the pieces it took
    /// them in (never concatenated: each partition takes its groups' keys from the pieces),
    /// the ids of its groups in each partition, and its accumulators. Its hash tables are let
    /// go first.
    struct Partial {
        key_pieces: Vec<Vec<ArrayRef>>,
        /// The id of the first group of each piece.
        piece_starts: Vec<u32>,
        members: Vec<Vec<u32>>,
        accumulators: Vec<Accumulator>,
        /// Rows passed on unaggregated, by partition.
        passed: Vec<Vec<RecordBatch>>,
        /// Rows passed on to disk, by partition; each taken by its partition's merge.
        spilled: Vec<Mutex<Option<SpillFile>>>,
    }
    let template = parts[0].empty_like()?;
    let partials = parts
        .into_iter()
        .map(|mut part| {
            for accumulator in &mut part.accumulators {
                accumulator.resize(part.groups);
            }
            let mut piece_starts = Vec::with_capacity(part.group_keys.len());
            let mut start = 0u32;
            for piece in &part.group_keys {
                piece_starts.push(start);
                start += piece.first().map_or(0, |k| k.len() as u32);
            }
            let spilled = match part.spill.take() {
                Some(spill) => spill.finish()?.into_iter().map(Mutex::new).collect(),
                None => Vec::new(),
            };
            Ok(Partial {
                spilled,
                key_pieces: std::mem::take(&mut part.group_keys),
                piece_starts,
                members: part.index.take().expect("grouped").into_members(),
                accumulators: std::mem::take(&mut part.accumulators),
                passed: part.passed.take().unwrap_or_default(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let merge_partition = |partition: usize| -> Result<RecordBatch> {
        let mut merged = template.empty_like()?;
        let index = merged.index.as_mut().expect("grouped");
        index.without_direct_ids();
        let passed_rows: usize = partials
            .iter()
            .filter_map(|p| p.passed.get(partition))
            .flatten()
            .map(RecordBatch::num_rows)
            .sum();
        let groups = partials
            .iter()
            .map(|p| p.members[partition].len())
            .sum::<usize>()
            + passed_rows;
        index.reserve(partition, groups);
        for partial in &partials {
            let members = &partial.members[partition];
            if members.is_empty() {
                continue;
            }
            let at: Vec<(usize, usize)> = members
                .iter()
                .map(|&id| {
                    let piece = partial.piece_starts.partition_point(|&s| s <= id) - 1;
                    (piece, (id - partial.piece_starts[piece]) as usize)
                })
                .collect();
            let taken = (0..template.group.len())
                .map(|position| {
                    let pieces: Vec<&dyn Array> = partial
                        .key_pieces
                        .iter()
                        .map(|piece| piece[position].as_ref())
                        .collect();
                    arrow::compute::interleave(&pieces, &at)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let map = merged.group_ids(&taken)?;
            for (mine, theirs) in merged.accumulators.iter_mut().zip(&partial.accumulators) {
                mine.resize(merged.groups);
                mine.merge_groups(theirs, members, &map)?;
            }
        }
        let mut add_rows = |batch: &RecordBatch| -> Result<()> {
            let keys = evaluate_all(&merged.group, batch)?;
            let group_ids = merged.group_ids(&keys)?;
            merged.update(batch, Some(&group_ids))
        };
        for batch in partials
            .iter()
            .filter_map(|p| p.passed.get(partition))
            .flatten()
        {
            add_rows(batch)?;
        }
        for partial in &partials {
            let file = partial.spilled.get(partition).and_then(|file| {
                let mut file = file.lock().expect("spill file lock");
                file.take()
            });
            for batch in file.map(SpillFile::read).transpose()?.into_iter().flatten() {
                add_rows(&batch?)?;
            }
        }
        keep(filter, &merged.finish_one()?)
    };
    // The pool's threads work for this statement too: they enter its control.
    let control = crate::control::current();
    let batches = (0..GROUP_PARTITIONS)
        .into_par_iter()
        .map(|partition| {
            let _entered = control.as_ref().map(|c| c.enter());
            crate::control::check_current()?;
            merge_partition(partition)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(batches.into_iter().filter(|b| b.num_rows() > 0).collect())
}

/// The rows of `batch` that `filter` keeps; all of them without one.
fn keep(filter: Option<&Expr>, batch: &RecordBatch) -> Result<RecordBatch> {
    match filter {
        None => Ok(batch.clone()),
        Some(condition) => crate::select::filter_where(condition, batch),
    }
}

/// Adds one to the count of the group of each row whose value is not NULL.
fn count_valid(counts: &mut [i64], values: &dyn Array, groups: &[usize]) {
    // Logical NULLs: a NULL literal's array has no validity buffer.
    match values.logical_nulls() {
        None => groups.iter().for_each(|&g| counts[g] += 1),
        Some(nulls) => nulls
            .valid_indices()
            .for_each(|row| counts[groups[row]] += 1),
    }
}
