//! The keys of hash joins and aggregations. Each batch's key columns are encoded once: packed
//! into one machine word per row when every column is a fixed-width integer or a string and
//! they fit in 64 or 128 bits, otherwise in Arrow's row format, and hashed in one pass
//! (`KeyEncoder`). A string packs into a slot of the word, with its length, when it is short
//! enough; a key with a longer string (or a NULL) is in row format instead. The choice depends
//! on the key's value alone, so a key is encoded the same way in every batch. The
//! encoded keys are interned in a hashbrown table that gives every distinct key a dense id
//! (`KeyIndex`). Encoding is apart from the table so that a join's build side can encode and
//! hash each row once, and intern it into the table of the partition its hash picks.

use std::hash::BuildHasher;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal64Type, Decimal128Type, Int8Type, Int16Type,
    Int32Type, Int64Type, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow::row::{RowConverter, Rows, SortField};
use foldhash::fast::FixedState;
use hashbrown::HashTable;

use crate::Result;
use crate::dense_keys::as_i64;
use crate::direct_ids::DirectIds;

/// The id of a row whose key is not in the index (or, where NULL keys are skipped, has a NULL).
pub const NO_KEY: u32 = u32::MAX;

/// What interning does with a key that has a NULL in any column.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum NullKeys {
    /// NULL keys are keys like any other, equal to each other (GROUP BY).
    Group,
    /// Rows with a NULL key get `NO_KEY` (join keys never match NULL).
    Skip,
}

/// How one batch's keys are encoded.
enum Encoded {
    Word64(Vec<u64>),
    Word128(Vec<u128>),
    Bytes(Rows),
}

/// One row's encoded key.
pub(crate) enum Key<'a> {
    Word64(u64),
    Word128(u128),
    Bytes(&'a [u8]),
}

/// One batch's keys, encoded and hashed once, to be interned or looked up row by row (a
/// partitioned join routes each row by its hash before it reaches an index).
pub struct EncodedKeys {
    encoded: Encoded,
    /// For each row, whether any key column is NULL there; `None` when none is.
    has_null: Option<Vec<bool>>,
    /// When the columns are packed, the rows whose key is not: it has a string too long for
    /// its slot, or a NULL where NULL keys group (a word cannot tell a NULL from the value its
    /// buffer holds). `None` when every key is packed.
    unpacked: Option<Vec<bool>>,
    /// Every row's key in row format, when some are unpacked.
    unpacked_bytes: Option<Rows>,
    hashes: Vec<u64>,
}

impl EncodedKeys {
    #[inline]
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// The hash every index of these key types gives this row's key.
    #[inline]
    pub fn hash(&self, row: usize) -> u64 {
        self.hashes[row]
    }

    /// Every row's hash.
    #[inline]
    pub fn hashes(&self) -> &[u64] {
        &self.hashes
    }

    #[inline]
    pub fn has_null(&self, row: usize) -> bool {
        self.has_null.as_ref().is_some_and(|n| n[row])
    }

    /// Whether a row's key is the previous row's: input sorted or clustered by its key
    /// repeats it, and the repeat needs no probe.
    #[inline]
    fn repeats_previous(&self, row: usize) -> bool {
        row > 0
            && self.has_null.is_none()
            && self.unpacked.is_none()
            && match &self.encoded {
                Encoded::Word64(words) => words[row] == words[row - 1],
                Encoded::Word128(words) => words[row] == words[row - 1],
                Encoded::Bytes(_) => false,
            }
    }

    #[inline]
    fn is_unpacked(&self, row: usize) -> bool {
        self.unpacked.as_ref().is_some_and(|u| u[row])
    }

    #[inline]
    pub(crate) fn key(&self, row: usize) -> Key<'_> {
        match (&self.encoded, &self.unpacked_bytes) {
            (_, Some(bytes)) if self.is_unpacked(row) => Key::Bytes(bytes.row(row).data()),
            (Encoded::Word64(words), _) => Key::Word64(words[row]),
            (Encoded::Word128(words), _) => Key::Word128(words[row]),
            (Encoded::Bytes(rows), _) => Key::Bytes(rows.row(row).data()),
        }
    }
}

/// Encodes and hashes keys of given types. Every encoder (and index) of the same types gives
/// a key the same encoding and hash, so keys encoded once can be routed to any index.
pub struct KeyEncoder {
    types: Vec<DataType>,
    /// The bit width of each key column when all are packable, else `None`. A string
    /// column's slot holds its length in the low byte and its bytes above.
    widths: Option<Vec<u32>>,
    converter: RowConverter,
    hasher: FixedState,
}

impl KeyEncoder {
    pub fn new(types: &[DataType]) -> Result<KeyEncoder> {
        let fields = types.iter().map(|t| SortField::new(t.clone())).collect();
        Ok(KeyEncoder {
            types: types.to_vec(),
            widths: packed_widths(types),
            converter: RowConverter::new(fields)?,
            hasher: FixedState::with_seed(0x05ee_d0f9_0d2a),
        })
    }

