//! Per-group sums. Decimal sums are kept in 64 bits while every group's sum fits, and
//! widened to 128 bits, all groups at once, the first time one does not: most sums of money
//! fit, and half the width halves their memory and the cost of adding.

use arrow::array::{Array, AsArray, Decimal128Array, PrimitiveArray};
use arrow::datatypes::{ArrowPrimitiveType, DataType, Decimal64Type, Decimal128Type};

use crate::{ExecError, Result};

/// Per-group sums and whether each group has had a value: a sum of no values is NULL. Kept
/// apart rather than as `Option`s, which would double an `i128` sum's size.
#[derive(Default)]
pub struct Sums<T> {
    values: Vec<T>,
    seen: Vec<bool>,
}

#[cold]
fn overflow<T: Summand>() -> ExecError {
    ExecError::Execution(T::OVERFLOW.into())
}

/// A value that sums can add, failing on overflow where its type can overflow.
pub trait Summand: arrow::datatypes::ArrowNativeType {
    const OVERFLOW: &'static str;
    fn checked_plus(self, other: Self) -> Option<Self>;
}

impl Summand for i64 {
    const OVERFLOW: &'static str = "numeric overflow: sum out of BIGINT range";
    fn checked_plus(self, other: i64) -> Option<i64> {
        self.checked_add(other)
    }
}

impl Summand for i128 {
    const OVERFLOW: &'static str = "numeric overflow: decimal sum";
    fn checked_plus(self, other: i128) -> Option<i128> {
        self.checked_add(other)
    }
}

impl Summand for f64 {
    const OVERFLOW: &'static str = "a double sum does not overflow";
    fn checked_plus(self, other: f64) -> Option<f64> {
        Some(self + other)
    }
}

impl<T: Summand> Sums<T> {
    /// Adds `value` to `group`'s sum (a sum not yet seen is zero).
    #[inline]
    pub fn add(&mut self, group: usize, value: T) -> Result<()> {
        let sum = &mut self.values[group];
        *sum = sum.checked_plus(value).ok_or_else(overflow::<T>)?;
        self.seen[group] = true;
        Ok(())
    }

    /// Adds each non-NULL value of `values` to the sum of its row's group.
    pub fn add_all<A>(
        &mut self,
        values: &arrow::array::PrimitiveArray<A>,
        groups: &[usize],
    ) -> Result<()>
    where
        A: arrow::datatypes::ArrowPrimitiveType<Native = T>,
    {
        match values.nulls() {
            None => {
                for (&g, &v) in groups.iter().zip(values.values()) {
                    self.add(g, v)?;
                }
            }
            Some(nulls) => {
                for row in nulls.valid_indices() {
                    self.add(groups[row], values.value(row))?;
                }
            }
        }
        Ok(())
    }

    /// Adds every non-NULL value of `values` to `group`'s sum: totalled first in a register,
    /// without a store per row.
    pub fn add_all_to<A>(
        &mut self,
        values: &arrow::array::PrimitiveArray<A>,
        group: usize,
    ) -> Result<()>
    where
        A: arrow::datatypes::ArrowPrimitiveType<Native = T>,
    {
        if let Some(total) = total(values)? {
            self.add(group, total)?;
        }
        Ok(())
    }

    /// Adds the non-NULL values of `values` at `rows` to `group`'s sum, totalled first in a
    /// register.
    pub fn add_rows<A>(
        &mut self,
        values: &arrow::array::PrimitiveArray<A>,
        group: usize,
        rows: &[u32],
    ) -> Result<()>
    where
        A: arrow::datatypes::ArrowPrimitiveType<Native = T>,
    {
        if let Some(total) = total_of_rows(values, rows)? {
            self.add(group, total)?;
        }
        Ok(())
    }

    /// Adds the sums of `other`'s groups `from`, whose `from[i]` is this one's `map[i]`.
    pub fn merge_groups(&mut self, other: &Sums<T>, from: &[u32], map: &[usize]) -> Result<()> {
        for (&g, &to) in from.iter().zip(map) {
            if let Some(sum) = other.get(g as usize) {
                self.add(to, sum)?;
            }
        }
        Ok(())
    }
}

impl<T: arrow::datatypes::ArrowNativeType> Sums<T> {
    pub fn resize(&mut self, groups: usize) {
        self.values.resize(groups, T::default());
        self.seen.resize(groups, false);
    }

    pub fn get(&self, group: usize) -> Option<T> {
        self.seen[group].then(|| self.values[group])
    }

    pub fn into_array<A: arrow::datatypes::ArrowPrimitiveType<Native = T>>(
        self,
    ) -> arrow::array::PrimitiveArray<A> {
        let nulls = arrow::buffer::NullBuffer::from(self.seen);
        arrow::array::PrimitiveArray::new(self.values.into(), Some(nulls))
    }
}

