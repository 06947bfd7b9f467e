//! `x IN (c1, c2, ...)` over a long list of constants: one hash probe per row instead of one
//! comparison per row and constant, so a list of the thousands of keys a view's maintenance
//! reads by costs the rows, not rows times keys.

use arrow::array::{Array, ArrayRef, BooleanArray};
use arrow::compute::concat;
use arrow::row::{RowConverter, SortField};
use hashbrown::HashSet;

use crate::Result;

/// Below this many constants the comparisons are cheaper than building a set.
pub(crate) const FEWEST_FOR_SET: usize = 8;

/// Whether each value of `probe` is among `constants` (arrays of one element of the probe's
/// type), with SQL's NULLs: NULL for a NULL probe, and for a miss when a constant is NULL.
pub(crate) fn in_constants(probe: &ArrayRef, constants: &[ArrayRef]) -> Result<BooleanArray> {
    debug_assert!(constants.iter().all(|c| c.len() == 1));
    debug_assert!(constants.iter().all(|c| c.data_type() == probe.data_type()));
    let parts: Vec<&dyn Array> = constants.iter().map(|c| c.as_ref()).collect();
    let list = crate::float_equality::canonical_floats(&concat(&parts)?);
    let probe = &crate::float_equality::canonical_floats(probe);
    let converter = RowConverter::new(vec![SortField::new(probe.data_type().clone())])?;
    let list_rows = converter.convert_columns(std::slice::from_ref(&list))?;
    let list_has_null = list.null_count() > 0;
    let mut set: HashSet<&[u8]> = HashSet::with_capacity(list.len());
    for i in 0..list.len() {
        if list.is_valid(i) {
            set.insert(list_rows.row(i).data());
        }
    }
    let probe_rows = converter.convert_columns(std::slice::from_ref(probe))?;
    let miss = match list_has_null {
        true => None,
        false => Some(false),
    };
    Ok((0..probe.len())
        .map(|i| match probe.is_valid(i) {
            false => None,
            true if set.contains(probe_rows.row(i).data()) => Some(true),
            true => miss,
        })
        .collect())
}
