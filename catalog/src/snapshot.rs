use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::deletions::{Container, DeletionVector};
use crate::segment_log::{self, SegmentLog};
use crate::statistics::ColumnStatistics;
use crate::types::{DataFile, LogSegment, TableDef};

/// The whole catalog as of one commit. Immutable: a reader holds one and sees a consistent lake
/// (every table's files and log segments at that commit) however many commits follow.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The number of the last commit this snapshot includes (0 for an empty lake).
    pub commit: u64,
    pub next_table_id: u64,
    pub tables: BTreeMap<String, Arc<TableDef>>,
    /// Log segments per table id, in commit order.
    pub segments: HashMap<u64, SegmentLog>,
    /// Parquet files per table id; a commit that changes none of a table's shares its list
    /// with the snapshot before.
    pub files: HashMap<u64, Arc<Vec<DataFile>>>,
    /// Per table id, the deletion vector of each container that has deleted rows (ADR 0048).
    pub deletions: HashMap<u64, Arc<BTreeMap<Container, DeletionVector>>>,
    /// Per table id, the change records of the commits that updated or deleted its rows, in
    /// commit order (ADR 0048): what `table_changes` reads.
    pub change_records: HashMap<u64, Arc<Vec<LogSegment>>>,
    /// Objects waiting to be deleted: (deadline in ms since the epoch, path).
    pub garbage: Vec<(u64, String)>,
    /// The last sequence number each producer appended with (exactly-once appends).
    pub producers: HashMap<String, u64>,
    /// Each watermarked table's event time, by table id (ADR 0055).
    pub event_times: HashMap<u64, crate::EventTime>,
    /// Per (table id, partition), the offset its next appended row takes within the partition:
    /// how many rows its appends have held since offsets were kept (ADR 0077, 0079).
    pub next_offsets: HashMap<(u64, u16), u64>,
    /// The offsets Kafka consumer groups committed, by (group, topic, partition) (ADR 0077).
    pub consumer_offsets: Arc<BTreeMap<(String, String, i32), crate::ConsumerOffset>>,
    /// The console's notebooks by name, each a JSON document (ADR 0080).
    pub notebooks: Arc<BTreeMap<String, Arc<str>>>,
    /// Tasks by name (ADR 0081).
    pub tasks: Arc<BTreeMap<String, Arc<crate::TaskDef>>>,
    /// Secrets by name, their options sealed (ADR 0082).
    pub secrets: Arc<BTreeMap<String, Arc<crate::SealedSecret>>>,
    /// The graphs of vector indexes, per table and index, by data file (ADR 0082).
    pub index_graphs: crate::IndexGraphs,
    /// The answers of language models kept in the lake, by key (ADR 0082).
    pub answers: crate::ModelAnswers,
    /// Per table id, the last commit that changed its rows (appended or rewrote them), for
    /// transactions to find what was committed after they began (ADR 0045). Not stored:
    /// rebuilt as commits apply, from the loaded commit when the catalog opens.
    pub rows_changed_at: HashMap<u64, u64>,
    /// Per table name, the last commit that created, altered or dropped it.
    pub defined_at: HashMap<String, u64>,
    /// The schemas other than `public`, by name, with their ids (from the table ids' counter).
    /// A table of one is named `<schema>.<table>`.
    pub schemas: std::collections::BTreeMap<String, u64>,
}

impl Snapshot {
    /// The last commit that changed the rows of table `id` (0 when none since it was loaded).
    pub fn rows_changed_at(&self, id: u64) -> u64 {
        self.rows_changed_at.get(&id).copied().unwrap_or(0)
    }

    /// The watermark of `table` (ADR 0055): the greatest event time written, less its delay,
    /// in microseconds since the epoch. `None` for a table without a watermark or without rows.
    pub fn watermark(&self, table: &crate::TableDef) -> Option<i64> {
        let declared = table.watermark.as_ref()?;
        let seen = self.event_times.get(&table.id)?;
        Some(seen.greatest.saturating_sub(declared.delay_micros))
    }