/// The sum of the non-NULL values of `values`; `None` when there are none.
fn total<A, T>(values: &arrow::array::PrimitiveArray<A>) -> Result<Option<T>>
where
    A: arrow::datatypes::ArrowPrimitiveType<Native = T>,
    T: Summand,
{
    if values.null_count() == values.len() {
        return Ok(None);
    }
    let mut total = T::default();
    let mut add = |value: T| -> Result<()> {
        total = total.checked_plus(value).ok_or_else(overflow::<T>)?;
        Ok(())
    };
    match values.nulls() {
        None => values.values().iter().try_for_each(|&v| add(v))?,
        Some(nulls) => nulls
            .valid_indices()
            .try_for_each(|row| add(values.value(row)))?,
    }
    Ok(Some(total))
}

/// The sum of the non-NULL values of `values` at `rows`; `None` when there are none.
fn total_of_rows<A, T>(values: &arrow::array::PrimitiveArray<A>, rows: &[u32]) -> Result<Option<T>>
where
    A: arrow::datatypes::ArrowPrimitiveType<Native = T>,
    T: Summand,
{
    let mut total = T::default();
    let all = values.values();
    match values.nulls() {
        None if !rows.is_empty() => {
            for &row in rows {
                total = total
                    .checked_plus(all[row as usize])
                    .ok_or_else(overflow::<T>)?;
            }
            Ok(Some(total))
        }
        None => Ok(None),
        Some(nulls) => {
            let mut seen = false;
            for &row in rows.iter().filter(|&&r| nulls.is_valid(r as usize)) {
                total = total
                    .checked_plus(all[row as usize])
                    .ok_or_else(overflow::<T>)?;
                seen = true;
            }
            Ok(seen.then_some(total))
        }
    }
}

/// Per-group decimal sums (unscaled), 64 bits wide until a sum needs more.
pub enum DecimalSums {
    Narrow(Sums<i64>),
    Wide(Sums<i128>),
}

impl Default for DecimalSums {
    fn default() -> Self {
        DecimalSums::Narrow(Sums::default())
    }
}

impl DecimalSums {
    pub fn resize(&mut self, groups: usize) {
        match self {
            DecimalSums::Narrow(sums) => sums.resize(groups),
            DecimalSums::Wide(sums) => sums.resize(groups),
        }
    }

    pub fn get(&self, group: usize) -> Option<i128> {
        match self {
            DecimalSums::Narrow(sums) => sums.get(group).map(i128::from),
            DecimalSums::Wide(sums) => sums.get(group),
        }
    }

    /// The sums, 128 bits wide from now on.
    fn wide(&mut self) -> &mut Sums<i128> {
        if let DecimalSums::Narrow(narrow) = self {
            let wide = Sums {
                values: narrow.values.iter().map(|&v| i128::from(v)).collect(),
                seen: std::mem::take(&mut narrow.seen),
            };
            *self = DecimalSums::Wide(wide);
        }
        match self {
            DecimalSums::Wide(wide) => wide,
            DecimalSums::Narrow(_) => unreachable!("just widened"),
        }
    }

    /// Adds each non-NULL value of `values`, a decimal column of either width, to the sum of
    /// its row's group.
    pub fn add_all(&mut self, values: &dyn Array, groups: &[usize]) -> Result<()> {
        match values.data_type() {
            DataType::Decimal64(..) => {
                self.add_all_of(values.as_primitive::<Decimal64Type>(), groups)
            }
            _ => self.add_all_of(values.as_primitive::<Decimal128Type>(), groups),
        }
    }

    fn add_all_of<A>(&mut self, values: &PrimitiveArray<A>, groups: &[usize]) -> Result<()>
    where
        A: ArrowPrimitiveType,
        A::Native: Unscaled,
    {
        let resume = match self {
            DecimalSums::Wide(_) => 0,
            DecimalSums::Narrow(sums) => match add_all_narrow(sums, values, groups) {
                None => return Ok(()),
                Some(row) => row,
            },
        };
        let sums = self.wide();
        for (row, &group) in groups.iter().enumerate().skip(resume) {
            if values.is_valid(row) {
                sums.add(group, values.value(row).into())?;
            }
        }
        Ok(())
    }

