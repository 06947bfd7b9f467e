//! Record batches checked before they are decoded: the decoder reserves what a batch claims (its
//! record count, each record's header count), so a client's made-up numbers are refused here
//! against the bytes that are really there, and a compressed batch may not grow past a limit.

use std::io::Read;

/// The most records one batch may hold (librdkafka sends at most 10,000 by default).
const MAX_RECORDS: usize = 1_000_000;

/// The most bytes a compressed batch's records may decompress to.
const MAX_DECOMPRESSED: usize = 256 << 20;

/// The most records, and bytes of records, one partition's batches of a request may hold: they
/// are all decoded before they are written.
const MAX_PARTITION_RECORDS: usize = 2_000_000;
const MAX_PARTITION_BYTES: usize = 512 << 20;

/// Bytes in a v2 batch's header, up to its records.
const HEADER: usize = 61;

/// What the header of a record batch says of its producer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BatchHeader {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records: usize,
    pub transactional: bool,
}

/// Checks every batch in `bytes` (a partition's records of a produce request) and returns
/// their headers.
pub(super) fn check_batches(mut bytes: &[u8]) -> Result<Vec<BatchHeader>, String> {
    let mut headers = Vec::new();
    let (mut records, mut decoded) = (0, 0);
    while !bytes.is_empty() {
        if bytes.len() < 12 {
            return Err("a record batch is cut short".into());
        }
        let length = i32::from_be_bytes(bytes[8..12].try_into().expect("4 bytes"));
        let end = usize::try_from(length)
            .ok()
            .map(|length| 12 + length)
            .filter(|&end| end >= HEADER && end <= bytes.len())
            .ok_or_else(|| format!("a record batch of {length} bytes does not fit its request"))?;
        let (header, size) = check_batch(&bytes[..end])?;
        records += header.records;
        decoded += size;
        if records > MAX_PARTITION_RECORDS || decoded > MAX_PARTITION_BYTES {
            return Err(format!(
                "a partition's batches hold more than {MAX_PARTITION_RECORDS} records or \
                 {MAX_PARTITION_BYTES} bytes of them"
            ));
        }
        headers.push(header);
        bytes = &bytes[end..];
    }
    Ok(headers)
}

/// A batch's header, and the bytes its records take decompressed.
fn check_batch(batch: &[u8]) -> Result<(BatchHeader, usize), String> {
    let magic = batch[16];
    if magic != 2 {
        return Err(format!(
            "record batches of version {magic} are not read: version 2 is"
        ));
    }
    let attributes = i16::from_be_bytes([batch[21], batch[22]]);
    let count = i32::from_be_bytes(batch[57..61].try_into().expect("4 bytes"));
    let records = usize::try_from(count)
        .ok()
        .filter(|&count| count <= MAX_RECORDS)
        .ok_or_else(|| format!("a batch of {count} records: at most {MAX_RECORDS} are taken"))?;
    let body = &batch[HEADER..];
    let decompressed;
    let body = match attributes & 0x7 {
        0 => body,
        1 => {
            decompressed = capped(flate2::read::GzDecoder::new(body))?;
            &decompressed[..]
        }
        2 => {
            decompressed = snappy(body)?;
            &decompressed[..]
        }
        4 => {
            decompressed =
                capped(zstd::stream::read::Decoder::new(body).map_err(|e| e.to_string())?)?;
            &decompressed[..]
        }
        3 => {
            return Err(
                "LZ4-compressed batches are not read: send none, gzip, snappy or zstd".into(),
            );
        }
        other => return Err(format!("an unknown compression {other}")),
    };
    check_records(body, records)?;
    let header = BatchHeader {
        producer_id: i64::from_be_bytes(batch[43..51].try_into().expect("8 bytes")),
        producer_epoch: i16::from_be_bytes([batch[51], batch[52]]),
        base_sequence: i32::from_be_bytes(batch[53..57].try_into().expect("4 bytes")),
        records,
        transactional: attributes & 0x10 != 0,
    };
    Ok((header, body.len()))
}

/// A decompressing reader's bytes, refused past `MAX_DECOMPRESSED`.
fn capped(reader: impl Read) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    reader
        .take(MAX_DECOMPRESSED as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("cannot decompress a batch: {e}"))?;
    if out.len() > MAX_DECOMPRESSED {
        return Err(format!(
            "a batch decompresses past {MAX_DECOMPRESSED} bytes"
        ));
    }
    Ok(out)
}