    /// Encodes and hashes one batch's key columns (cast to the encoder's types if need be).
    pub fn encode(&self, keys: &[ArrayRef], nulls: NullKeys) -> Result<EncodedKeys> {
        if keys
            .iter()
            .zip(&self.types)
            .any(|(k, t)| k.data_type() != t)
        {
            return self.encode(&self.cast_keys(keys)?, nulls);
        }
        if keys.iter().any(|k| k.data_type().is_floating()) {
            // Keys equal as SQL compares them (`-0.0` and `0.0`, any two NaNs) encode alike.
            let canonical: Vec<ArrayRef> = keys
                .iter()
                .map(crate::float_equality::canonical_floats)
                .collect();
            if canonical.iter().zip(keys).any(|(c, k)| !Arc::ptr_eq(c, k)) {
                return self.encode(&canonical, nulls);
            }
        }
        let has_null = null_rows(keys);
        let (encoded, too_long) = self.pack_or_convert(keys)?;
        let grouped_nulls = match nulls {
            NullKeys::Group if !matches!(encoded, Encoded::Bytes(_)) => has_null.as_ref(),
            _ => None,
        };
        let unpacked = match (too_long, grouped_nulls) {
            (None, None) => None,
            (Some(long), None) => Some(long),
            (None, Some(null)) => Some(null.clone()),
            (Some(long), Some(null)) => Some(long.iter().zip(null).map(|(l, n)| l | n).collect()),
        };
        let unpacked_bytes = match &unpacked {
            Some(_) => Some(self.converter.convert_columns(keys)?),
            None => None,
        };
        let hasher = &self.hasher;
        let mut hashes: Vec<u64> = match &encoded {
            Encoded::Word64(words) => words.iter().map(|w| hasher.hash_one(w)).collect(),
            Encoded::Word128(words) => words.iter().map(|w| hasher.hash_one(w)).collect(),
            Encoded::Bytes(rows) => rows.iter().map(|r| hasher.hash_one(r.data())).collect(),
        };
        if let (Some(unpacked), Some(bytes)) = (&unpacked, &unpacked_bytes) {
            for (row, hash) in hashes.iter_mut().enumerate() {
                if unpacked[row] {
                    *hash = hasher.hash_one(bytes.row(row).data());
                }
            }
        }
        Ok(EncodedKeys {
            encoded,
            has_null,
            unpacked,
            unpacked_bytes,
            hashes,
        })
    }

    /// `keys` cast to the encoder's types (dictionaries decoded).
    fn cast_keys(&self, keys: &[ArrayRef]) -> Result<Vec<ArrayRef>> {
        keys.iter()
            .zip(&self.types)
            .map(|(key, data_type)| Ok(arrow::compute::cast(key, data_type)?))
            .collect()
    }

    /// The keys of the given rows of `keys` (encoded by this encoder), in that order.
    pub fn gather(&self, keys: &EncodedKeys, rows: &[u32]) -> EncodedKeys {
        let gather_rows = |from: &Rows| {
            let bytes = rows
                .iter()
                .map(|&r| from.row(r as usize).data().len())
                .sum();
            let mut to = self.converter.empty_rows(rows.len(), bytes);
            for &r in rows {
                to.push(from.row(r as usize));
            }
            to
        };
        EncodedKeys {
            encoded: match &keys.encoded {
                Encoded::Word64(words) => {
                    Encoded::Word64(rows.iter().map(|&r| words[r as usize]).collect())
                }
                Encoded::Word128(words) => {
                    Encoded::Word128(rows.iter().map(|&r| words[r as usize]).collect())
                }
                Encoded::Bytes(from) => Encoded::Bytes(gather_rows(from)),
            },
            has_null: keys
                .has_null
                .as_ref()
                .map(|n| rows.iter().map(|&r| n[r as usize]).collect()),
            unpacked: keys
                .unpacked
                .as_ref()
                .map(|u| rows.iter().map(|&r| u[r as usize]).collect()),
            unpacked_bytes: keys.unpacked_bytes.as_ref().map(gather_rows),
            hashes: rows.iter().map(|&r| keys.hashes[r as usize]).collect(),
        }
    }

    /// The keys packed into words, with the rows whose string is too long for its slot
    /// (`None` if none is), or else in row format.
    fn pack_or_convert(&self, keys: &[ArrayRef]) -> Result<(Encoded, Option<Vec<bool>>)> {
        let Some(widths) = &self.widths else {
            let rows = self.converter.convert_columns(keys)?;
            return Ok((Encoded::Bytes(rows), None));
        };
        let rows = keys.first().map_or(0, |k| k.len());
        let mut too_long = None;
        if widths.iter().sum::<u32>() <= 64 {
            let mut words = vec![0u64; rows];
            let mut shift = 0;
            for (key, width) in keys.iter().zip(widths) {
                let put = |row: usize, bits: u128| words[row] |= (bits as u64) << shift;
                pack(key, *width, &mut too_long, put);
                shift += width;
            }
            return Ok((Encoded::Word64(words), too_long));
        }
        let mut words = vec![0u128; rows];
        let mut shift = 0;
        for (key, width) in keys.iter().zip(widths) {
            pack(key, *width, &mut too_long, |row, bits| {
                words[row] |= bits << shift
            });
            shift += width;
        }
        Ok((Encoded::Word128(words), too_long))
    }
}