    /// The last commit that created, altered or dropped the table named `name`.
    pub fn defined_at(&self, name: &str) -> u64 {
        self.defined_at.get(name).copied().unwrap_or(0)
    }

    /// The table or view a statement may name: none for a view's hidden state (ADR 0052).
    pub fn table(&self, name: &str) -> Option<&Arc<TableDef>> {
        self.tables.get(name).filter(|t| !t.is_hidden())
    }

    /// The macro `name` (ADR 0068), if there is one.
    pub fn macro_def(&self, name: &str) -> Option<&Arc<TableDef>> {
        self.tables
            .get(&crate::macro_name(name))
            .filter(|t| matches!(t.kind, crate::TableKind::Macro { .. }))
    }

    /// The typed functions (every overload) named `name` (ADR 0081).
    pub fn functions_named(&self, name: &str) -> Vec<&Arc<TableDef>> {
        self.overloads(name, crate::FUNCTION_SUFFIX)
    }

    /// The procedures (every overload) named `name` (ADR 0081).
    pub fn procedures_named(&self, name: &str) -> Vec<&Arc<TableDef>> {
        self.overloads(name, crate::PROCEDURE_SUFFIX)
    }

    /// The entries `name(<types>)<suffix>`: one per overload.
    fn overloads(&self, name: &str, suffix: &str) -> Vec<&Arc<TableDef>> {
        let prefix = format!("{name}(");
        self.tables
            .range(prefix.clone()..)
            .take_while(|(key, _)| key.starts_with(&prefix))
            .filter(|(key, _)| key.ends_with(suffix))
            .map(|(_, def)| def)
            .collect()
    }

    /// The tables and views that listings show: all but the views' hidden state.
    pub fn visible_tables(&self) -> impl Iterator<Item = &Arc<TableDef>> {
        self.tables.values().filter(|t| !t.is_hidden())
    }

    pub fn table_by_id(&self, id: u64) -> Option<&Arc<TableDef>> {
        self.tables.values().find(|t| t.id == id)
    }

    pub fn segments(&self, table_id: u64) -> &SegmentLog {
        self.segments.get(&table_id).unwrap_or(&segment_log::EMPTY)
    }

    pub fn files(&self, table_id: u64) -> &[DataFile] {
        self.files.get(&table_id).map_or(&[], |f| f.as_slice())
    }

    /// The containers of a table's rows in the order scans read them, which row addresses
    /// number them by: its data files, then its log segments in commit order.
    pub fn containers(&self, table_id: u64) -> Vec<Container> {
        let files = self.files(table_id).iter();
        let files = files.map(|f| Container::File(f.path.clone()));
        let segments = self.segments(table_id).iter();
        let segments = segments.map(|s| Container::Segment {
            commit: s.commit,
            index: s.index,
        });
        files.chain(segments).collect()
    }

    /// The change records of a table, in commit order.
    pub fn change_records(&self, table_id: u64) -> &[LogSegment] {
        self.change_records
            .get(&table_id)
            .map_or(&[], |r| r.as_slice())
    }

    /// The deleted rows of one container of a table, if it has any.
    pub fn deletion_vector(&self, table_id: u64, container: &Container) -> Option<&DeletionVector> {
        self.deletions.get(&table_id)?.get(container)
    }

    /// How many rows of a table its deletion vectors mark deleted.
    pub fn deleted_rows(&self, table_id: u64) -> u64 {
        self.deletions
            .get(&table_id)
            .map_or(0, |vectors| vectors.values().map(|v| v.len()).sum())
    }

    /// The table holding the index named `name`.
    /// The graphs of vector index `index` of table `table_id`, by data file (ADR 0082).
    pub fn index_graphs(
        &self,
        table_id: u64,
        index: &str,
    ) -> Option<&std::collections::BTreeMap<String, Arc<crate::IndexGraph>>> {
        self.index_graphs.get(&(table_id, index.to_string()))
    }

