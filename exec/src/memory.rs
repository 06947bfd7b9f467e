//! The memory a process lets its queries hold (`--memory-limit`). Operators that can spill
//! (sorts, hash joins' build sides, hash aggregations, kept scans) reserve what they hold from
//! one pool; when the pool refuses, they write rows to disk (`spill`) instead of failing.
//! Other memory (batches in flight, query results) is not counted: the limit bounds what
//! grows with the input, not every allocation.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::{ExecError, Result};

/// The share of the machine's memory a process lets queries hold unless told otherwise.
const DEFAULT_SHARE: f64 = 0.8;

/// What operators that can spill may hold while spilling is forced (`debug_force_external`):
/// enough for a few batches, so that every sort, join and aggregation of more spills.
const FORCED_SPILL_LIMIT: usize = 1 << 20;

/// How much memory queries may hold, and how much they hold now.
#[derive(Debug)]
pub struct MemoryPool {
    limit: AtomicUsize,
    used: AtomicUsize,
    /// Operators that can spill do so past `FORCED_SPILL_LIMIT` whatever the limit: DuckDB's
    /// `debug_force_external`, to run the spilling paths on small inputs.
    force_spill: AtomicBool,
    /// Where spilled rows are written: the system's temporary folder unless told otherwise.
    spill_dir: PathBuf,
}

impl MemoryPool {
    pub fn new(limit: usize) -> Arc<MemoryPool> {
        MemoryPool::spilling_into(limit, std::env::temp_dir())
    }

    /// A pool whose operators spill into `dir`.
    pub fn spilling_into(limit: usize, dir: PathBuf) -> Arc<MemoryPool> {
        Arc::new(MemoryPool {
            limit: AtomicUsize::new(limit),
            used: AtomicUsize::new(0),
            force_spill: AtomicBool::new(false),
            spill_dir: dir,
        })
    }

    /// A pool of 80% of the machine's memory.
    pub fn with_default_limit() -> Arc<MemoryPool> {
        MemoryPool::new(default_memory_limit())
    }

    pub fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Changes the limit; what is held already stays held.
    pub fn set_limit(&self, bytes: usize) {
        self.limit.store(bytes, Ordering::Relaxed);
    }

    /// Whether operators that can spill do so past a small fixed amount (see `force_spill`).
    pub fn forces_spill(&self) -> bool {
        self.force_spill.load(Ordering::Relaxed)
    }

    pub fn set_force_spill(&self, forced: bool) {
        self.force_spill.store(forced, Ordering::Relaxed);
    }

