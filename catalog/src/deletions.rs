//! Deletion vectors (ADR 0048): for each container of a table's rows (a data file or a log
//! segment), the ordinals of its rows that are deleted. UPDATE, DELETE, MERGE and upserts mark
//! rows here instead of rewriting the files that hold them; scans drop the marked rows.

use std::sync::Arc;

use roaring::RoaringBitmap;

/// The hidden column a scan adds for the statements that change rows: each row's address,
/// its container's position among the table's containers and its ordinal there.
pub const ROW_ADDRESS: &str = "_row_address";

/// The hidden column of each row's number in its table (ADR 0075): the rows of the containers
/// before its own, deleted ones included, plus its ordinal there. DuckDB's `rowid`.
pub const ROW_ID: &str = "rowid";

/// The low bits of a row address that hold the row's ordinal in its container.
const ORDINAL_BITS: u32 = 40;

/// Delta's magic number in front of a deletion vector's bitmaps (little-endian).
const DELTA_MAGIC: u32 = 1_681_511_377;

/// What holds a row of a table: a data file (by path) or a log segment (by its commit and
/// position in it). Rows are numbered within their container from 0, in the order scans read.
#[derive(
    Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Container {
    File(String),
    Segment { commit: u64, index: u32 },
}

/// The deleted ordinals of one container.
pub type DeletionVector = Arc<RoaringBitmap>;

/// The address of the row at `ordinal` in the container at `position` of a table's containers
/// (see [`crate::Snapshot::containers`]).
pub fn row_address(position: usize, ordinal: u64) -> i64 {
    assert!(
        ordinal < 1 << ORDINAL_BITS,
        "a container holds under 2^40 rows"
    );
    assert!(
        position < 1 << (63 - ORDINAL_BITS),
        "a table has under 2^23 containers"
    );
    ((position as i64) << ORDINAL_BITS) | ordinal as i64
}

/// The container position and ordinal of a row address.
pub fn split_row_address(address: i64) -> (usize, u32) {
    assert!(address >= 0, "row addresses are not negative");
    let ordinal = address & ((1 << ORDINAL_BITS) - 1);
    let ordinal = u32::try_from(ordinal).expect("deletion vectors hold 32-bit ordinals");
    ((address >> ORDINAL_BITS) as usize, ordinal)
}

/// A deletion vector in the form Delta Lake's deletion vectors take, so that publishing can
/// copy it: Delta's magic number, then the portable serialization of a 64-bit Roaring bitmap
/// (the number of 32-bit bitmaps, then each one's high bits and portable serialization; all
/// little-endian). Ordinals fit in 32 bits, so there is at most one bitmap, of high bits 0.
pub fn encode_deletion_vector(vector: &RoaringBitmap) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + vector.serialized_size());
    out.extend_from_slice(&DELTA_MAGIC.to_le_bytes());
    let bitmaps: u64 = u64::from(!vector.is_empty());
    out.extend_from_slice(&bitmaps.to_le_bytes());
    if bitmaps == 1 {
        out.extend_from_slice(&0u32.to_le_bytes());
        vector
            .serialize_into(&mut out)
            .expect("writing to a vector does not fail");
    }
    out
}

/// Reads what [`encode_deletion_vector`] wrote.
pub fn decode_deletion_vector(bytes: &[u8]) -> Result<RoaringBitmap, String> {
    let word = |at: usize, len: usize| {
        bytes
            .get(at..at + len)
            .ok_or_else(|| "deletion vector is cut short".to_string())
    };
    let magic = u32::from_le_bytes(word(0, 4)?.try_into().expect("4 bytes"));
    if magic != DELTA_MAGIC {
        return Err(format!("deletion vector has magic number {magic}"));
    }
    let bitmaps = u64::from_le_bytes(word(4, 8)?.try_into().expect("8 bytes"));
    match bitmaps {
        0 => Ok(RoaringBitmap::new()),
        1 => {
            let high = u32::from_le_bytes(word(12, 4)?.try_into().expect("4 bytes"));
            if high != 0 {
                return Err("deletion vector holds ordinals of 2^32 or more".into());
            }
            RoaringBitmap::deserialize_from(&bytes[16..])
                .map_err(|e| format!("deletion vector bitmap: {e}"))
        }
        n => Err(format!("deletion vector holds {n} bitmaps")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletion_vectors_round_trip_in_deltas_form() {
        let vector: RoaringBitmap = [0u32, 7, 65_536, 4_000_000_000].into_iter().collect();
        let bytes = encode_deletion_vector(&vector);
        assert_eq!(&bytes[..4], &DELTA_MAGIC.to_le_bytes());
        assert_eq!(decode_deletion_vector(&bytes).unwrap(), vector);
        let empty = encode_deletion_vector(&RoaringBitmap::new());
        assert_eq!(empty.len(), 12);
        assert!(decode_deletion_vector(&empty).unwrap().is_empty());
        assert!(decode_deletion_vector(&bytes[..10]).is_err());
        assert!(decode_deletion_vector(b"not a vector at all").is_err());
    }

    #[test]
    fn row_addresses_split_into_their_parts() {
        let address = row_address(3, 4_000_000_000);
        assert_eq!(split_row_address(address), (3, 4_000_000_000));
        assert_eq!(split_row_address(row_address(0, 0)), (0, 0));
    }
}