    pub fn table_with_index(&self, name: &str) -> Option<&Arc<TableDef>> {
        self.tables
            .values()
            .find(|t| t.indexes.iter().any(|i| i.name == name))
    }

    /// Materialized views kept current by commits to `table` (which they read).
    pub fn views_over(&self, table: &str) -> Vec<Arc<TableDef>> {
        self.tables
            .values()
            .filter(|t| match &t.kind {
                crate::TableKind::MaterializedView {
                    base_table,
                    also_reads,
                    ..
                } => base_table == table || also_reads.iter().any(|t| t == table),
                crate::TableKind::Table
                | crate::TableKind::View { .. }
                | crate::TableKind::ValueCounts { .. }
                | crate::TableKind::JoinState { .. }
                | crate::TableKind::Macro { .. }
                | crate::TableKind::Procedure { .. } => false,
            })
            .cloned()
            .collect()
    }

    /// The count tables of materialized view `view` (ADR 0052), in position order: none for a
    /// view without mins or maxes, or one created before they were kept.
    pub fn value_counts_of(&self, view: &str) -> Vec<Arc<TableDef>> {
        let mut counts: Vec<(usize, Arc<TableDef>)> = self
            .tables
            .values()
            .filter_map(|t| match &t.kind {
                crate::TableKind::ValueCounts { view: v, position } if v == view => {
                    Some((*position, t.clone()))
                }
                _ => None,
            })
            .collect();
        counts.sort_by_key(|(position, _)| *position);
        counts.into_iter().map(|(_, t)| t).collect()
    }

    /// The join states of materialized view `view` (ADR 0054), in position order.
    pub fn join_states_of(&self, view: &str) -> Vec<Arc<TableDef>> {
        let mut states: Vec<(usize, Arc<TableDef>)> = self
            .tables
            .values()
            .filter_map(|t| match &t.kind {
                crate::TableKind::JoinState { view: v, position } if v == view => {
                    Some((*position, t.clone()))
                }
                _ => None,
            })
            .collect();
        states.sort_by_key(|(position, _)| *position);
        states.into_iter().map(|(_, t)| t).collect()
    }

    /// Rows committed but not yet in Parquet, over all tables.
    pub fn untiered_rows(&self) -> u64 {
        self.segments
            .values()
            .flat_map(SegmentLog::iter)
            .map(|s| s.rows)
            .sum()
    }

    /// The column statistics of a table's data files, merged; none when no file has them.
    /// Files written before statistics were kept or before the table's last ADD or DROP
    /// COLUMN, and the log tail, are not covered.
    pub fn table_statistics(&self, table_id: u64) -> Option<TableStatistics> {
        let table = self.table_by_id(table_id)?;
        let mut merged: Option<TableStatistics> = None;
        for file in self.files(table_id) {
            if file.columns.is_empty() || table.layout_of(&file.column_ids).is_some() {
                continue;
            }
            match &mut merged {
                None => {
                    merged = Some(TableStatistics {
                        rows: file.rows,
                        columns: file.columns.clone(),
                    })
                }
                Some(table) if table.columns.len() == file.columns.len() => {
                    table.rows += file.rows;
                    for (mine, theirs) in table.columns.iter_mut().zip(&file.columns) {
                        mine.merge(theirs);
                    }
                }
                Some(_) => {}
            }
        }
        merged
    }

    /// Live rows of one table, Parquet and log tail together.
    pub fn row_count(&self, table_id: u64) -> u64 {
        let in_files: u64 = self.files(table_id).iter().map(|f| f.rows).sum();
        let in_log: u64 = self.segments(table_id).iter().map(|s| s.rows).sum();
        in_files + in_log - self.deleted_rows(table_id)
    }
}

/// The statistics of the data files of a table: the rows they cover, and each column's.
#[derive(Clone, Debug, PartialEq)]
pub struct TableStatistics {
    pub rows: u64,
    pub columns: Vec<ColumnStatistics>,
}
