use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::compute::{concat, filter_record_batch};
use arrow::datatypes::SchemaRef;
use pondra_catalog::Snapshot;
use pondra_planner::{Expr, FileFormat, PhysicalPlan, SortKey};
use pondra_storage::{Lake, read_csv_file, read_parquet_row_group};

use crate::aggregate::HashAggregateSink;
use crate::expr::evaluate;
use crate::join::HashJoin;
use crate::profile::{NodeStats, Profile};
use crate::scan::{read_morsel, table_morsels, widen};
use crate::sort::sort_batches;
use crate::{ExecError, Result};

/// What a running plan can reach: the lake, the snapshot it reads, and rows handed to it.
pub struct ExecContext {
    pub lake: Lake,
    pub snapshot: Arc<Snapshot>,
    /// The runtime that object-store reads block on.
    pub runtime: tokio::runtime::Handle,
    /// The rows of the plan's `Input` leaf, if it has one.
    pub input: Vec<RecordBatch>,
    /// The rows each running recursive CTE's step reads, by CTE id.
    pub working_tables: std::sync::Mutex<HashMap<usize, Arc<Vec<RecordBatch>>>>,
    /// Rows and time per operator, for EXPLAIN ANALYZE.
    pub profile: Option<Profile>,
}

impl ExecContext {
    pub fn new(
        lake: Lake,
        snapshot: Arc<Snapshot>,
        runtime: tokio::runtime::Handle,
        input: Vec<RecordBatch>,
    ) -> ExecContext {
        ExecContext {
            lake,
            snapshot,
            runtime,
            input,
            working_tables: Default::default(),
            profile: None,
        }
    }

    fn stats(&self, node: &PhysicalPlan) -> Option<Arc<NodeStats>> {
        self.profile.as_ref().map(|p| p.stats(node))
    }

    fn working_table(&self, id: usize) -> Arc<Vec<RecordBatch>> {
        let tables = self.working_tables.lock().expect("working tables lock");
        tables.get(&id).cloned().unwrap_or_default()
    }
}

/// A streaming operator: one batch in, any number out.
enum Operator<'p> {
    Filter(&'p Expr),
    Projection(&'p [Expr], SchemaRef),
    /// The probe side of a hash join whose build side has already run.
    HashJoin(Box<HashJoin>),
}

impl Operator<'_> {
    fn execute(&mut self, batch: RecordBatch) -> Result<Vec<RecordBatch>> {
        match self {
            Operator::HashJoin(join) => join.probe(&batch),
            other => Ok(vec![other.execute_one(batch)?]),
        }
    }

    /// Rows an operator still holds once its input is exhausted.
    fn finish(&mut self) -> Result<Vec<RecordBatch>> {
        match self {
            Operator::HashJoin(join) => join.finish(),
            _ => Ok(vec![]),
        }
    }

    fn execute_one(&self, batch: RecordBatch) -> Result<RecordBatch> {
        match self {
            Operator::Filter(predicate) => {
                let mask = evaluate(predicate, &batch)?;
                let mask = mask
                    .as_any()
                    .downcast_ref::<arrow::array::BooleanArray>()
                    .ok_or_else(|| ExecError::Execution("filter is not boolean".into()))?;
                Ok(filter_record_batch(&batch, mask)?)
            }
            Operator::Projection(exprs, schema) => {
                let columns = exprs
                    .iter()
                    .map(|e| evaluate(e, &batch))
                    .collect::<Result<Vec<ArrayRef>>>()?;
                let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
                Ok(RecordBatch::try_new_with_options(
                    schema.clone(),
                    columns,
                    &options,
                )?)
            }
            Operator::HashJoin(_) => unreachable!("joins may emit several batches"),
        }
    }
}

/// A streaming operator of a pipeline, with the stats it adds to when profiled.
struct Stage<'p> {
    operator: Operator<'p>,
    stats: Option<Arc<NodeStats>>,
}

