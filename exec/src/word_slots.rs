//! A hash join partition's keys, when they pack into words, in a table built for probing:
//! open addressing with linear probing, each slot holding the key itself and where its build
//! rows are (the row itself when the key has one). A probe reads one slot, most often one
//! cache line, where the interning index it is built from reads its tag, its bucket, the key
//! and the id in four places. Probes call `prefetch` some rows ahead, so that the misses of
//! several probes overlap.

/// One key and its build rows: `count` rows from `first` in the partition's grouped rows, or,
/// when `count` is 1, `first` is the build row itself. An empty slot has `count` 0.
#[derive(Clone, Copy)]
struct Slot<K> {
    key: K,
    first: u32,
    count: u32,
}

pub struct WordSlots<K> {
    slots: Vec<Slot<K>>,
    mask: usize,
}

impl<K: Copy + Eq + Default> WordSlots<K> {
    /// The table of `keys` (each with its hash), key `i` holding the rows
    /// `grouped[starts[i]..starts[i + 1]]`.
    pub fn build(keys: &[K], hashes: &[u64], starts: &[u32], grouped: &[u32]) -> WordSlots<K> {
        debug_assert_eq!(keys.len(), hashes.len());
        debug_assert_eq!(keys.len() + 1, starts.len());
        // At most three quarters full, so that a miss ends after a few slots.
        let capacity = (keys.len() * 4 / 3 + 1).next_power_of_two();
        let empty = Slot {
            key: K::default(),
            first: 0,
            count: 0,
        };
        let mut slots = vec![empty; capacity];
        let mask = capacity - 1;
        for (i, (&key, &hash)) in keys.iter().zip(hashes).enumerate() {
            let (start, end) = (starts[i], starts[i + 1]);
            let count = end - start;
            let first = if count == 1 {
                grouped[start as usize]
            } else {
                start
            };
            let mut at = hash as usize & mask;
            while slots[at].count != 0 {
                at = (at + 1) & mask;
            }
            slots[at] = Slot { key, first, count };
        }
        WordSlots { slots, mask }
    }

    /// The build rows of `key` (whose hash is `hash`), from the partition's grouped rows.
    #[inline]
    pub fn find<'a>(&'a self, hash: u64, key: K, grouped: &'a [u32]) -> &'a [u32] {
        let mut at = hash as usize & self.mask;
        loop {
            let slot = &self.slots[at];
            if slot.count == 0 {
                return &[];
            }
            if slot.key == key {
                return match slot.count {
                    1 => std::slice::from_ref(&slot.first),
                    count => &grouped[slot.first as usize..(slot.first + count) as usize],
                };
            }
            at = (at + 1) & self.mask;
        }
    }

    /// Asks the processor to load the slot a key of this hash is looked up at first.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        let slot = &self.slots[hash as usize & self.mask];
        prefetch_read(slot as *const Slot<K> as *const i8);
    }
}

#[inline]
fn prefetch_read(address: *const i8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees, and the address is of
    // a live slot.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(address);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_key_and_no_other() {
        // Keys 0, 10, 20, ...; key i has i % 3 + 1 rows. Hashes collide on purpose (a few
        // distinct values) so that probes walk past other keys' slots.
        let keys: Vec<u64> = (0..1000).map(|i| i * 10).collect();
        let hashes: Vec<u64> = keys.iter().map(|k| k % 7).collect();
        let mut starts = vec![0u32];
        let mut grouped = Vec::new();
        for (i, _) in keys.iter().enumerate() {
            for r in 0..(i % 3 + 1) {
                grouped.push((i * 100 + r) as u32);
            }
            starts.push(grouped.len() as u32);
        }
        let slots = WordSlots::build(&keys, &hashes, &starts, &grouped);
        for (i, (&key, &hash)) in keys.iter().zip(&hashes).enumerate() {
            slots.prefetch(hash);
            let expected: Vec<u32> = (0..(i % 3 + 1)).map(|r| (i * 100 + r) as u32).collect();
            assert_eq!(slots.find(hash, key, &grouped), &expected[..]);
        }
        for missing in [5u64, 15, 10_001] {
            assert!(slots.find(missing % 7, missing, &grouped).is_empty());
        }
    }

    #[test]
    fn an_empty_table_finds_nothing() {
        let slots = WordSlots::<u64>::build(&[], &[], &[0], &[]);
        assert!(slots.find(3, 3, &[]).is_empty());
    }
}
