//! Group ids of one integer key column looked up by value, without hashing: a slot per value
//! between the least and greatest key seen, holding the id of the key already interned there.
//! It stands in for the hashed index while the keys fit the slots: rows whose key has a slot
//! skip hashing, and new keys are only hashed for their partition. Aggregations by a customer
//! or part key over rows in no key order (after a join) then look up each row with one load.

use arrow::datatypes::DataType;

/// The most slots: 4 bytes each, 16 MB.
const MAX_SPAN: i64 = 1 << 22;

pub struct DirectIds {
    /// The key of slot 0.
    base: i64,
    /// Per value from `base` on, its id plus one; 0 when not known.
    slots: Vec<u32>,
}

impl DirectIds {
    /// A front for keys of these types: one integer or date column.
    pub fn for_types(types: &[DataType]) -> Option<DirectIds> {
        let [key] = types else {
            return None;
        };
        matches!(
            key,
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Date32
        )
        .then(|| DirectIds {
            base: 0,
            slots: Vec::new(),
        })
    }

    /// Sets `ids` to the id of each of `values` whose slot knows it, and lists in `missing`
    /// the rows whose slot does not (their ids are left 0). False, doing nothing, when the
    /// slots would have to span more than `MAX_SPAN` values to cover them.
    pub fn lookup(&mut self, values: &[i64], ids: &mut Vec<u32>, missing: &mut Vec<u32>) -> bool {
        let (Some(&low), Some(&high)) = (values.iter().min(), values.iter().max()) else {
            ids.clear();
            return true;
        };
        if !self.cover(low, high) {
            return false;
        }
        ids.clear();
        ids.reserve(values.len());
        for (row, &value) in values.iter().enumerate() {
            let slot = self.slots[(value - self.base) as usize];
            if slot == 0 {
                missing.push(row as u32);
            }
            ids.push(slot.wrapping_sub(1));
        }
        true
    }

    /// The id of `value`, if known; `value` is within the slots (it was looked up).
    #[inline]
    pub fn id_of(&self, value: i64) -> Option<u32> {
        self.slots[(value - self.base) as usize].checked_sub(1)
    }

    /// Records that `value` has id `id`; `value` is within the slots (it was looked up).
    pub fn remember(&mut self, value: i64, id: u32) {
        self.slots[(value - self.base) as usize] = id + 1;
    }

    /// Grows the slots to cover `low..=high`, if that spans at most `MAX_SPAN` values.
    fn cover(&mut self, low: i64, high: i64) -> bool {
        if self.slots.is_empty() {
            if high.checked_sub(low).is_none_or(|span| span >= MAX_SPAN) {
                return false;
            }
            self.base = low;
            self.slots = vec![0; (high - low + 1) as usize];
            return true;
        }
        let end = self.base + self.slots.len() as i64 - 1;
        let (new_low, new_high) = (low.min(self.base), high.max(end));
        if new_high
            .checked_sub(new_low)
            .is_none_or(|span| span >= MAX_SPAN)
        {
            return false;
        }
        if new_low < self.base {
            let mut slots = vec![0; (new_high - new_low + 1) as usize];
            let offset = (self.base - new_low) as usize;
            slots[offset..offset + self.slots.len()].copy_from_slice(&self.slots);
            self.slots = slots;
            self.base = new_low;
        } else if new_high > end {
            self.slots.resize((new_high - self.base + 1) as usize, 0);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_up_remembered_keys_and_grows_both_ways() {
        let mut direct = DirectIds::for_types(&[DataType::Int64]).unwrap();
        let (mut ids, mut missing) = (Vec::new(), Vec::new());
        assert!(direct.lookup(&[10, 12, 10], &mut ids, &mut missing));
        assert_eq!(missing, [0, 1, 2]);
        direct.remember(10, 0);
        direct.remember(12, 1);
        missing.clear();
        assert!(direct.lookup(&[12, 5, 10, 20], &mut ids, &mut missing));
        assert_eq!(missing, [1, 3]);
        assert_eq!((ids[0], ids[2]), (1, 0));
        direct.remember(5, 2);
        missing.clear();
        assert!(direct.lookup(&[5, 10, 12], &mut ids, &mut missing));
        assert!(missing.is_empty());
        assert_eq!(ids, [2, 0, 1]);
        // Too wide a span: nothing is looked up.
        assert!(!direct.lookup(&[5, MAX_SPAN + 5], &mut ids, &mut missing));
        assert!(!direct.lookup(&[i64::MIN, i64::MAX], &mut ids, &mut missing));
        assert!(DirectIds::for_types(&[DataType::Utf8]).is_none());
        assert!(DirectIds::for_types(&[DataType::Int64, DataType::Int64]).is_none());
    }
}
