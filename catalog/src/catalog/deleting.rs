//! How a commit marks rows deleted, and forgets the deletion vectors of containers it removes.

use std::sync::Arc;

use roaring::RoaringBitmap;
use slatedb::WriteBatch;

use super::schedule_delete;
use crate::deletions::{Container, encode_deletion_vector};
use crate::error::{CatalogError, Result};
use crate::keys;
use crate::snapshot::Snapshot;
use crate::types::SegmentPayload;

/// Applies `Change::DeleteRows`: unions `rows` into the container's deletion vector, or
/// removes the container once every row of it is deleted.
pub(super) fn delete_rows(
    next: &mut Snapshot,
    batch: &mut WriteBatch,
    (table_id, container, rows): (u64, Container, RoaringBitmap),
    deadline: u64,
) -> Result<()> {
    let table = super::table_with_id(next, table_id)?;
    let name = table.name.clone();
    let Some(held) = rows_held(next, table_id, &container) else {
        return Err(CatalogError::RowsMoved(name));
    };
    if let Some(last) = rows.max().filter(|last| u64::from(*last) >= held) {
        return Err(CatalogError::Corrupt {
            key: keys::deletion(table_id, &container),
            message: format!("deletes row {last} of a container of {held} rows"),
        });
    }
    let mut vector = next
        .deletion_vector(table_id, &container)
        .map(|v| v.as_ref().clone())
        .unwrap_or_default();
    if !vector.is_disjoint(&rows) {
        return Err(CatalogError::DeletedConcurrently(name));
    }
    vector |= rows;
    next.rows_changed_at.insert(table_id, next.commit);
    let key = keys::deletion(table_id, &container);
    let vectors = Arc::make_mut(next.deletions.entry(table_id).or_default());
    if vector.len() < held {
        batch.put(&key, encode_deletion_vector(&vector));
        vectors.insert(container, Arc::new(vector));
        return Ok(());
    }
    // Nothing of the container is left: it goes, as tiering would have dropped it.
    vectors.remove(&container);
    batch.delete(&key);
    let removed = match container {
        Container::File(path) => {
            let files = Arc::make_mut(next.files.entry(table_id).or_default());
            files.retain(|f| f.path != path);
            batch.delete(keys::file(table_id, &path));
            Some(path)
        }
        Container::Segment { commit, index } => {
            let log = next.segments.entry(table_id).or_default();
            let removed = log.remove_where(|s| s.commit == commit && s.index == index);
            batch.delete(keys::segment(table_id, commit, index));
            removed.into_iter().find_map(|s| match s.payload {
                SegmentPayload::Object(path) => Some(path),
                SegmentPayload::Inline(_) => None,
            })
        }
    };
    if let Some(path) = removed {
        schedule_delete(next, batch, deadline, path);
    }
    Ok(())
}

/// How many rows a container of a table holds, deleted ones included; none if it is gone.
fn rows_held(snapshot: &Snapshot, table_id: u64, container: &Container) -> Option<u64> {
    match container {
        Container::File(path) => snapshot
            .files(table_id)
            .iter()
            .find(|f| &f.path == path)
            .map(|f| f.rows),
        Container::Segment { commit, index } => snapshot
            .segments(table_id)
            .iter()
            .find(|s| s.commit == *commit && s.index == *index)
            .map(|s| s.rows),
    }
}