/// The keys of an index whose keys are all packed into words of one width, in id order.
pub(crate) enum PackedKeys<'a> {
    Word64(&'a [u64]),
    Word128(&'a [u128]),
}

/// A key interned in the byte-keyed table: where its bytes are in the arena.
struct BytesKey {
    hash: u64,
    id: u32,
    len: u32,
    start: usize,
}

/// Distinct keys, each with a dense id in the order first seen.
pub struct KeyIndex {
    encoder: KeyEncoder,
    words64: WordTable<u64>,
    words128: WordTable<u128>,
    /// Keys in row format: every key when the columns cannot be packed, and keys with a NULL
    /// when they can.
    bytes: HashTable<BytesKey>,
    arena: Vec<u8>,
    len: u32,
}

impl KeyIndex {
    pub fn new(types: &[DataType]) -> Result<KeyIndex> {
        Ok(KeyIndex {
            encoder: KeyEncoder::new(types)?,
            words64: WordTable::default(),
            words128: WordTable::default(),
            bytes: HashTable::new(),
            arena: Vec::new(),
            len: 0,
        })
    }

    /// How many distinct keys have been interned.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// The id of one row's key, and whether it was added now. A row with a NULL key is
    /// interned as a key like any other: the caller skips it if NULL keys must not match. The
    /// keys must have been encoded for this index's types.
    #[inline]
    pub fn intern_row(&mut self, keys: &EncodedKeys, row: usize) -> (u32, bool) {
        self.intern_row_as(keys, row, self.len)
    }

    /// Like `intern_row`, but a key added now gets the id `next` (ids of a `GroupIndex` count
    /// across its partitions' indexes).
    #[inline]
    fn intern_row_as(&mut self, keys: &EncodedKeys, row: usize, next: u32) -> (u32, bool) {
        let hash = keys.hash(row);
        let hasher = &self.encoder.hasher;
        let id = match keys.key(row) {
            Key::Word64(word) => self.words64.intern(hasher, hash, word, next),
            Key::Word128(word) => self.words128.intern(hasher, hash, word, next),
            Key::Bytes(key) => self.intern_bytes(hash, key, next),
        };
        let new = id == next;
        if new {
            self.len += 1;
        }
        (id, new)
    }

    /// The id of one row's key, or `NO_KEY` when it was never interned or has a NULL.
    #[inline]
    pub fn lookup_row(&self, keys: &EncodedKeys, row: usize) -> u32 {
        if keys.has_null(row) {
            return NO_KEY;
        }
        let hash = keys.hash(row);
        let id = match keys.key(row) {
            Key::Word64(word) => self.words64.find(hash, word),
            Key::Word128(word) => self.words128.find(hash, word),
            Key::Bytes(key) => self
                .bytes
                .find(hash, |k| k.hash == hash && self.key_bytes(k) == key)
                .map(|k| k.id),
        };
        id.unwrap_or(NO_KEY)
    }

    /// The keys in id order, when every key is packed into words of one width (a join's
    /// keys without NULLs or long strings).
    pub(crate) fn packed_keys(&self) -> Option<PackedKeys<'_>> {
        if !self.bytes.is_empty() {
            return None;
        }
        // Each key took the next id as it was interned into its one table: ids are positions.
        debug_assert!(
            self.words64
                .ids
                .iter()
                .enumerate()
                .all(|(p, &id)| id as usize == p)
        );
        debug_assert!(
            self.words128
                .ids
                .iter()
                .enumerate()
                .all(|(p, &id)| id as usize == p)
        );
        match (&self.words64.words[..], &self.words128.words[..]) {
            (words, []) => Some(PackedKeys::Word64(words)),
            ([], words) => Some(PackedKeys::Word128(words)),
            _ => None,
        }
    }

    /// Room for `additional` more keys, so that interning them never grows the table.
    fn reserve(&mut self, additional: usize) {
        let hasher = &self.encoder.hasher;
        match self.encoder.widths.as_ref().map(|w| w.iter().sum::<u32>()) {
            Some(0..=64) => self.words64.reserve(hasher, additional),
            Some(_) => self.words128.reserve(hasher, additional),
            None => {
                self.bytes.reserve(additional, |k| k.hash);
                // Growing the arena by doubling copied it over and over: 5% of an
                // aggregation by string keys of as many groups as rows.
                let key_bytes = match self.bytes.len() {
                    0 => GUESSED_KEY_BYTES,
                    keys => self.arena.len().div_ceil(keys),
                };
                self.arena.reserve(additional * key_bytes);
            }
        }
    }

    fn intern_bytes(&mut self, hash: u64, key: &[u8], id: u32) -> u32 {
        let (arena, bytes) = (&self.arena, &self.bytes);
        if let Some(found) = bytes.find(hash, |k| {
            k.hash == hash && &arena[k.start..k.start + k.len as usize] == key
        }) {
            return found.id;
        }
        let entry = BytesKey {
            hash,
            id,
            len: key.len() as u32,
            start: self.arena.len(),
        };
        self.arena.extend_from_slice(key);
        self.bytes.insert_unique(hash, entry, |k| k.hash);
        id
    }

    fn key_bytes(&self, key: &BytesKey) -> &[u8] {
        &self.arena[key.start..key.start + key.len as usize]
    }
}

/// The bytes a key in row format is taken to have before any is seen.
const GUESSED_KEY_BYTES: usize = 32;

/// How many partitions a `GroupIndex` splits keys over.
pub const GROUP_PARTITIONS: usize = 32;

/// The partition of a key with this hash. Its bits are neither those hashbrown picks a
/// bucket by (the low ones) nor those of its tags (the top seven), so each partition's table
/// still spreads its keys.
#[inline]
fn group_partition(hash: u64) -> usize {
    (hash >> 32) as usize % GROUP_PARTITIONS
}

/// The keys of a grouped aggregation, each with a dense id in the order first seen, split by
/// hash over `GROUP_PARTITIONS` indexes. Each partition's table stays a fraction of the
/// whole, and partial aggregations of parts of the input can be merged partition by
/// partition, side by side.
pub struct GroupIndex {
    encoder: KeyEncoder,
    partitions: Vec<KeyIndex>,
    /// Per partition, the ids of its keys in the order they were added.
    members: Vec<Vec<u32>>,
    len: u32,
    /// For one integer key column, ids looked up by value instead of by hash; dropped once
    /// the keys span too many values (or one is NULL), its keys then interned by hash.
    direct: Option<DirectFront>,
}

