//! The wire form of catalog changes (ADR 0053): what a node that does not lead sends the leader
//! to commit, as JSON. Bytes travel as base64; a deletion vector in Delta's form, as base64.

use serde::{Deserialize, Serialize};

use crate::catalog::Change;

/// A commit prepared by a node that does not lead, for the leader to order: the changes, the
/// snapshot they were prepared against, and the attempt's (producer, sequence), by which the
/// leader knows a retry.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ForwardedCommit {
    /// The commit of the snapshot the changes were prepared against.
    pub base: u64,
    pub changes: Vec<Change>,
    pub producer: String,
    pub sequence: u64,
}

/// Bytes as a base64 string.
pub(crate) mod base64_bytes {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use bytes::Bytes;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &Bytes, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Bytes, D::Error> {
        let text = String::deserialize(deserializer)?;
        let bytes = STANDARD.decode(text).map_err(serde::de::Error::custom)?;
        Ok(Bytes::from(bytes))
    }
}

/// A set of row ordinals as Delta's deletion vector bytes, in base64.
pub(crate) mod bitmap {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use roaring::RoaringBitmap;
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::deletions::{decode_deletion_vector, encode_deletion_vector};

    pub fn serialize<S: Serializer>(
        rows: &RoaringBitmap,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(encode_deletion_vector(rows)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<RoaringBitmap, D::Error> {
        let text = String::deserialize(deserializer)?;
        let bytes = STANDARD.decode(text).map_err(serde::de::Error::custom)?;
        decode_deletion_vector(&bytes).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use roaring::RoaringBitmap;

    use super::*;
    use crate::Container;
    use crate::types::{Column, SegmentPayload, SqlType, TableDef, TableKind};

    #[test]
    fn a_forwarded_commit_survives_its_wire_form() {
        let column = Column {
            name: "k".into(),
            sql_type: SqlType::BigInt,
            not_null: true,
            id: 0,
        };
        let def = TableDef::new("t".into(), vec![column], TableKind::Table);
        let changes = vec![
            Change::CreateTable {
                def,
                initial: Some((
                    2,
                    SegmentPayload::Inline(Bytes::from_static(b"\x00\xffrows")),
                )),
            },
            Change::AppendSegment {
                table_id: 7,
                rows: 3,
                payload: SegmentPayload::Object("log/t/x.arrow".into()),
                ranges: vec![Some((1, 9)), None],
                column_ids: vec![0, 2],
                partition: 3,
            },
            Change::DeleteRows {
                table_id: 7,
                container: Container::Segment {
                    commit: 4,
                    index: 1,
                },
                rows: RoaringBitmap::from_iter([0u32, 5, 70_000]),
            },
            Change::ProducerSequence {
                producer: "p".into(),
                sequence: 12,
            },
        ];
        let commit = ForwardedCommit {
            base: 41,
            changes,
            producer: "node-a".into(),
            sequence: 3,
        };
        let text = serde_json::to_string(&commit).unwrap();
        let back: ForwardedCommit = serde_json::from_str(&text).unwrap();
        assert_eq!(back.base, 41);
        assert_eq!(
            format!("{:?}", back.changes),
            format!("{:?}", commit.changes)
        );
        let corrupt = text.replace("\"rows\":\"", "\"rows\":\"!");
        assert!(serde_json::from_str::<ForwardedCommit>(&corrupt).is_err());
    }
}
