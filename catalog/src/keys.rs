//! The catalog's key layout in SlateDB. Keys sort by table and then by commit, so one table's
//! segments come back from a prefix scan in commit order.
//!
//! - `m/commit`                          the last commit number (u64, big-endian)
//! - `m/next_table_id`                   the next table id to hand out (u64, big-endian)
//! - `t/<name>`                          a table or view definition (JSON); `<schema>.<table>` names one of a schema
//! - `n/<schema>`                        a schema other than `public`: its id (u64, big-endian; ADR 0051)
//! - `s/<table_id>/<commit>/<index>`     a log segment (see [`crate::catalog`] for its encoding)
//! - `f/<table_id>/<path>`               a Parquet data file (JSON)
//! - `g/<deadline_ms>/<path>`            an object to delete once the deadline has passed
//! - `p/<producer>`                      a producer's last appended sequence number (u64, big-endian)
//! - `d/<table_id>/f/<path>`             the deletion vector of a data file (ADR 0048)
//! - `d/<table_id>/s/<commit>/<index>`   the deletion vector of a log segment
//! - `x/<table_id>/<commit>/<index>`     a change record (encoded as a log segment is)
//! - `w/<table_id>`                      a watermarked table's greatest event time and late rows (ADR 0055)
//! - `o/<table_id>`                      the offset a table's next appended row takes (u64, big-endian; ADR 0077)
//! - `o/<table_id>/<partition>`          the same within a Kafka partition above 0 (ADR 0079)
//! - `c/<group> 0 <topic> 0 <partition>` the offset a Kafka consumer group committed (JSON; ADR 0077)
//! - `b/<name>`                          a console notebook (JSON; ADR 0080)
//! - `e/<name>`                          a secret, its options sealed (JSON; ADR 0082)
//! - `a/<key>`                           a model's answer, by the SHA-256 of what was asked (ADR 0082)

use crate::deletions::Container;

pub const LAST_COMMIT: &str = "m/commit";
pub const NEXT_TABLE_ID: &str = "m/next_table_id";
pub const TABLE_PREFIX: &str = "t/";
pub const SCHEMA_PREFIX: &str = "n/";
pub const SEGMENT_PREFIX: &str = "s/";
pub const FILE_PREFIX: &str = "f/";
pub const GARBAGE_PREFIX: &str = "g/";
pub const PRODUCER_PREFIX: &str = "p/";
pub const DELETION_PREFIX: &str = "d/";
pub const CHANGE_PREFIX: &str = "x/";
pub const EVENT_TIME_PREFIX: &str = "w/";
pub const OFFSET_PREFIX: &str = "o/";
pub const CONSUMER_OFFSET_PREFIX: &str = "c/";
pub const NOTEBOOK_PREFIX: &str = "b/";
pub const TASK_PREFIX: &str = "k/";
pub const SECRET_PREFIX: &str = "e/";
pub const ANSWER_PREFIX: &str = "a/";
pub const INDEX_GRAPH_PREFIX: &str = "v/";

/// The key of a vector index's graph for one data file (ADR 0082).
pub fn index_graph(table_id: u64, index: &str, file: &str) -> String {
    format!("{INDEX_GRAPH_PREFIX}{table_id:016x}/{index}\u{0}{file}")
}

pub fn secret(name: &str) -> String {
    format!("{SECRET_PREFIX}{name}")
}

pub fn answer(key: &str) -> String {
    format!("{ANSWER_PREFIX}{key}")
}

pub fn task(name: &str) -> String {
    format!("{TASK_PREFIX}{name}")
}

pub fn notebook(name: &str) -> String {
    format!("{NOTEBOOK_PREFIX}{name}")
}

/// A consumer group's committed offset: the group, topic and partition apart by NUL bytes,
/// which Kafka's names cannot hold.
pub fn consumer_offset(group: &str, topic: &str, partition: i32) -> String {
    format!("{CONSUMER_OFFSET_PREFIX}{group}\u{0}{topic}\u{0}{partition}")
}

pub fn next_offset(table_id: u64, partition: u16) -> String {
    match partition {
        0 => format!("{OFFSET_PREFIX}{table_id:016x}"),
        p => format!("{OFFSET_PREFIX}{table_id:016x}/{p:04x}"),
    }
}

/// The (table id, partition) of a next offset's key, less its prefix.
pub fn parse_next_offset(rest: &str) -> Option<(u64, u16)> {
    let (table, partition) = match rest.split_once('/') {
        Some((table, partition)) => (table, u16::from_str_radix(partition, 16).ok()?),
        None => (rest, 0),
    };
    Some((u64::from_str_radix(table, 16).ok()?, partition))
}