/// Ids looked up by value, and the keys they were added for, in id order.
struct DirectFront {
    ids: DirectIds,
    keys: Vec<ArrayRef>,
}

impl GroupIndex {
    pub fn new(types: &[DataType]) -> Result<GroupIndex> {
        Ok(GroupIndex {
            encoder: KeyEncoder::new(types)?,
            partitions: (0..GROUP_PARTITIONS)
                .map(|_| KeyIndex::new(types))
                .collect::<Result<_>>()?,
            members: vec![Vec::new(); GROUP_PARTITIONS],
            len: 0,
            direct: DirectIds::for_types(types).map(|ids| DirectFront {
                ids,
                keys: Vec::new(),
            }),
        })
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// The ids of the keys in `partition`, in the order they were added.
    #[cfg(test)]
    fn members(&self, partition: usize) -> &[u32] {
        &self.members[partition]
    }

    /// Per partition, the ids of its keys in the order they were added; the tables go.
    pub fn into_members(self) -> Vec<Vec<u32>> {
        self.members
    }

    /// Stops looking ids up by value. A partition's share of keys spans the range of all of
    /// them, so the slots of each of the merge's partitions would span it too (ADR 0032).
    pub fn without_direct_ids(&mut self) {
        self.direct = None;
    }

    /// Room for `additional` more keys of `partition`.
    pub fn reserve(&mut self, partition: usize, additional: usize) {
        self.partitions[partition].reserve(additional);
        self.members[partition].reserve(additional);
    }

    /// Sets `ids[row]` to each row's key id, NULL keys grouped, adding keys not seen before;
    /// `new_rows` receives the rows that added a key, in the order of their ids.
    pub fn intern(
        &mut self,
        keys: &[ArrayRef],
        ids: &mut Vec<u32>,
        new_rows: &mut Vec<u32>,
    ) -> Result<()> {
        if keys
            .iter()
            .any(|k| matches!(k.data_type(), DataType::Dictionary(_, _)))
        {
            return self.intern_dictionaries(keys, ids, new_rows);
        }
        let Some(mut direct) = self.direct.take() else {
            return self.intern_hashed(keys, ids, new_rows);
        };
        if keys[0].null_count() > 0 {
            // NULL keys are interned by hash: every key goes there from now on.
            self.leave_direct(direct)?;
            return self.intern_hashed(keys, ids, new_rows);
        }
        let values = as_i64(&keys[0])?;
        let mut missing = Vec::new();
        if !direct.ids.lookup(values.values(), ids, &mut missing) {
            // The keys span too many values for a slot each: hashed from now on.
            self.leave_direct(direct)?;
            return self.intern_hashed(keys, ids, new_rows);
        }
        if !missing.is_empty() {
            // Keys not seen before get the next ids and their partitions (by hash, as every
            // index of these types would give them), but no place in a hash table.
            let rows = arrow::array::UInt32Array::from(missing.clone());
            let taken = arrow::compute::take(&keys[0], &rows, None)?;
            let encoded = self
                .encoder
                .encode(std::slice::from_ref(&taken), NullKeys::Group)?;
            let first_new = new_rows.len();
            for (position, &row) in missing.iter().enumerate() {
                let value = values.value(row as usize);
                let id = match direct.ids.id_of(value) {
                    Some(id) => id,
                    None => {
                        let id = self.len;
                        self.len += 1;
                        direct.ids.remember(value, id);
                        self.members[group_partition(encoded.hash(position))].push(id);
                        new_rows.push(row);
                        id
                    }
                };
                ids[row as usize] = id;
            }
            let added: Vec<u32> = new_rows[first_new..].to_vec();
            if !added.is_empty() {
                let added = arrow::array::UInt32Array::from(added);
                direct
                    .keys
                    .push(arrow::compute::take(&keys[0], &added, None)?);
            }
        }
        self.direct = Some(direct);
        Ok(())
    }

    /// `intern` for keys with dictionary columns (ADR 0037). When every column is a
    /// dictionary and their keys combine into few codes, each code is interned once, by the
    /// first row that has it, and the other rows take its id; otherwise the dictionaries are
    /// decoded. Either way a key gets the id and partition its plain value would.
    fn intern_dictionaries(
        &mut self,
        keys: &[ArrayRef],
        ids: &mut Vec<u32>,
        new_rows: &mut Vec<u32>,
    ) -> Result<()> {
        let Some((codes, code_count)) = dictionary_codes(keys) else {
            let keys = self.encoder.cast_keys(keys)?;
            return self.intern(&keys, ids, new_rows);
        };
        let mut slot_of_code = vec![NO_KEY; code_count];
        let mut first_rows = Vec::new();
        let slots: Vec<u32> = codes
            .iter()
            .enumerate()
            .map(|(row, &code)| {
                let slot = &mut slot_of_code[code as usize];
                if *slot == NO_KEY {
                    *slot = first_rows.len() as u32;
                    first_rows.push(row as u32);
                }
                *slot
            })
            .collect();
        let taken = arrow::array::UInt32Array::from(first_rows.clone());
        let firsts = keys
            .iter()
            .map(|key| arrow::compute::take(key, &taken, None))
            .collect::<Result<Vec<_>, _>>()?;
        let (mut first_ids, mut first_new) = (Vec::new(), Vec::new());
        let firsts = self.encoder.cast_keys(&firsts)?;
        self.intern(&firsts, &mut first_ids, &mut first_new)?;
        new_rows.extend(first_new.iter().map(|&slot| first_rows[slot as usize]));
        ids.clear();
        ids.extend(slots.iter().map(|&slot| first_ids[slot as usize]));
        Ok(())
    }

    /// Whether keys are looked up by value (one integer column within a span of slots).
    pub fn looks_up_by_value(&self) -> bool {
        self.direct.is_some()
    }

    /// Interns the keys added by value into the hash tables, with the ids they have, so that
    /// keys from now on can be interned by hash.
    fn leave_direct(&mut self, direct: DirectFront) -> Result<()> {
        let mut id = 0u32;
        for piece in &direct.keys {
            let encoded = self
                .encoder
                .encode(std::slice::from_ref(piece), NullKeys::Group)?;
            for row in 0..encoded.len() {
                let partition = group_partition(encoded.hash(row));
                let (interned, new) = self.partitions[partition].intern_row_as(&encoded, row, id);
                debug_assert!(new && interned == id, "keys added by value are distinct");
                id += 1;
            }
        }
        debug_assert_eq!(id, self.len);
        Ok(())
    }

    /// The partition each row's key is interned into, by any index of these key types.
    pub fn partitions_of(&self, keys: &[ArrayRef]) -> Result<Vec<u8>> {
        let encoded = self.encoder.encode(keys, NullKeys::Group)?;
        Ok((0..encoded.len())
            .map(|row| group_partition(encoded.hash(row)) as u8)
            .collect())
    }

    /// `intern` through the hash tables.
    fn intern_hashed(
        &mut self,
        keys: &[ArrayRef],
        ids: &mut Vec<u32>,
        new_rows: &mut Vec<u32>,
    ) -> Result<()> {
        let encoded = self.encoder.encode(keys, NullKeys::Group)?;
        ids.clear();
        ids.reserve(encoded.len());
        for row in 0..encoded.len() {
            if encoded.repeats_previous(row) {
                ids.push(ids[row - 1]);
                continue;
            }
            let partition = group_partition(encoded.hash(row));
            let (id, new) = self.partitions[partition].intern_row_as(&encoded, row, self.len);
            if new {
                self.len += 1;
                self.members[partition].push(id);
                new_rows.push(row as u32);
            }
            ids.push(id);
        }
        Ok(())
    }
}

/// The id of `word` (whose hash is `hash`) in `table`, inserted with id `next` if absent.
/// Keys packed into words, each with its id. The hash table holds only each key's position
/// in `words`: 4 bytes a bucket instead of a word and an id (16 or 32 bytes with padding),
/// which matters because a table just past a doubling is half empty.
struct WordTable<K> {
    positions: HashTable<u32>,
    words: Vec<K>,
    ids: Vec<u32>,
}

impl<K> Default for WordTable<K> {
    fn default() -> WordTable<K> {
        WordTable {
            positions: HashTable::new(),
            words: Vec::new(),
            ids: Vec::new(),
        }
    }
}

impl<K: Copy + Eq + std::hash::Hash> WordTable<K> {
    /// The id of `word`, interned with id `next` if it is new.
    #[inline]
    fn intern(&mut self, hasher: &FixedState, hash: u64, word: K, next: u32) -> u32 {
        let words = &self.words;
        if let Some(&position) = self.positions.find(hash, |&p| words[p as usize] == word) {
            return self.ids[position as usize];
        }
        let position = self.words.len() as u32;
        let words = &self.words;
        self.positions
            .insert_unique(hash, position, |&p| hasher.hash_one(words[p as usize]));
        self.words.push(word);
        self.ids.push(next);
        next
    }