/// Snappy as Kafka's clients send it: xerial's framing of raw blocks, or one raw block.
fn snappy(body: &[u8]) -> Result<Vec<u8>, String> {
    const XERIAL: &[u8] = b"\x82SNAPPY\x00";
    let raw = |block: &[u8]| -> Result<Vec<u8>, String> {
        let length = snap::raw::decompress_len(block).map_err(|e| e.to_string())?;
        if length > MAX_DECOMPRESSED {
            return Err(format!(
                "a batch decompresses past {MAX_DECOMPRESSED} bytes"
            ));
        }
        snap::raw::Decoder::new()
            .decompress_vec(block)
            .map_err(|e| format!("cannot decompress a batch: {e}"))
    };
    if !body.starts_with(XERIAL) {
        return raw(body);
    }
    // The magic, then two 4-byte versions, then blocks each behind its 4-byte length.
    let mut rest = body.get(16..).ok_or("a snappy stream is cut short")?;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let length = u32::from_be_bytes(
            rest.get(..4)
                .ok_or("a snappy block is cut short")?
                .try_into()
                .expect("4 bytes"),
        ) as usize;
        let block = rest
            .get(4..4 + length)
            .ok_or("a snappy block is cut short")?;
        out.extend(raw(block)?);
        if out.len() > MAX_DECOMPRESSED {
            return Err(format!(
                "a batch decompresses past {MAX_DECOMPRESSED} bytes"
            ));
        }
        rest = &rest[4 + length..];
    }
    Ok(out)
}

/// Walks `count` records, checking that every length and count each claims lies within them.
fn check_records(mut bytes: &[u8], count: usize) -> Result<(), String> {
    for _ in 0..count {
        let length = varint(&mut bytes)?;
        let record = take(&mut bytes, length)?;
        let mut fields = record;
        take(&mut fields, 1)?; // attributes
        varint(&mut fields)?; // timestamp delta
        varint(&mut fields)?; // offset delta
        for _ in 0..2 {
            let length = varint(&mut fields)?;
            if length >= 0 {
                take(&mut fields, length)?; // key, then value
            }
        }
        let headers = varint(&mut fields)?;
        // A header takes at least two bytes (the lengths of its key and value).
        if headers < 0 || headers as usize > fields.len() / 2 {
            return Err(format!(
                "a record claims {headers} headers in {} bytes",
                fields.len()
            ));
        }
    }
    if !bytes.is_empty() {
        return Err("a batch holds more bytes than its records".into());
    }
    Ok(())
}

/// Takes `length` bytes off the front of `bytes`.
fn take<'a>(bytes: &mut &'a [u8], length: i64) -> Result<&'a [u8], String> {
    let length = usize::try_from(length)
        .ok()
        .filter(|&length| length <= bytes.len())
        .ok_or_else(|| {
            format!(
                "a record claims {length} bytes where {} are left",
                bytes.len()
            )
        })?;
    let (taken, rest) = bytes.split_at(length);
    *bytes = rest;
    Ok(taken)
}

/// A zigzag variable-length integer, as records encode their fields.
fn varint(bytes: &mut &[u8]) -> Result<i64, String> {
    let mut value: u64 = 0;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first().ok_or("a record is cut short")?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
        }
    }
    Err("a variable-length integer longer than 64 bits".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };

    fn batch(compression: Compression) -> Vec<u8> {
        let records: Vec<Record> = (0..3)
            .map(|i| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id: 42,
                producer_epoch: 0,
                timestamp_type: TimestampType::Creation,
                offset: i,
                sequence: 7 + i as i32,
                timestamp: 1_000 + i,
                key: Some(bytes::Bytes::from(format!("k{i}"))),
                value: Some(bytes::Bytes::from(format!("{{\"n\":{i}}}"))),
                headers: Default::default(),
            })
            .collect();
        let mut buf = bytes::BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression,
        };
        RecordBatchEncoder::encode(&mut buf, &records, &options).unwrap();
        buf.to_vec()
    }

    #[test]
    fn batches_are_read_in_every_compression_taken() {
        for compression in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Zstd,
        ] {
            let headers = check_batches(&batch(compression)).unwrap();
            assert_eq!(headers.len(), 1, "{compression:?}");
            assert_eq!(
                (
                    headers[0].producer_id,
                    headers[0].base_sequence,
                    headers[0].records
                ),
                (42, 7, 3)
            );
        }
    }

    #[test]
    fn made_up_counts_and_lengths_are_refused() {
        let good = batch(Compression::None);
        let mut many = good.clone();
        many[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(check_batches(&many).unwrap_err().contains("records"));
        let mut more = good.clone();
        more[57..61].copy_from_slice(&4i32.to_be_bytes());
        assert!(check_batches(&more).is_err());
        let mut long = good.clone();
        long[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(check_batches(&long).is_err());
        assert!(check_batches(&good[..good.len() - 1]).is_err());
        // A record claiming a huge header count.
        let mut headers = good.clone();
        let last = headers.len() - 1;
        headers[last] = 0x7f;
        assert!(check_batches(&headers).is_err());
    }
}