/// Pushes a batch through `stages` (in order) into `sink`.
fn push(
    stages: &mut [Stage<'_>],
    batch: RecordBatch,
    sink: &mut Sink<'_>,
    sink_stats: Option<&NodeStats>,
) -> Result<()> {
    let Some((first, rest)) = stages.split_first_mut() else {
        let started = sink_stats.map(|_| Instant::now());
        sink.sink(batch)?;
        if let (Some(stats), Some(started)) = (sink_stats, started) {
            stats.add_time(started.elapsed());
        }
        return Ok(());
    };
    let started = first.stats.as_ref().map(|_| Instant::now());
    let outs = first.operator.execute(batch)?;
    if let (Some(stats), Some(started)) = (&first.stats, started) {
        stats.add(outs.iter().map(|b| b.num_rows()).sum(), started.elapsed());
    }
    for out in outs {
        if out.num_rows() > 0 || rest.is_empty() {
            push(rest, out, sink, sink_stats)?;
        }
    }
    Ok(())
}

/// Drains what operators hold at the end of their input, first to last.
fn finish(
    stages: &mut [Stage<'_>],
    sink: &mut Sink<'_>,
    sink_stats: Option<&NodeStats>,
) -> Result<()> {
    for i in 0..stages.len() {
        let (head, rest) = stages.split_at_mut(i + 1);
        let started = Instant::now();
        let outs = head[i].operator.finish()?;
        if let Some(stats) = &head[i].stats {
            stats.add(outs.iter().map(|b| b.num_rows()).sum(), started.elapsed());
        }
        for out in outs {
            push(rest, out, sink, sink_stats)?;
        }
    }
    Ok(())
}

/// The far end of a pipeline: its stages and sink, and what the source has pushed into them.
struct Output<'o, 'p> {
    stages: &'o mut [Stage<'p>],
    sink: Sink<'p>,
    sink_stats: Option<Arc<NodeStats>>,
    source_stats: Option<Arc<NodeStats>>,
    /// Time spent downstream of the source, which is not the source's.
    downstream: Duration,
}

impl Output<'_, '_> {
    fn emit(&mut self, batch: RecordBatch) -> Result<()> {
        let sink_stats = self.sink_stats.as_deref();
        // Timed only when profiled: this runs for every batch.
        let Some(stats) = &self.source_stats else {
            return push(self.stages, batch, &mut self.sink, sink_stats);
        };
        stats.add(batch.num_rows(), Duration::ZERO);
        let started = Instant::now();
        push(self.stages, batch, &mut self.sink, sink_stats)?;
        self.downstream += started.elapsed();
        Ok(())
    }

    fn is_full(&self) -> bool {
        self.sink.is_full()
    }
}

/// Where a pipeline's batches end up. A breaker's sink finishes before its output flows on.
enum Sink<'p> {
    Collect(Vec<RecordBatch>),
    Aggregate(Box<HashAggregateSink>),
    Sort {
        schema: SchemaRef,
        keys: &'p [SortKey],
        fetch: Option<usize>,
        batches: Vec<RecordBatch>,
    },
    Limit {
        skip: usize,
        fetch: Option<usize>,
        seen: usize,
        batches: Vec<RecordBatch>,
    },
}

impl Sink<'_> {
    fn sink(&mut self, batch: RecordBatch) -> Result<()> {
        match self {
            Sink::Collect(batches) | Sink::Sort { batches, .. } => batches.push(batch),
            Sink::Aggregate(aggregate) => aggregate.sink(&batch)?,
            Sink::Limit {
                skip,
                fetch,
                seen,
                batches,
            } => {
                let start = *seen;
                let end = start + batch.num_rows();
                *seen = end;
                let lo = (*skip).max(start);
                let hi = fetch.map_or(end, |f| end.min(*skip + f));
                if lo < hi {
                    batches.push(batch.slice(lo - start, hi - lo));
                }
            }
        }
        Ok(())
    }

    /// True once the sink needs no more rows.
    fn is_full(&self) -> bool {
        match self {
            Sink::Limit {
                skip, fetch, seen, ..
            } => fetch.is_some_and(|f| *seen >= skip + f),
            _ => false,
        }
    }

    fn finish(self) -> Result<Vec<RecordBatch>> {
        match self {
            Sink::Collect(batches) | Sink::Limit { batches, .. } => Ok(batches),
            Sink::Aggregate(aggregate) => Ok(vec![aggregate.finish()?]),
            Sink::Sort {
                schema,
                keys,
                fetch,
                batches,
            } => sort_batches(&schema, &batches, keys, fetch),
        }
    }
}

/// Runs a physical plan to completion and returns its rows.
pub fn execute(plan: &PhysicalPlan, ctx: &ExecContext) -> Result<Vec<RecordBatch>> {
    let plan = crate::subquery::resolve_subqueries(plan, ctx)?;
    run_pipeline(&plan, Sink::Collect(Vec::new()), None, ctx)
}

/// Runs a physical plan and returns its rows with the plan as run, each operator with the
/// rows it produced and the time it took (EXPLAIN ANALYZE). `ctx` must carry a profile.
pub fn execute_profiled(
    plan: &PhysicalPlan,
    ctx: &ExecContext,
) -> Result<(Vec<RecordBatch>, String)> {
    let profile = ctx
        .profile
        .as_ref()
        .expect("a profiled run needs a profile");
    let plan = crate::subquery::resolve_subqueries(plan, ctx)?;
    let rows = run_pipeline(&plan, Sink::Collect(Vec::new()), None, ctx)?;
    Ok((rows, profile.render(&plan)))
}