    #[inline]
    fn find(&self, hash: u64, word: K) -> Option<u32> {
        let words = &self.words;
        self.positions
            .find(hash, |&p| words[p as usize] == word)
            .map(|&p| self.ids[p as usize])
    }

    fn reserve(&mut self, hasher: &FixedState, additional: usize) {
        let words = &self.words;
        self.positions
            .reserve(additional, |&p| hasher.hash_one(words[p as usize]));
        self.words.reserve(additional);
        self.ids.reserve(additional);
    }
}

/// Dictionary key columns whose combined codes are this many at most are interned code by
/// code; more, and they are decoded.
const MAX_DICTIONARY_CODES: usize = 1 << 12;

/// When every key column is a dictionary with `Int32` keys and their combinations are few
/// (at most `MAX_DICTIONARY_CODES`, and fewer than the rows), each row's combination as one
/// code below the count returned. A NULL key is one more code of its column.
fn dictionary_codes(keys: &[ArrayRef]) -> Option<(Vec<u32>, usize)> {
    let rows = keys.first().map_or(0, |k| k.len());
    let mut code_count = 1usize;
    for key in keys {
        let dictionary = key.as_dictionary_opt::<Int32Type>()?;
        code_count = code_count.checked_mul(dictionary.values().len() + 1)?;
    }
    if code_count > MAX_DICTIONARY_CODES || code_count > rows {
        return None;
    }
    let mut codes = vec![0u32; rows];
    let mut stride = 1u32;
    for key in keys {
        let dictionary = key.as_dictionary::<Int32Type>();
        let null_code = dictionary.values().len() as u32;
        let indexes = dictionary.keys();
        match indexes.nulls() {
            None => {
                for (code, &index) in codes.iter_mut().zip(indexes.values()) {
                    *code += index as u32 * stride;
                }
            }
            Some(nulls) => {
                for (row, code) in codes.iter_mut().enumerate() {
                    let index = match nulls.is_valid(row) {
                        true => indexes.value(row) as u32,
                        false => null_code,
                    };
                    *code += index * stride;
                }
            }
        }
        stride *= null_code + 1;
    }
    Some((codes, code_count))
}

/// For each row, whether any key column is NULL there; `None` when none is.
fn null_rows(keys: &[ArrayRef]) -> Option<Vec<bool>> {
    if keys.iter().all(|k| k.null_count() == 0) {
        return None;
    }
    let rows = keys.first().map_or(0, |k| k.len());
    let mut has_null = vec![false; rows];
    for key in keys {
        if let Some(nulls) = key.logical_nulls() {
            for (row, flag) in has_null.iter_mut().enumerate() {
                *flag |= nulls.is_null(row);
            }
        }
    }
    Some(has_null)
}

/// The bits a packed column of this type takes, or `None` if it cannot be packed; strings
/// take what the other columns leave (`packed_widths`).
fn packed_width(data_type: &DataType) -> Option<u32> {
    Some(match data_type {
        DataType::Boolean | DataType::Int8 | DataType::UInt8 => 8,
        DataType::Int16 | DataType::UInt16 => 16,
        DataType::Int32 | DataType::UInt32 | DataType::Date32 => 32,
        DataType::Int64
        | DataType::UInt64
        | DataType::Date64
        | DataType::Timestamp(_, _)
        | DataType::Decimal64(_, _) => 64,
        DataType::Decimal128(_, _) => 128,
        _ => return None,
    })
}

/// The bits each key column takes in a packed word, or `None` when they cannot be packed.
/// String columns share the bits the others leave of 128, 8 to 16 bytes each (a length byte
/// and up to 7 to 15 of the string): a narrower slot would leave most strings unpacked, and a
/// batch with one unpacked key pays for both encodings.
const MIN_STRING_SLOT_BYTES: u32 = 8;

fn packed_widths(types: &[DataType]) -> Option<Vec<u32>> {
    let strings = types.iter().filter(|t| **t == DataType::Utf8).count() as u32;
    let mut fixed = 0;
    for data_type in types.iter().filter(|t| **t != DataType::Utf8) {
        fixed += packed_width(data_type)?;
    }
    if fixed > 128 {
        return None;
    }
    let slot_bytes = match strings {
        0 => 0,
        _ => ((128 - fixed) / 8 / strings).min(16),
    };
    if strings > 0 && slot_bytes < MIN_STRING_SLOT_BYTES {
        return None;
    }
    Some(
        types
            .iter()
            .map(|t| match t {
                DataType::Utf8 => slot_bytes * 8,
                other => packed_width(other).expect("checked above"),
            })
            .collect(),
    )
}

/// Calls `put(row, bits)` with each row's value as unsigned bits of the column's `width` (the
/// value at a NULL is whatever the buffer holds; such rows are keyed apart). A string is its
/// length, then its bytes; one too long for the width is marked in `too_long` instead.
fn pack(
    key: &ArrayRef,
    width: u32,
    too_long: &mut Option<Vec<bool>>,
    mut put: impl FnMut(usize, u128),
) {
    macro_rules! each {
        ($t:ty, $unsigned:ty) => {
            for (row, v) in key.as_primitive::<$t>().values().iter().enumerate() {
                put(row, (*v as $unsigned) as u128)
            }
        };
    }
    match key.data_type() {
        DataType::Utf8 => {
            let strings = key.as_string::<i32>();
            let (offsets, bytes) = (strings.value_offsets(), strings.values().as_slice());
            let longest = (width / 8 - 1) as usize;
            for row in 0..strings.len() {
                let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
                let len = end - start;
                if len > longest {
                    too_long.get_or_insert_with(|| vec![false; strings.len()])[row] = true;
                    continue;
                }
                // Sixteen bytes read at once and masked to the string's: no copy of `len`.
                let string = match bytes.get(start..start + 16) {
                    Some(sixteen) => {
                        let word = u128::from_le_bytes(sixteen.try_into().expect("16 bytes"));
                        word & ((1u128 << (len * 8)) - 1)
                    }
                    None => {
                        let mut slot = [0u8; 16];
                        slot[..len].copy_from_slice(&bytes[start..end]);
                        u128::from_le_bytes(slot)
                    }
                };
                put(row, (string << 8) | len as u128);
            }
        }
        DataType::Boolean => {
            let values = key.as_boolean().values();
            for row in 0..key.len() {
                put(row, u128::from(values.value(row)))
            }
        }
        DataType::Int8 => each!(Int8Type, u8),
        DataType::UInt8 => each!(UInt8Type, u8),
        DataType::Int16 => each!(Int16Type, u16),
        DataType::UInt16 => each!(UInt16Type, u16),
        DataType::Int32 => each!(Int32Type, u32),
        DataType::UInt32 => each!(UInt32Type, u32),
        DataType::Date32 => each!(Date32Type, u32),
        DataType::Int64 => each!(Int64Type, u64),
        DataType::UInt64 => each!(UInt64Type, u64),
        DataType::Date64 => each!(Date64Type, u64),
        DataType::Timestamp(TimeUnit::Second, _) => each!(TimestampSecondType, u64),
        DataType::Timestamp(TimeUnit::Millisecond, _) => each!(TimestampMillisecondType, u64),
        DataType::Timestamp(TimeUnit::Microsecond, _) => each!(TimestampMicrosecondType, u64),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => each!(TimestampNanosecondType, u64),
        DataType::Decimal64(_, _) => each!(Decimal64Type, u64),
        DataType::Decimal128(_, _) => each!(Decimal128Type, u128),
        other => unreachable!("{other} keys are not packed"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, Int64Array, StringArray};

    use super::*;

    fn interned(index: &mut KeyIndex, keys: &[ArrayRef], nulls: NullKeys) -> (Vec<u32>, Vec<u32>) {
        let encoded = index.encoder.encode(keys, nulls).unwrap();
        let (mut ids, mut new_rows) = (Vec::new(), Vec::new());
        for row in 0..encoded.len() {
            if nulls == NullKeys::Skip && encoded.has_null(row) {
                ids.push(NO_KEY);
                continue;
            }
            let (id, new) = index.intern_row(&encoded, row);
            if new {
                new_rows.push(row as u32);
            }
            ids.push(id);
        }
        (ids, new_rows)
    }

    fn looked_up(index: &KeyIndex, keys: &[ArrayRef]) -> Vec<u32> {
        let keys = index.encoder.encode(keys, NullKeys::Skip).unwrap();
        (0..keys.len())
            .map(|row| index.lookup_row(&keys, row))
            .collect()
    }

    #[test]
    fn packed_keys_get_dense_ids_and_nulls_group_apart() {
        let mut index = KeyIndex::new(&[DataType::Int64, DataType::Int32]).unwrap();
        let a: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(1),
            Some(1),
            None,
            Some(1),
            None,
        ]));
        let b: ArrayRef = Arc::new(Int32Array::from(vec![
            Some(2),
            Some(3),
            Some(2),
            Some(2),
            Some(2),
        ]));
        let (ids, new_rows) = interned(&mut index, &[a.clone(), b.clone()], NullKeys::Group);
        assert_eq!(ids, vec![0, 1, 2, 0, 2]);
        assert_eq!(new_rows, vec![0, 1, 2]);
        assert_eq!(looked_up(&index, &[a, b]), vec![0, 1, NO_KEY, 0, NO_KEY]);
    }

    #[test]
    fn skipped_nulls_and_byte_keys() {
        let mut index = KeyIndex::new(&[DataType::Utf8]).unwrap();
        let a: ArrayRef = Arc::new(StringArray::from(vec![
            Some("x"),
            None,
            Some("y"),
            Some("x"),
        ]));
        let (ids, _) = interned(&mut index, std::slice::from_ref(&a), NullKeys::Skip);
        assert_eq!(ids, vec![0, NO_KEY, 1, 0]);
        let probe: ArrayRef = Arc::new(StringArray::from(vec!["y", "z"]));
        assert_eq!(looked_up(&index, &[probe]), vec![1, NO_KEY]);
        assert_eq!(index.len(), 2);
    }

    #[test]
    fn short_strings_pack_and_long_or_null_ones_go_to_row_format() {
        // With a BIGINT beside it, a string packs when it has at most 7 bytes.
        let types = [DataType::Utf8, DataType::Int64];
        assert_eq!(packed_widths(&types), Some(vec![64, 64]));
        let mut index = KeyIndex::new(&types).unwrap();
        let strings = [
            Some("abcdefg"),
            Some("abcdefgh"),
            None,
            Some(""),
            Some("a\0"),
            Some("a"),
            Some("abcdefgh"),
            Some("abcdefg"),
            None,
        ];
        let a: ArrayRef = Arc::new(StringArray::from(strings.to_vec()));
        let b: ArrayRef = Arc::new(Int64Array::from(vec![1; strings.len()]));
        let (ids, new_rows) = interned(&mut index, &[a.clone(), b.clone()], NullKeys::Group);
        assert_eq!(ids, vec![0, 1, 2, 3, 4, 5, 1, 0, 2]);
        assert_eq!(new_rows, vec![0, 1, 2, 3, 4, 5]);
        // Another batch encodes each key the same way, whatever else it holds.
        let probe: ArrayRef = Arc::new(StringArray::from(vec!["abcdefgh", "a", "abcdefg", "b"]));
        let ones: ArrayRef = Arc::new(Int64Array::from(vec![1; 4]));
        assert_eq!(looked_up(&index, &[probe, ones]), vec![1, 5, 0, NO_KEY]);
        assert_eq!(looked_up(&index, &[a, b])[2], NO_KEY);
    }

    #[test]
    fn strings_share_the_bits_the_other_columns_leave() {
        assert_eq!(packed_widths(&[DataType::Utf8]), Some(vec![128]));
        assert_eq!(
            packed_widths(&[DataType::Utf8, DataType::Utf8]),
            Some(vec![64, 64])
        );
        assert_eq!(
            packed_widths(&[DataType::Utf8, DataType::Int64]),
            Some(vec![64, 64])
        );
        assert_eq!(
            packed_widths(&[DataType::Utf8, DataType::Int32, DataType::Utf8]),
            None
        );
        assert_eq!(
            packed_widths(&[DataType::Utf8, DataType::Decimal128(15, 2)]),
            None
        );
        assert_eq!(packed_widths(&[DataType::Float64]), None);
    }

    #[test]
    fn group_ids_count_across_partitions_which_know_their_groups() {
        let mut index = GroupIndex::new(&[DataType::Int64]).unwrap();
        let keys: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(7),
            Some(7),
            None,
            Some(3),
            Some(7),
            None,
            Some(3),
            Some(3),
        ]));
        let (mut ids, mut new_rows) = (Vec::new(), Vec::new());
        index.intern(&[keys], &mut ids, &mut new_rows).unwrap();
        assert_eq!(ids, vec![0, 0, 1, 2, 0, 1, 2, 2]);
        assert_eq!(new_rows, vec![0, 2, 3]);
        let mut members: Vec<u32> = (0..GROUP_PARTITIONS)
            .flat_map(|p| index.members(p).to_vec())
            .collect();
        members.sort();
        assert_eq!(members, vec![0, 1, 2]);
    }

    #[test]
    fn dictionary_keys_get_the_ids_and_partitions_of_their_plain_values() {
        use arrow::array::DictionaryArray;
        let types = [DataType::Utf8, DataType::Utf8];
        let dictionary = |keys: Vec<Option<i32>>, values: Vec<Option<&str>>| -> ArrayRef {
            let keys = Int32Array::from(keys);
            Arc::new(DictionaryArray::new(
                keys,
                Arc::new(StringArray::from(values)),
            ))
        };
        let plain = |key: &ArrayRef| arrow::compute::cast(key, &DataType::Utf8).unwrap();
        // Two batches whose dictionaries differ; a NULL both as a key and as a value; a
        // combination repeated within and across batches.
        let batches = [
            vec![
                dictionary(
                    vec![Some(0), Some(1), None, Some(0), Some(2), Some(1), Some(0)],
                    vec![Some("A"), Some("N"), None],
                ),
                dictionary(
                    vec![
                        Some(0),
                        Some(0),
                        Some(1),
                        Some(0),
                        Some(1),
                        Some(0),
                        Some(1),
                    ],
                    vec![Some("F"), Some("O")],
                ),
            ],
            vec![
                dictionary(
                    vec![
                        Some(1),
                        Some(1),
                        Some(0),
                        Some(1),
                        Some(1),
                        Some(1),
                        Some(1),
                    ],
                    vec![Some("R"), Some("A")],
                ),
                dictionary(
                    vec![
                        Some(0),
                        Some(1),
                        Some(0),
                        Some(0),
                        Some(1),
                        Some(0),
                        Some(1),
                    ],
                    vec![Some("O"), Some("F")],
                ),
            ],
        ];
        let mut by_dictionary = GroupIndex::new(&types).unwrap();
        let mut by_value = GroupIndex::new(&types).unwrap();
        for batch in &batches {
            let plain_batch: Vec<ArrayRef> = batch.iter().map(plain).collect();
            let (mut ids, mut new_rows) = (Vec::new(), Vec::new());
            by_dictionary
                .intern(batch, &mut ids, &mut new_rows)
                .unwrap();
            let (mut plain_ids, mut plain_new_rows) = (Vec::new(), Vec::new());
            by_value
                .intern(&plain_batch, &mut plain_ids, &mut plain_new_rows)
                .unwrap();
            assert_eq!(ids, plain_ids);
            assert_eq!(new_rows, plain_new_rows);
        }
        assert_eq!(by_dictionary.len(), 5);
        assert_eq!(
            by_dictionary.into_members(),
            by_value.into_members(),
            "each key in the partition of its plain value"
        );
        // More combinations than rows: the dictionaries are decoded, with the same ids.
        let mut index = GroupIndex::new(&[DataType::Utf8]).unwrap();
        let wide = dictionary(
            vec![Some(2), Some(0)],
            vec![Some("x"), Some("y"), Some("z")],
        );
        let (mut ids, mut new_rows) = (Vec::new(), Vec::new());
        index.intern(&[wide], &mut ids, &mut new_rows).unwrap();
        assert_eq!((ids, new_rows), (vec![0, 1], vec![0, 1]));
    }

    #[test]
    fn keys_looked_up_by_value_keep_their_ids_when_hashed_after() {
        let mut index = GroupIndex::new(&[DataType::Int64]).unwrap();
        let intern = |index: &mut GroupIndex, values: Vec<Option<i64>>| {
            let keys: ArrayRef = Arc::new(Int64Array::from(values));
            let (mut ids, mut new_rows) = (Vec::new(), Vec::new());
            index
                .intern(std::slice::from_ref(&keys), &mut ids, &mut new_rows)
                .unwrap();
            (keys, ids, new_rows)
        };
        // A new key twice in one batch gets one id.
        let (_, ids, new_rows) = intern(&mut index, vec![Some(5), Some(9), Some(5), Some(9)]);
        assert!(index.looks_up_by_value());
        assert_eq!((ids, new_rows), (vec![0, 1, 0, 1], vec![0, 1]));
        let (_, ids, new_rows) = intern(&mut index, vec![Some(9), Some(2), Some(2), Some(5)]);
        assert_eq!((ids, new_rows), (vec![1, 2, 2, 0], vec![1]));
        // Too wide a span: the keys so far move into the hash tables with their ids.
        let far = 1i64 << 40;
        let (_, ids, new_rows) = intern(&mut index, vec![Some(far), Some(2), Some(9), Some(far)]);
        assert!(!index.looks_up_by_value());
        assert_eq!((ids, new_rows), (vec![3, 2, 1, 3], vec![0]));
        let (keys, ids, _) = intern(&mut index, vec![None, Some(5), None, Some(far)]);
        assert_eq!(ids, vec![4, 0, 4, 3]);
        // Every key is in the partition its hash picks, once.
        let partitions = index.partitions_of(&[keys]).unwrap();
        for (row, &id) in ids.iter().enumerate() {
            let partition = partitions[row] as usize;
            assert_eq!(
                index
                    .members(partition)
                    .iter()
                    .filter(|&&m| m == id)
                    .count(),
                1
            );
        }
        assert_eq!(index.len(), 5);

        // A NULL while looking up by value also moves the keys into the hash tables.
        let mut index = GroupIndex::new(&[DataType::Int32]).unwrap();
        let keys: ArrayRef = Arc::new(Int32Array::from(vec![4, 8, 4]));
        let (mut ids, mut new_rows) = (Vec::new(), Vec::new());
        index.intern(&[keys], &mut ids, &mut new_rows).unwrap();
        let keys: ArrayRef = Arc::new(Int32Array::from(vec![Some(8), None, Some(4), Some(6)]));
        index.intern(&[keys], &mut ids, &mut new_rows).unwrap();
        assert_eq!(ids, vec![1, 2, 0, 3]);
        assert!(!index.looks_up_by_value());
    }
}