pub fn event_time(table_id: u64) -> String {
    format!("{EVENT_TIME_PREFIX}{table_id:016x}")
}

pub fn producer(name: &str) -> String {
    format!("{PRODUCER_PREFIX}{name}")
}

pub fn schema(name: &str) -> String {
    format!("{SCHEMA_PREFIX}{name}")
}

pub fn table(name: &str) -> String {
    format!("{TABLE_PREFIX}{name}")
}

pub fn segment(table_id: u64, commit: u64, index: u32) -> String {
    format!("{SEGMENT_PREFIX}{table_id:016x}/{commit:016x}/{index:08x}")
}

pub fn change_record(table_id: u64, commit: u64, index: u32) -> String {
    format!("{CHANGE_PREFIX}{table_id:016x}/{commit:016x}/{index:08x}")
}

pub fn file(table_id: u64, path: &str) -> String {
    format!("{FILE_PREFIX}{table_id:016x}/{path}")
}

/// The table id and index name of an index graph's key.
pub fn parse_index_graph(key: &str) -> Option<(u64, String)> {
    let (table_id, rest) = key.strip_prefix(INDEX_GRAPH_PREFIX)?.split_once('/')?;
    let (index, _file) = rest.split_once('\u{0}')?;
    Some((u64::from_str_radix(table_id, 16).ok()?, index.to_string()))
}

pub fn garbage(deadline_ms: u64, path: &str) -> String {
    format!("{GARBAGE_PREFIX}{deadline_ms:016x}/{path}")
}

pub fn deletion(table_id: u64, container: &Container) -> String {
    match container {
        Container::File(path) => format!("{DELETION_PREFIX}{table_id:016x}/f/{path}"),
        Container::Segment { commit, index } => {
            format!("{DELETION_PREFIX}{table_id:016x}/s/{commit:016x}/{index:08x}")
        }
    }
}

/// Splits `d/<table_id>/f/<path>` or `d/<table_id>/s/<commit>/<index>` into the table id and
/// the container.
pub fn parse_deletion(key: &str) -> Option<(u64, Container)> {
    let (table_id, rest) = key.strip_prefix(DELETION_PREFIX)?.split_once('/')?;
    let table_id = u64::from_str_radix(table_id, 16).ok()?;
    let container = match rest.split_once('/')? {
        ("f", path) => Container::File(path.to_string()),
        ("s", segment) => {
            let (commit, index) = segment.split_once('/')?;
            Container::Segment {
                commit: u64::from_str_radix(commit, 16).ok()?,
                index: u32::from_str_radix(index, 16).ok()?,
            }
        }
        _ => return None,
    };
    Some((table_id, container))
}

/// Splits `s/<table_id>/<commit>/<index>` (or a change record's `x/...`) into its numbers.
pub fn parse_segment(key: &str) -> Option<(u64, u64, u32)> {
    let rest = key.strip_prefix(SEGMENT_PREFIX);
    let mut parts = rest.or_else(|| key.strip_prefix(CHANGE_PREFIX))?.split('/');
    let table_id = u64::from_str_radix(parts.next()?, 16).ok()?;
    let commit = u64::from_str_radix(parts.next()?, 16).ok()?;
    let index = u32::from_str_radix(parts.next()?, 16).ok()?;
    Some((table_id, commit, index))
}

/// Splits `g/<deadline_ms>/<path>` into the deadline and the path.
pub fn parse_garbage(key: &str) -> Option<(u64, String)> {
    let (deadline, path) = key.strip_prefix(GARBAGE_PREFIX)?.split_once('/')?;
    Some((u64::from_str_radix(deadline, 16).ok()?, path.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_keys_round_trip_and_sort_by_commit() {
        let a = segment(3, 9, 0);
        let b = segment(3, 10, 0);
        assert!(a < b);
        assert_eq!(parse_segment(&b), Some((3, 10, 0)));
        assert_eq!(
            parse_garbage(&garbage(77, "log/a/b.arrow")),
            Some((77, "log/a/b.arrow".to_string()))
        );
        for container in [
            Container::File("data/t/a.parquet".into()),
            Container::Segment {
                commit: 12,
                index: 3,
            },
        ] {
            assert_eq!(
                parse_deletion(&deletion(5, &container)),
                Some((5, container))
            );
        }
    }
}