    /// Adds every non-NULL value of `values`, a decimal column of either width, to `group`'s
    /// sum, totalled first in 128 bits.
    pub fn add_all_to(&mut self, values: &dyn Array, group: usize) -> Result<()> {
        let total = match values.data_type() {
            // No count of rows an array holds makes a 128-bit total of 64-bit values overflow.
            DataType::Decimal64(..) => {
                let values = values.as_primitive::<Decimal64Type>();
                let mut total = 0i128;
                let mut add = |v: i64| total += i128::from(v);
                match values.nulls() {
                    None => values.values().iter().for_each(|&v| add(v)),
                    Some(nulls) => nulls.valid_indices().for_each(|row| add(values.value(row))),
                }
                (values.null_count() < values.len()).then_some(total)
            }
            _ => total(values.as_primitive::<Decimal128Type>())?,
        };
        self.add_total(group, total)
    }

    /// Adds the non-NULL values of `values` at `rows`, a decimal column of either width, to
    /// `group`'s sum, totalled first in 128 bits.
    pub fn add_rows(&mut self, values: &dyn Array, group: usize, rows: &[u32]) -> Result<()> {
        let total = match values.data_type() {
            // No count of rows makes a 128-bit total of 64-bit values overflow.
            DataType::Decimal64(..) => {
                let values = values.as_primitive::<Decimal64Type>();
                let all = values.values();
                match values.nulls() {
                    None => (!rows.is_empty())
                        .then(|| rows.iter().map(|&r| i128::from(all[r as usize])).sum()),
                    Some(nulls) => {
                        let mut total = None;
                        for &row in rows.iter().filter(|&&r| nulls.is_valid(r as usize)) {
                            *total.get_or_insert(0i128) += i128::from(all[row as usize]);
                        }
                        total
                    }
                }
            }
            _ => total_of_rows(values.as_primitive::<Decimal128Type>(), rows)?,
        };
        self.add_total(group, total)
    }

    /// Adds a total of some values (`None` for none) to `group`'s sum.
    fn add_total(&mut self, group: usize, total: Option<i128>) -> Result<()> {
        let Some(total) = total else {
            return Ok(());
        };
        if let DecimalSums::Narrow(sums) = self
            && let Ok(total) = i64::try_from(total)
            && let Some(sum) = sums.values[group].checked_add(total)
        {
            sums.values[group] = sum;
            sums.seen[group] = true;
            return Ok(());
        }
        self.wide().add(group, total)
    }

    /// Adds the sums of `other`'s groups `from`, whose `from[i]` is this one's `map[i]`.
    pub fn merge_groups(&mut self, other: &DecimalSums, from: &[u32], map: &[usize]) -> Result<()> {
        let resume = match (&mut *self, other) {
            (DecimalSums::Narrow(sums), DecimalSums::Narrow(theirs)) => {
                match merge_narrow(sums, theirs, from, map) {
                    None => return Ok(()),
                    Some(at) => at,
                }
            }
            _ => 0,
        };
        let sums = self.wide();
        for (&g, &to) in from.iter().zip(map).skip(resume) {
            if let Some(sum) = other.get(g as usize) {
                sums.add(to, sum)?;
            }
        }
        Ok(())
    }

    pub fn into_array(self) -> Decimal128Array {
        match self {
            DecimalSums::Narrow(sums) => {
                let nulls = arrow::buffer::NullBuffer::from(sums.seen);
                let values: Vec<i128> = sums.values.into_iter().map(i128::from).collect();
                Decimal128Array::new(values.into(), Some(nulls))
            }
            DecimalSums::Wide(sums) => sums.into_array::<Decimal128Type>(),
        }
    }
}

/// Adds `values` to 64-bit sums up to the first row whose value or sum needs more bits, and
/// returns that row, not added; `None` when every row was.
fn add_all_narrow<A>(
    sums: &mut Sums<i64>,
    values: &PrimitiveArray<A>,
    groups: &[usize],
) -> Option<usize>
where
    A: ArrowPrimitiveType,
    A::Native: Unscaled,
{
    let mut add = |group: usize, value: A::Native| -> bool {
        let Some(value) = value.narrow() else {
            return false;
        };
        let sum = &mut sums.values[group];
        match sum.checked_add(value) {
            Some(total) => {
                *sum = total;
                sums.seen[group] = true;
                true
            }
            None => false,
        }
    };
    match values.nulls() {
        None => {
            for (row, (&g, &v)) in groups.iter().zip(values.values()).enumerate() {
                if !add(g, v) {
                    return Some(row);
                }
            }
        }
        Some(nulls) => {
            for row in nulls.valid_indices() {
                if !add(groups[row], values.value(row)) {
                    return Some(row);
                }
            }
        }
    }
    None
}

/// A decimal's unscaled value, of either width.
pub trait Unscaled: Copy + Into<i128> {
    /// The value in 64 bits, if it fits.
    fn narrow(self) -> Option<i64>;
}

impl Unscaled for i64 {
    #[inline]
    fn narrow(self) -> Option<i64> {
        Some(self)
    }
}

impl Unscaled for i128 {
    #[inline]
    fn narrow(self) -> Option<i64> {
        i64::try_from(self).ok()
    }
}