/// Forgets the deletion vectors of `removed` containers of a table; returns how many rows they
/// marked deleted.
pub(super) fn forget_vectors(
    next: &mut Snapshot,
    batch: &mut WriteBatch,
    table_id: u64,
    removed: impl Iterator<Item = Container>,
) -> u64 {
    let Some(vectors) = next.deletions.get_mut(&table_id) else {
        return 0;
    };
    let mut deleted = 0;
    for container in removed {
        if let Some(vector) = Arc::make_mut(vectors).remove(&container) {
            deleted += vector.len();
            batch.delete(keys::deletion(table_id, &container));
        }
    }
    deleted
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use pondra_storage::Lake;

    use super::*;
    use crate::catalog::{Catalog, Change};
    use crate::types::{TableDef, TableKind};

    fn delete(table_id: u64, container: &Container, rows: &[u32]) -> Change {
        Change::DeleteRows {
            table_id,
            container: container.clone(),
            rows: rows.iter().copied().collect(),
        }
    }

    #[tokio::test]
    async fn deleted_rows_persist_conflict_and_empty_their_container() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open_folder(dir.path()).unwrap();
        let catalog = Catalog::open(&lake, Duration::from_secs(60)).await.unwrap();
        let def = TableDef::new("t".into(), Vec::new(), TableKind::Table);
        let payload = SegmentPayload::Inline(Bytes::from_static(b"rows"));
        catalog
            .commit(vec![Change::CreateTable {
                def,
                initial: Some((5, payload)),
            }])
            .await
            .unwrap();
        let snapshot = catalog.snapshot();
        let id = snapshot.table("t").unwrap().id;
        let segment = snapshot.containers(id)[0].clone();
        catalog
            .commit(vec![delete(id, &segment, &[0, 1])])
            .await
            .unwrap();
        assert_eq!(catalog.snapshot().row_count(id), 3);

        // A row deleted already, a row the container lacks, a container that is gone.
        let again = catalog.commit(vec![delete(id, &segment, &[1, 2])]).await;
        assert!(matches!(again, Err(CatalogError::DeletedConcurrently(_))));
        let beyond = catalog.commit(vec![delete(id, &segment, &[5])]).await;
        assert!(matches!(beyond, Err(CatalogError::Corrupt { .. })));
        let gone = Container::Segment {
            commit: 99,
            index: 0,
        };
        let moved = catalog.commit(vec![delete(id, &gone, &[0])]).await;
        assert!(matches!(moved, Err(CatalogError::RowsMoved(_))));

        // Tiering that read fewer deleted rows than there are would bring some back.
        let Container::Segment { commit, index } = segment else {
            unreachable!("the first container is the segment")
        };
        let stale = Change::Replace {
            table_id: id,
            segments: vec![(commit, index)],
            files: Vec::new(),
            added: Vec::new(),
            deleted: 1,
        };
        let refused = catalog.commit(vec![stale]).await;
        assert!(matches!(refused, Err(CatalogError::DeletedConcurrently(_))));

        catalog.close().await.unwrap();
        drop(catalog);
        let catalog = Catalog::open(&lake, Duration::from_secs(60)).await.unwrap();
        let snapshot = catalog.snapshot();
        let vector = snapshot.deletion_vector(id, &segment).unwrap();
        assert_eq!(vector.iter().collect::<Vec<_>>(), vec![0, 1]);

        // Deleting the rest removes the segment and its vector.
        catalog
            .commit(vec![delete(id, &segment, &[2, 3, 4])])
            .await
            .unwrap();
        let snapshot = catalog.snapshot();
        assert!(snapshot.segments(id).is_empty());
        assert!(snapshot.deletion_vector(id, &segment).is_none());
        assert_eq!(snapshot.row_count(id), 0);

        // Tiering planned before the segment went, when it had no deleted rows, is a
        // concurrent deletion too: planned again, never a corrupt catalog.
        let planned_before = Change::Replace {
            table_id: id,
            segments: vec![(commit, index)],
            files: Vec::new(),
            added: Vec::new(),
            deleted: 0,
        };
        let refused = catalog.commit(vec![planned_before]).await;
        assert!(matches!(refused, Err(CatalogError::DeletedConcurrently(_))));
        catalog.close().await.unwrap();
        drop(catalog);
        let catalog = Catalog::open(&lake, Duration::from_secs(60)).await.unwrap();
        assert!(catalog.snapshot().deletions.values().all(|v| v.is_empty()));
        assert!(catalog.snapshot().segments(id).is_empty());
        catalog.close().await.unwrap();
    }
}