/// Runs the pipeline that ends at `sink` (the sink of breaker `sink_node`, if any): the
/// streaming operators down from `plan` to the first source or breaker, whose rows are pushed
/// through them.
fn run_pipeline<'p>(
    plan: &'p PhysicalPlan,
    sink: Sink<'p>,
    sink_node: Option<&'p PhysicalPlan>,
    ctx: &ExecContext,
) -> Result<Vec<RecordBatch>> {
    let mut stages = Vec::new();
    let mut node = plan;
    loop {
        let stats = ctx.stats(node);
        let operator = match node {
            PhysicalPlan::Filter { input, predicate } => {
                node = input;
                Operator::Filter(predicate)
            }
            PhysicalPlan::Projection {
                input,
                exprs,
                schema,
            } => {
                node = input;
                Operator::Projection(exprs, schema.clone())
            }
            PhysicalPlan::HashJoin {
                left,
                right,
                kind,
                left_keys,
                right_keys,
                filter,
                schema,
            } => {
                // The build side is a pipeline of its own that must finish first.
                let build = run_pipeline(right, Sink::Collect(Vec::new()), None, ctx)?;
                let started = Instant::now();
                let join = HashJoin::new(
                    *kind,
                    left_keys,
                    right_keys,
                    filter.as_ref(),
                    schema.clone(),
                    &right.schema(),
                    &build,
                )?;
                if let Some(stats) = &stats {
                    stats.add_time(started.elapsed());
                }
                node = left;
                Operator::HashJoin(Box::new(join))
            }
            _ => break,
        };
        stages.push(Stage { operator, stats });
    }
    stages.reverse();
    let plan_schema = node.schema();
    let started = Instant::now();
    let mut out = Output {
        stages: &mut stages[..],
        sink,
        sink_stats: sink_node.and_then(|n| ctx.stats(n)),
        source_stats: ctx.stats(node),
        downstream: Duration::ZERO,
    };
    // Only a leaf's own time is the whole run less what ran downstream; a breaker's is its
    // sink's, recorded as rows are pushed into it and when it finishes.
    let mut leaf = true;
    match node {
        PhysicalPlan::TableScan {
            table,
            schema,
            columns,
        } => {
            for morsel in table_morsels(&ctx.snapshot, table) {
                if out.is_full() {
                    break;
                }
                let morsel_rows =
                    read_morsel(&ctx.lake, &ctx.runtime, &morsel, schema, columns.as_deref())?;
                for batch in morsel_rows {
                    out.emit(batch)?;
                }
            }
        }
        PhysicalPlan::Window {
            input,
            exprs,
            schema,
        } => {
            let rows = run_pipeline(input, Sink::Collect(Vec::new()), None, ctx)?;
            let computing = Instant::now();
            let windows = crate::window::compute_windows(&input.schema(), &rows, exprs, schema)?;
            if let Some(stats) = &out.source_stats {
                stats.add_time(computing.elapsed());
            }
            leaf = false;
            out.emit(windows)?;
        }
        PhysicalPlan::Union { inputs, .. } => {
            leaf = false;
            for input in inputs {
                for batch in run_pipeline(input, Sink::Collect(Vec::new()), None, ctx)? {
                    let batch =
                        RecordBatch::try_new(plan_schema.clone(), batch.columns().to_vec())?;
                    out.emit(batch)?;
                }
            }
        }
        PhysicalPlan::ParquetScan { table, columns } => {
            'files: for file in &table.files {
                if table.format == FileFormat::Csv {
                    for batch in read_csv_file(&file.path, &table.schema)? {
                        out.emit(batch)?;
                    }
                    continue;
                }
                for row_group in 0..file.row_groups {
                    if out.is_full() {
                        break 'files;
                    }
                    let read = read_parquet_row_group(
                        &file.path,
                        row_group,
                        &table.schema,
                        columns.as_deref(),
                    )?;
                    for batch in read {
                        match columns {
                            Some(columns) => out.emit(widen(&batch, &table.schema, columns)?)?,
                            None => out.emit(batch)?,
                        }
                    }
                }
            }
        }
        PhysicalPlan::Input { schema } => {
            for batch in &ctx.input {
                let batch = RecordBatch::try_new(schema.clone(), batch.columns().to_vec())?;
                out.emit(batch)?;
            }
        }
        PhysicalPlan::Values { schema, rows } => out.emit(values(schema, rows)?)?,
        PhysicalPlan::WorkingTable { id, schema } => {
            for batch in ctx.working_table(*id).iter() {
                let batch = RecordBatch::try_new(schema.clone(), batch.columns().to_vec())?;
                out.emit(batch)?;
            }
        }
        PhysicalPlan::RecursiveCte {
            anchor,
            step,
            id,
            distinct,
        } => {
            leaf = false;
            let mut seen = distinct.then(|| NewRows::new(&plan_schema)).transpose()?;
            let mut added = run_pipeline(anchor, Sink::Collect(Vec::new()), None, ctx)?;
            loop {
                if let Some(seen) = &mut seen {
                    added = seen.keep_new(added)?;
                }
                if added.iter().all(|b| b.num_rows() == 0) {
                    break;
                }
                for batch in &added {
                    let batch =
                        RecordBatch::try_new(plan_schema.clone(), batch.columns().to_vec())?;
                    out.emit(batch)?;
                }
                if out.is_full() {
                    break;
                }
                ctx.working_tables
                    .lock()
                    .expect("working tables lock")
                    .insert(*id, Arc::new(added));
                added = run_pipeline(step, Sink::Collect(Vec::new()), None, ctx)?;
            }
            ctx.working_tables
                .lock()
                .expect("working tables lock")
                .remove(id);
        }
        PhysicalPlan::HashAggregate {
            input,
            group,
            aggregates,
            schema,
        } => {
            leaf = false;
            let aggregate = HashAggregateSink::new(group, aggregates, schema.clone())?;
            let child = Sink::Aggregate(Box::new(aggregate));
            for batch in run_pipeline(input, child, Some(node), ctx)? {
                out.emit(batch)?;
            }
        }
        PhysicalPlan::Sort { input, keys, fetch } => {
            leaf = false;
            let child = Sink::Sort {
                schema: input.schema(),
                keys,
                fetch: *fetch,
                batches: Vec::new(),
            };
            for batch in run_pipeline(input, child, Some(node), ctx)? {
                out.emit(batch)?;
            }
        }
        PhysicalPlan::Limit { input, skip, fetch } => {
            leaf = false;
            let child = Sink::Limit {
                skip: *skip,
                fetch: *fetch,
                seen: 0,
                batches: Vec::new(),
            };
            for batch in run_pipeline(input, child, Some(node), ctx)? {
                out.emit(batch)?;
            }
        }
        PhysicalPlan::Filter { .. }
        | PhysicalPlan::Projection { .. }
        | PhysicalPlan::HashJoin { .. } => {
            unreachable!("streaming operators are folded into the pipeline")
        }
    }
    if leaf && let Some(stats) = &out.source_stats {
        stats.add_time(started.elapsed().saturating_sub(out.downstream));
    }
    let Output {
        stages,
        mut sink,
        sink_stats,
        ..
    } = out;
    finish(stages, &mut sink, sink_stats.as_deref())?;
    let finishing = Instant::now();
    let rows = sink.finish()?;
    if let Some(stats) = sink_stats {
        stats.add_time(finishing.elapsed());
    }
    Ok(rows)
}