/// Merges 64-bit sums up to the first pair whose sum needs more bits, and returns its
/// position, not merged; `None` when every pair was.
fn merge_narrow(
    sums: &mut Sums<i64>,
    theirs: &Sums<i64>,
    from: &[u32],
    map: &[usize],
) -> Option<usize> {
    for (at, (&g, &to)) in from.iter().zip(map).enumerate() {
        if let Some(sum) = theirs.get(g as usize) {
            match sums.values[to].checked_add(sum) {
                Some(total) => {
                    sums.values[to] = total;
                    sums.seen[to] = true;
                }
                None => return Some(at),
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decimals(values: &[Option<i128>]) -> Decimal128Array {
        values.iter().copied().collect()
    }

    fn all(sums: &DecimalSums, groups: usize) -> Vec<Option<i128>> {
        (0..groups).map(|g| sums.get(g)).collect()
    }

    #[test]
    fn decimal_sums_widen_when_a_sum_or_a_value_needs_more_than_64_bits() {
        let mut sums = DecimalSums::default();
        sums.resize(3);
        let big = i64::MAX as i128;
        sums.add_all(
            &decimals(&[Some(5), None, Some(big), Some(-2)]),
            &[0, 1, 2, 0],
        )
        .unwrap();
        assert!(matches!(sums, DecimalSums::Narrow(_)));
        assert_eq!(all(&sums, 3), vec![Some(3), None, Some(big)]);
        // The second row overflows 64 bits: the first stays added once, the rest go on wide.
        sums.add_all(
            &decimals(&[Some(1), Some(10), None, Some(7)]),
            &[0, 2, 1, 0],
        )
        .unwrap();
        assert!(matches!(sums, DecimalSums::Wide(_)));
        assert_eq!(all(&sums, 3), vec![Some(11), None, Some(big + 10)]);
        let mut huge = DecimalSums::default();
        huge.resize(1);
        huge.add_all(&decimals(&[Some(1), Some(i128::from(u64::MAX))]), &[0, 0])
            .unwrap();
        assert_eq!(huge.get(0), Some(i128::from(u64::MAX) + 1));
        let array = huge.into_array();
        assert_eq!(array.value(0), i128::from(u64::MAX) + 1);
    }

    #[test]
    fn sums_into_one_group_total_each_batch_first() {
        let mut sums = DecimalSums::default();
        sums.resize(2);
        sums.add_all_to(&decimals(&[Some(5), None, Some(-2)]), 1)
            .unwrap();
        sums.add_all_to(&decimals(&[None, None]), 0).unwrap();
        assert!(matches!(sums, DecimalSums::Narrow(_)));
        assert_eq!(all(&sums, 2), vec![None, Some(3)]);
        // A batch whose total needs more than 64 bits widens the sums.
        let big = i64::MAX as i128;
        sums.add_all_to(&decimals(&[Some(big), Some(big)]), 1)
            .unwrap();
        assert!(matches!(sums, DecimalSums::Wide(_)));
        assert_eq!(sums.get(1), Some(2 * big + 3));
        assert!(sums.add_all_to(&decimals(&[Some(i128::MAX)]), 1).is_err());
        let mut ints = Sums::<i64>::default();
        ints.resize(1);
        let values = arrow::array::Int64Array::from(vec![Some(i64::MAX), Some(1)]);
        assert!(ints.add_all_to(&values, 0).is_err());
        let values = arrow::array::Int64Array::from(vec![Some(4), None, Some(-1)]);
        ints.add_all_to(&values, 0).unwrap();
        assert_eq!(ints.get(0), Some(3));
    }

    #[test]
    fn merged_decimal_sums_widen_at_the_pair_that_overflows() {
        let narrow = |values: &[Option<i128>]| {
            let mut sums = DecimalSums::default();
            sums.resize(values.len());
            let groups: Vec<usize> = (0..values.len()).collect();
            sums.add_all(&decimals(values), &groups).unwrap();
            sums
        };
        let big = i64::MAX as i128;
        let mut ours = narrow(&[Some(1), Some(big), None]);
        let theirs = narrow(&[Some(2), Some(3), Some(4)]);
        ours.merge_groups(&theirs, &[0, 1, 2], &[0, 1, 2]).unwrap();
        assert!(matches!(ours, DecimalSums::Wide(_)));
        assert_eq!(all(&ours, 3), vec![Some(3), Some(big + 3), Some(4)]);
        let mut small = narrow(&[Some(1)]);
        small.merge_groups(&ours, &[1], &[0]).unwrap();
        assert_eq!(small.get(0), Some(big + 4));
        let nulls = small.into_array();
        assert!(nulls.is_valid(0));
    }
}