    /// The bytes reserved now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    pub fn spill_dir(&self) -> &std::path::Path {
        &self.spill_dir
    }

    /// A reservation of nothing yet, to grow as its holder's memory grows.
    pub fn reservation(self: &Arc<Self>) -> Reservation {
        Reservation {
            pool: self.clone(),
            bytes: 0,
        }
    }

    /// Past the limit, operators spill; past this, what cannot spill fails: the limit and a
    /// quarter more, at least 64 MiB more.
    pub fn hard_limit(&self) -> usize {
        let limit = self.limit();
        limit.saturating_add((limit / 4).max(64 << 20))
    }

    fn try_grow(&self, bytes: usize) -> bool {
        let limit = match self.forces_spill() {
            true => self.limit().min(FORCED_SPILL_LIMIT),
            false => self.limit(),
        };
        self.try_grow_to(bytes, limit)
    }

    fn try_grow_to(&self, bytes: usize, limit: usize) -> bool {
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                let wanted = used.checked_add(bytes)?;
                (wanted <= limit).then_some(wanted)
            })
            .is_ok()
    }

    fn grow(&self, bytes: usize) {
        self.used.fetch_add(bytes, Ordering::Relaxed);
    }

    fn shrink(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// Bytes one holder has reserved from a pool, given back when it is dropped.
#[derive(Debug)]
pub struct Reservation {
    pool: Arc<MemoryPool>,
    bytes: usize,
}

impl Reservation {
    pub fn pool(&self) -> &Arc<MemoryPool> {
        &self.pool
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Reserves `bytes` more if the pool has them; false (and nothing reserved) if not.
    pub fn try_grow(&mut self, bytes: usize) -> bool {
        let granted = self.pool.try_grow(bytes);
        if granted {
            self.bytes += bytes;
        }
        granted
    }

    /// Reserves `bytes` more for memory that cannot spill (collected rows, an aggregation
    /// that cannot be split): granted up to the pool's hard limit, a margin past its limit,
    /// so that what holds little still runs beside spilled work; false (and nothing reserved)
    /// past it, where the statement must fail.
    pub fn try_grow_unspillable(&mut self, bytes: usize) -> bool {
        let granted = self.pool.try_grow_to(bytes, self.pool.hard_limit());
        if granted {
            self.bytes += bytes;
        }
        granted
    }

    /// As `try_resize`, up to the hard limit (see `try_grow_unspillable`).
    pub fn try_resize_unspillable(&mut self, bytes: usize) -> bool {
        match bytes.checked_sub(self.bytes) {
            Some(more) => self.try_grow_unspillable(more),
            None => {
                self.shrink_to(bytes);
                true
            }
        }
    }

    /// Reserves `bytes` more whether or not the pool has them: for memory a holder cannot
    /// do without (the one batch it is handed, a partition it must build).
    pub fn grow(&mut self, bytes: usize) {
        self.pool.grow(bytes);
        self.bytes += bytes;
    }

    /// Makes the reservation `bytes`, if the pool has what that adds; false if not.
    pub fn try_resize(&mut self, bytes: usize) -> bool {
        match bytes.checked_sub(self.bytes) {
            Some(more) => self.try_grow(more),
            None => {
                self.shrink_to(bytes);
                true
            }
        }
    }

    /// Makes the reservation `bytes` whether or not the pool has what that adds.
    pub fn resize(&mut self, bytes: usize) {
        match bytes.checked_sub(self.bytes) {
            Some(more) => self.grow(more),
            None => self.shrink_to(bytes),
        }
    }

    /// Gives back all but `bytes`.
    pub fn shrink_to(&mut self, bytes: usize) {
        if bytes < self.bytes {
            self.pool.shrink(self.bytes - bytes);
            self.bytes = bytes;
        }
    }

    pub fn free(&mut self) {
        self.shrink_to(0);
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.free();
    }
}

/// 80% of the machine's memory; 4 GiB where it cannot be read.
pub fn default_memory_limit() -> usize {
    let total = total_memory().unwrap_or(5 << 30);
    (total as f64 * DEFAULT_SHARE) as usize
}

/// The machine's memory in bytes, from `/proc/meminfo`.
fn total_memory() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Reads a memory size as users write it: `4GB`, `512 MiB`, `100kb`, `1073741824` (bytes),
/// or a share of the machine's memory such as `50%`. Units are powers of 1024, as in
/// DuckDB's `memory_limit`.
pub fn parse_memory_size(text: &str) -> Result<usize> {
    let invalid = || {
        ExecError::Execution(format!(
            "invalid memory size '{text}': expected a number with a unit such as 512MB or 4GB, \
             or a percentage such as 50%"
        ))
    };
    let trimmed = text.trim();
    if let Some(percent) = trimmed.strip_suffix('%') {
        let share: f64 = percent.trim().parse().map_err(|_| invalid())?;
        if !(share > 0.0 && share <= 100.0) {
            return Err(invalid());
        }
        let total = total_memory().unwrap_or(5 << 30);
        return Ok((total as f64 * share / 100.0) as usize);
    }
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: f64 = number.parse().map_err(|_| invalid())?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" | "byte" | "bytes" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(invalid()),
    };
    let bytes = number * scale as f64;
    if !(bytes >= 1.0 && bytes < usize::MAX as f64) {
        return Err(invalid());
    }
    Ok(bytes as usize)
}

/// The bytes the rows of `batch` occupy: for a slice of larger arrays, its share of them, so
/// that the slices of one batch are not each counted whole.
pub fn batch_bytes(batch: &arrow::array::RecordBatch) -> usize {
    batch.columns().iter().map(array_bytes).sum()
}

/// The bytes of `array`'s values: for a slice, its share of the arrays it slices.
pub fn array_bytes(array: &arrow::array::ArrayRef) -> usize {
    array
        .to_data()
        .get_slice_memory_size()
        .unwrap_or_else(|_| array.get_array_memory_size())
}

/// A size in the largest unit that keeps it at least 1, as `SHOW memory_limit` and errors
/// print it.
pub fn format_size(bytes: usize) -> String {
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{bytes} bytes"),
        _ => format!("{value:.1} {}", units[unit]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_in_their_largest_unit() {
        assert_eq!(format_size(512), "512 bytes");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size(4 << 30), "4.0 GiB");
    }

    #[test]
    fn sizes_read_with_units_powers_of_1024() {
        assert_eq!(parse_memory_size("4GB").unwrap(), 4 << 30);
        assert_eq!(parse_memory_size("512 MiB").unwrap(), 512 << 20);
        assert_eq!(parse_memory_size("1.5kb").unwrap(), 1536);
        assert_eq!(parse_memory_size("1000").unwrap(), 1000);
        assert!(parse_memory_size("50%").unwrap() > 0);
        for bad in ["", "GB", "4 parsecs", "0", "-1GB", "150%", "0%"] {
            assert!(parse_memory_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reservations_stay_within_the_limit_and_give_back_on_drop() {
        let pool = MemoryPool::new(100);
        let mut a = pool.reservation();
        assert!(a.try_grow(60));
        let mut b = pool.reservation();
        assert!(!b.try_grow(50));
        assert_eq!(b.bytes(), 0);
        assert!(b.try_resize(40));
        assert!(!a.try_resize(61));
        assert!(a.try_resize(10));
        assert_eq!(pool.used(), 50);
        b.grow(100);
        assert_eq!(pool.used(), 150);
        b.resize(10);
        assert_eq!(pool.used(), 20);
        b.resize(200);
        assert_eq!(pool.used(), 210);
        drop(b);
        drop(a);
        assert_eq!(pool.used(), 0);
    }
}