/// The rows a recursive CTE with UNION has produced so far, to drop repeats.
struct NewRows {
    converter: arrow::row::RowConverter,
    seen: std::collections::HashSet<Box<[u8]>>,
}

impl NewRows {
    fn new(schema: &SchemaRef) -> Result<NewRows> {
        let fields = schema
            .fields()
            .iter()
            .map(|f| arrow::row::SortField::new(f.data_type().clone()))
            .collect();
        Ok(NewRows {
            converter: arrow::row::RowConverter::new(fields)?,
            seen: Default::default(),
        })
    }

    /// The rows of `batches` not seen before (each once), now seen.
    fn keep_new(&mut self, batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::with_capacity(batches.len());
        for batch in batches {
            let rows = self.converter.convert_columns(batch.columns())?;
            let keep: arrow::array::BooleanArray = (0..batch.num_rows())
                .map(|i| Some(self.seen.insert(rows.row(i).as_ref().into())))
                .collect();
            out.push(arrow::compute::filter_record_batch(&batch, &keep)?);
        }
        Ok(out)
    }
}

/// The rows of a VALUES list as one batch.
fn values(schema: &SchemaRef, rows: &[Vec<Expr>]) -> Result<RecordBatch> {
    let one_row = RecordBatch::try_new_with_options(
        Arc::new(arrow::datatypes::Schema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    let mut columns = Vec::new();
    for (index, field) in schema.fields().iter().enumerate() {
        let cells = rows
            .iter()
            .map(|row| evaluate(&row[index], &one_row))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&dyn arrow::array::Array> = cells.iter().map(|c| c.as_ref()).collect();
        let column = if refs.is_empty() {
            arrow::array::new_empty_array(field.data_type())
        } else {
            concat(&refs)?
        };
        let column = if column.data_type() == field.data_type() {
            column
        } else {
            arrow::compute::cast(&column, field.data_type())?
        };
        columns.push(column);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows.len()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}
