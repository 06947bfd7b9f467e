use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow::array::{RecordBatch, RecordBatchOptions};
use arrow::compute::concat;
use arrow::datatypes::SchemaRef;
use pondra_catalog::Snapshot;
use pondra_planner::{Expr, PhysicalPlan};
use pondra_storage::Lake;

use crate::aggregate::HashAggregateSink;
use crate::control::StatementControl;
use crate::expr::{evaluate, evaluate_all};
use crate::join::HashJoin;
use crate::join_spill::{BuildSink, Built, JoinSpec, SpilledJoin};
use crate::memory::{MemoryPool, Reservation};
use crate::morsel::{Morsels, PagePruning, ScanStatistics, is_scan, read_unit, scan_units};
use crate::ordered::{ANOTHER_WORKER_FAILED, OrderedDelivery};
use crate::profile::{NodeStats, Profile};
use crate::recursive_cte::RecursiveResult;
use crate::repeated_scans::{Repeat, RepeatedScans, ScanRecorder};
use crate::scan::as_schema;
use crate::scan_filter::{Above, ScanFilter, join_keys_over_scan, through_projection};
use crate::shared::SharedAggregates;
use crate::sink::{BatchSink, Collected, Flow, Sink, Split};
use crate::sort::SortSink;
use crate::{ExecError, Result};
use pondra_planner::{TreeNode, WorkingRows};

/// The rows a Gather or an Exchange receives. Apart, so that the pipeline's frame, which deep
/// plans nest, does not grow by what they hold.
#[inline(never)]
fn received_rows(node: &PhysicalPlan, ctx: &ExecContext) -> Result<crate::gather::GatheredParts> {
    match node {
        PhysicalPlan::Gather {
            fragment, parts, ..
        } => crate::gather::gathered(fragment, *parts, ctx),
        PhysicalPlan::Exchange {
            input,
            keys,
            parts,
            id,
        } => crate::exchange::exchanged(input, keys, *parts, *id, ctx),
        _ => unreachable!("only a Gather and an Exchange receive rows"),
    }
}

/// Rows that operators of one plan read in turn.
type SharedRows = Arc<Vec<RecordBatch>>;

/// What a running plan can reach: the lake, the snapshot it reads, and rows handed to it.
pub struct ExecContext {
    pub lake: Lake,
    pub snapshot: Arc<Snapshot>,
    /// The runtime that object-store reads block on.
    pub runtime: tokio::runtime::Handle,
    /// The rows of the plan's `Input` leaf, if it has one.
    pub input: Vec<RecordBatch>,
    /// The rows each running recursive CTE's step reads, by CTE id and whether they are its
    /// result so far (`recurring.name`) rather than its last iteration's rows.
    working_tables: std::sync::Mutex<HashMap<(usize, WorkingRows), SharedRows>>,
    /// Rows and time per operator, for EXPLAIN ANALYZE.
    pub profile: Option<Profile>,
    /// The memory operators that can spill reserve what they hold from.
    pub memory: Arc<MemoryPool>,
    /// What stops the statement (a cancel, a timeout), checked once per batch or morsel.
    pub control: Arc<StatementControl>,
    /// Aggregations the query computes more than once, with their rows once computed.
    shared: SharedAggregates,
    /// Tables the query scans more than once, with the rows kept by the scans that ran.
    repeated: RepeatedScans,
    /// Where a spread plan's Gather gets its rows (ADR 0076); none on a node that runs its
    /// plans alone.
    pub gatherer: Option<Arc<dyn crate::gather::Gatherer>>,
    /// Where a spread plan's part sends and gets the rows of its Exchanges; none outside a
    /// part.
    pub exchanger: Option<Arc<dyn crate::exchange::Exchanger>>,
}

impl ExecContext {
    pub fn new(
        lake: Lake,
        snapshot: Arc<Snapshot>,
        runtime: tokio::runtime::Handle,
        input: Vec<RecordBatch>,
        control: Arc<StatementControl>,
    ) -> ExecContext {
        crate::control::size_thread_pool();
        ExecContext {
            lake,
            snapshot,
            runtime,
            input,
            working_tables: Default::default(),
            profile: None,
            memory: control.memory().clone(),
            control,
            shared: SharedAggregates::default(),
            repeated: RepeatedScans::default(),
            gatherer: None,
            exchanger: None,
        }
    }

    /// A context for one part of a spread plan run by this statement (ADR 0076): the same
    /// lake, snapshot, memory and control, nothing shared with the plan's other scans.
    pub fn for_part(&self) -> ExecContext {
        ExecContext {
            lake: self.lake.clone(),
            snapshot: self.snapshot.clone(),
            runtime: self.runtime.clone(),
            input: Vec::new(),
            working_tables: Default::default(),
            profile: None,
            memory: self.memory.clone(),
            control: self.control.clone(),
            shared: SharedAggregates::default(),
            repeated: RepeatedScans::default(),
            gatherer: None,
            exchanger: None,
        }
    }

    fn stats(&self, node: &PhysicalPlan) -> Option<Arc<NodeStats>> {
        self.profile.as_ref().map(|p| p.stats(node))
    }

    fn working_table(&self, id: usize, which: WorkingRows) -> Arc<Vec<RecordBatch>> {
        let tables = self.working_tables.lock().expect("working tables lock");
        tables.get(&(id, which)).cloned().unwrap_or_default()
    }

    /// Hands the plan the rows an INSERT, UPDATE or DELETE in the statement's WITH returned,
    /// which its `Returned` working table `id` reads (ADR 0074).
    pub fn hand_rows(&self, id: usize, rows: Vec<RecordBatch>) {
        self.set_working_table(id, WorkingRows::Returned, Some(rows));
    }

    fn set_working_table(&self, id: usize, which: WorkingRows, rows: Option<Vec<RecordBatch>>) {
        let mut tables = self.working_tables.lock().expect("working tables lock");
        match rows {
            Some(rows) => tables.insert((id, which), Arc::new(rows)),
            None => tables.remove(&(id, which)),
        };
    }
}

/// A streaming operator: one batch in, any number out.
enum Operator<'p> {
    Filter(&'p Expr),
    /// A filter the scan below has applied while reading.
    Applied,
    Projection(&'p [Expr], SchemaRef),
    /// The probe side of a hash join whose build side has already run.
    HashJoin(Arc<HashJoin>),
    /// The probe side of a hash join whose build side spilled to disk.
    SpilledJoin(Arc<SpilledJoin>),
    Unnest(&'p Expr, SchemaRef),
}

impl Operator<'_> {
    /// Runs the operator on one batch, handing each output batch to `emit` until it says no
    /// more are needed.
    fn execute(
        &self,
        batch: RecordBatch,
        emit: &mut dyn FnMut(RecordBatch) -> Result<Flow>,
    ) -> Result<Flow> {
        let outs = match self {
            Operator::HashJoin(join) => return join.probe(&batch, emit),
            Operator::Unnest(array, schema) => {
                return crate::unnest::unnest(&batch, array, schema, emit);
            }
            Operator::SpilledJoin(join) => join.probe(&batch)?,
            other => vec![other.execute_one(batch)?],
        };
        for out in outs {
            if emit(out)? == Flow::Done {
                return Ok(Flow::Done);
            }
        }
        Ok(Flow::More)
    }

    /// Rows an operator still holds once its input is exhausted, each handed to `emit`.
    fn finish_into(&self, emit: &mut dyn FnMut(RecordBatch) -> Result<()>) -> Result<()> {
        match self {
            Operator::HashJoin(join) => join.finish()?.into_iter().try_for_each(emit),
            Operator::SpilledJoin(join) => join.finish_into(emit),
            _ => Ok(()),
        }
    }

    fn execute_one(&self, batch: RecordBatch) -> Result<RecordBatch> {
        match self {
            Operator::Filter(predicate) => crate::select::filter_where(predicate, &batch),
            Operator::Applied => Ok(batch),
            Operator::Projection(exprs, schema) => {
                let columns = evaluate_all(exprs, &batch)?;
                let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
                Ok(RecordBatch::try_new_with_options(
                    schema.clone(),
                    columns,
                    &options,
                )?)
            }
            Operator::HashJoin(_) | Operator::SpilledJoin(_) | Operator::Unnest(..) => {
                unreachable!("joins and unnests may emit several batches")
            }
        }
    }
}

/// A streaming operator of a pipeline, with the stats it adds to when profiled.
struct Stage<'p> {
    operator: Operator<'p>,
    stats: Option<Arc<NodeStats>>,
}

/// Pushes a batch through `stages` (in order) into `sink`; `Done` once the sink needs no more
/// rows. Every batch checks first whether the statement must stop.
fn push(
    stages: &[Stage<'_>],
    batch: RecordBatch,
    sink: &mut dyn BatchSink,
    sink_stats: Option<&NodeStats>,
) -> Result<Flow> {
    crate::control::check_current()?;
    let Some((first, rest)) = stages.split_first() else {
        let started = sink_stats.map(|_| Instant::now());
        sink.sink(batch)?;
        if let (Some(stats), Some(started)) = (sink_stats, started) {
            stats.add_time(started.elapsed());
        }
        return Ok(if sink.is_full() {
            Flow::Done
        } else {
            Flow::More
        });
    };
    let profiled = first.stats.is_some();
    let started = profiled.then(Instant::now);
    let (mut rows, mut downstream) = (0, Duration::ZERO);
    let flow = first.operator.execute(batch, &mut |out| {
        rows += out.num_rows();
        if out.num_rows() == 0 && !rest.is_empty() {
            return Ok(Flow::More);
        }
        let pushing = profiled.then(Instant::now);
        let flow = push(rest, out, sink, sink_stats);
        if let Some(pushing) = pushing {
            downstream += pushing.elapsed();
        }
        flow
    })?;
    if let (Some(stats), Some(started)) = (&first.stats, started) {
        stats.add(rows, started.elapsed().saturating_sub(downstream));
    }
    Ok(flow)
}

/// Drains what operators hold at the end of their input, first to last.
fn finish(
    stages: &[Stage<'_>],
    sink: &mut dyn BatchSink,
    sink_stats: Option<&NodeStats>,
) -> Result<()> {
    for i in 0..stages.len() {
        let (head, rest) = stages.split_at(i + 1);
        let started = Instant::now();
        let (mut rows, mut downstream) = (0, Duration::ZERO);
        head[i].operator.finish_into(&mut |out| {
            rows += out.num_rows();
            let pushing = Instant::now();
            push(rest, out, sink, sink_stats)?;
            downstream += pushing.elapsed();
            Ok(())
        })?;
        if let Some(stats) = &head[i].stats {
            stats.add(rows, started.elapsed().saturating_sub(downstream));
            if let Operator::SpilledJoin(join) = &head[i].operator {
                stats.add_spilled(join.spilled_bytes());
            }
        }
    }
    Ok(())
}

/// The far end of a pipeline: its stages and sink, and what the source has pushed into them.
struct Output<'o, 'p> {
    stages: &'o [Stage<'p>],
    sink: Sink<'p>,
    sink_stats: Option<Arc<NodeStats>>,
    source_stats: Option<Arc<NodeStats>>,
    /// Time spent downstream of the source, which is not the source's.
    downstream: Duration,
}

impl Output<'_, '_> {
    fn emit(&mut self, batch: RecordBatch) -> Result<Flow> {
        let sink_stats = self.sink_stats.as_deref();
        // Timed only when profiled: this runs for every batch.
        let Some(stats) = &self.source_stats else {
            return push(self.stages, batch, &mut self.sink, sink_stats);
        };
        stats.add(batch.num_rows(), Duration::ZERO);
        let started = Instant::now();
        let flow = push(self.stages, batch, &mut self.sink, sink_stats)?;
        self.downstream += started.elapsed();
        Ok(flow)
    }

    /// Emits each batch until the sink needs no more.
    fn emit_all(&mut self, batches: impl IntoIterator<Item = RecordBatch>) -> Result<Flow> {
        for batch in batches {
            if self.emit(batch)? == Flow::Done {
                return Ok(Flow::Done);
            }
        }
        Ok(Flow::More)
    }

    fn is_full(&self) -> bool {
        self.sink.is_full()
    }
}

/// A sink collecting rows within the statement's memory limit.
pub(crate) fn collect<'p>(ctx: &ExecContext) -> Sink<'p> {
    Sink::Collect(Collected::within(&ctx.memory))
}

/// Runs a physical plan to completion and returns its rows.
pub fn execute(plan: &PhysicalPlan, ctx: &ExecContext) -> Result<Vec<RecordBatch>> {
    ctx.control.within_threads(|| {
        let plan = crate::subquery::resolve_subqueries(plan, ctx)?;
        run_pipeline(&plan, collect(ctx), None, ctx)
    })
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
    ctx.control.within_threads(|| {
        let plan = crate::subquery::resolve_subqueries(plan, ctx)?;
        // The subqueries' nodes were profiled as they ran; only this plan's nodes are shown.
        profile.clear();
        let rows = run_pipeline(&plan, collect(ctx), None, ctx)?;
        Ok((rows, profile.render(&plan)))
    })
}

/// Runs the pipeline that ends at `sink` (the sink of breaker `sink_node`, if any): the
/// streaming operators down from `plan` to the first source or breaker, whose rows are pushed
/// through them.
pub(crate) fn run_pipeline<'p>(
    plan: &'p PhysicalPlan,
    sink: Sink<'p>,
    sink_node: Option<&'p PhysicalPlan>,
    ctx: &ExecContext,
) -> Result<Vec<RecordBatch>> {
    let sink = run_pipeline_into(plan, sink, sink_node, ctx)?;
    let finishing = Instant::now();
    let rows = sink.finish()?;
    if let Some(stats) = sink_node.and_then(|n| ctx.stats(n)) {
        stats.add_time(finishing.elapsed());
    }
    Ok(rows)
}

/// `run_pipeline` up to the sink's finish: returns the sink with every row pushed into it.
fn run_pipeline_into<'p>(
    plan: &'p PhysicalPlan,
    sink: Sink<'p>,
    sink_node: Option<&'p PhysicalPlan>,
    ctx: &ExecContext,
) -> Result<Sink<'p>> {
    let mut stages = Vec::new();
    // What in-memory build sides hold, given back once the pipeline is done.
    let mut held = Vec::new();
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
            PhysicalPlan::Unnest {
                input,
                array,
                schema,
            } => {
                node = input;
                Operator::Unnest(array, schema.clone())
            }
            PhysicalPlan::HashJoin {
                left,
                right,
                kind,
                left_keys,
                right_keys,
                filter,
                schema,
                ..
            } => {
                // The build side is a pipeline of its own that must finish first.
                let build = BuildSink::new(*kind, right_keys, &ctx.memory)?;
                let built = match run_pipeline_into(right, Sink::Build(Box::new(build)), None, ctx)?
                {
                    Sink::Build(build) => build.finish()?,
                    _ => unreachable!("a build side's sink stays one"),
                };
                let started = Instant::now();
                let spec = JoinSpec {
                    kind: *kind,
                    left_keys: left_keys.clone(),
                    right_keys: right_keys.clone(),
                    filter: filter.clone(),
                    schema: schema.clone(),
                    build_schema: right.schema(),
                };
                let operator = join_operator(spec, built, &mut held, ctx)?;
                if let Some(stats) = &stats {
                    stats.add_time(started.elapsed());
                }
                node = left;
                operator
            }
            _ => break,
        };
        stages.push(Stage { operator, stats });
    }
    stages.reverse();
    // A scan's filter (physical planning gave it the one right above it) is applied as its
    // Parquet files are read: the columns it reads first, the others only for the rows it
    // keeps. Hash joins above a scan drop, the same way, the rows whose keys their build
    // sides lack (`scan_filter`).
    // A filter right above an aggregation (HAVING) is applied to each part of its output as
    // the merge finishes it, so that the groups it drops are never all held at once.
    let scan = is_scan(node);
    let mut filtered = node.scan_filter();
    if let (PhysicalPlan::HashAggregate { .. }, Some(first)) = (node, stages.first_mut())
        && let Operator::Filter(predicate) = first.operator
    {
        filtered = Some(predicate);
        first.operator = Operator::Applied;
    }
    // Row groups and files whose statistics rule out the scan's filter, or the keys of the
    // joins it feeds, are not read (`prune`).
    let pruning = filtered.filter(|_| scan);
    let statistics = ScanStatistics::of(node, ctx);
    let scan_filter = match scan {
        true => {
            let above = stages.iter().map(|stage| match &stage.operator {
                Operator::Filter(_) | Operator::Applied => Above::RowFilter,
                Operator::Projection(exprs, _) => Above::Projection(exprs),
                Operator::HashJoin(join) => Above::Join(join),
                Operator::SpilledJoin(join) => match join.key_filter() {
                    Some(keys) => Above::Join(keys),
                    None => Above::Other,
                },
                Operator::Unnest(..) => Above::Other,
            });
            let joins = join_keys_over_scan(above, node.schema().fields().len());
            ScanFilter::new(filtered, joins, node, statistics.as_ref())
        }
        false => None,
    };
    let scan_filter = scan_filter.as_ref();
    let plan_schema = node.schema();
    let started = Instant::now();
    let mut out = Output {
        stages: &stages[..],
        sink,
        sink_stats: sink_node.and_then(|n| ctx.stats(n)),
        source_stats: ctx.stats(node),
        downstream: Duration::ZERO,
    };
    // Only a leaf's own time is the whole run less what ran downstream; a breaker's is its
    // sink's, recorded as rows are pushed into it and when it finishes.
    let mut leaf = true;
    match node {
        PhysicalPlan::TableScan { .. } | PhysicalPlan::ParquetScan { .. } => {
            let repeat = match scan_filter {
                Some(filter) => ctx.repeated.repeat(node, filter)?,
                None => Repeat::Once,
            };
            let read = match &repeat {
                Repeat::Keep { scan, .. } => scan,
                _ => node,
            };
            let dictionaries = match (&repeat, &out.sink) {
                (Repeat::Once, Sink::Aggregate(aggregate)) => {
                    let read = (node, statistics.as_ref());
                    dictionary_key_columns(read, out.stages, filtered, aggregate)
                }
                _ => Vec::new(),
            };
            let schema = node.schema();
            let may_hold = |range: &dyn Fn(usize) -> Option<(i64, i64)>| {
                pruning.is_none_or(|p| crate::prune::may_match(p, &schema, range))
                    && scan_filter.is_none_or(|f| f.joins_may_match(&schema, range))
            };
            let page_columns = match &repeat {
                Repeat::Once | Repeat::Keep { .. } => {
                    crate::prune::ranged_columns(pruning, scan_filter, &schema)
                }
                Repeat::Reuse { .. } => Vec::new(),
            };
            let pages = (!page_columns.is_empty()).then(|| PagePruning {
                columns: page_columns,
                may_hold: &may_hold,
                skipped: AtomicUsize::new(0),
            });
            let morsels = match &repeat {
                Repeat::Reuse { kept, .. } => {
                    if let Some(stats) = &out.source_stats {
                        stats.set_reused();
                    }
                    Morsels::Kept(kept)
                }
                _ => {
                    let (units, skipped) =
                        scan_units(read, &may_hold, ctx)?.expect("a scan has morsels");
                    if let Some(stats) = &out.source_stats {
                        stats.add_skipped(skipped);
                    }
                    Morsels::Read(units)
                }
            };
            ctx.control.add_morsels(morsels.len());
            let recorder = match &repeat {
                Repeat::Keep { .. } => Some(ScanRecorder::new(morsels.len(), &ctx.memory)),
                _ => None,
            };
            let source = Source {
                morsels: &morsels,
                node: read,
                filter: scan_filter,
                recorder: recorder.as_ref(),
                pages: pages.as_ref(),
                dictionaries: &dictionaries,
                schema: match &repeat {
                    Repeat::Once => None,
                    Repeat::Keep { scan, .. } => {
                        (scan.schema() != plan_schema).then_some(&plan_schema)
                    }
                    Repeat::Reuse { .. } => Some(&plan_schema),
                },
                refilter: match &repeat {
                    Repeat::Reuse { refilter, .. } => refilter.as_ref(),
                    _ => None,
                },
            };
            let workers = rayon::current_num_threads().min(morsels.len());
            match out.sink.split(workers)? {
                Some(mut split) if workers > 1 => {
                    leaf = false;
                    if let Morsels::Read(units) = &morsels {
                        aggregate_runs(&mut split, out.stages, units, plan_schema.fields().len())?;
                    }
                    run_parallel(&source, &mut out, split, ctx)?;
                }
                _ => {
                    for morsel in 0..morsels.len() {
                        ctx.control.check()?;
                        if out.is_full() || out.emit_all(source.read(morsel, ctx)?)? == Flow::Done {
                            break;
                        }
                    }
                }
            }
            if let (Some(stats), Some(pages)) = (&out.source_stats, &pages) {
                stats.add_skipped_pages(pages.skipped.load(Ordering::Relaxed));
            }
            if let (Repeat::Keep { group, scan }, Some(recorder), Some(filter)) =
                (repeat, recorder, scan_filter)
                && let Some(rows) = recorder.finish()
            {
                let joins: Vec<&Arc<HashJoin>> = stages
                    .iter()
                    .filter_map(|stage| match &stage.operator {
                        Operator::HashJoin(join) => Some(join),
                        _ => None,
                    })
                    .collect();
                ctx.repeated.keep(group, &scan, filter, &joins, rows);
            }
        }
        PhysicalPlan::Window {
            input,
            exprs,
            schema,
        } => {
            let rows = run_pipeline(input, collect(ctx), None, ctx)?;
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
                let rows = run_pipeline(input, collect(ctx), None, ctx)?;
                let rows = rows
                    .iter()
                    .map(|batch| as_schema(batch, &plan_schema))
                    .collect::<Result<Vec<_>>>()?;
                if out.emit_all(rows)? == Flow::Done {
                    break;
                }
            }
        }
        // Rows other parts of a spread plan computed: gathered, or exchanged with this part.
        PhysicalPlan::Gather { .. } | PhysicalPlan::Exchange { .. } => {
            leaf = false;
            for batch in received_rows(node, ctx)?.into_batches()? {
                if out.emit(batch?)? == Flow::Done {
                    break;
                }
            }
        }
        PhysicalPlan::Input { schema } => {
            for batch in &ctx.input {
                let batch = RecordBatch::try_new(schema.clone(), batch.columns().to_vec())?;
                if out.emit(batch)? == Flow::Done {
                    break;
                }
            }
        }
        PhysicalPlan::Values { schema, rows } => {
            out.emit(values(schema, rows)?)?;
        }
        PhysicalPlan::ChangeRecords {
            table,
            from,
            to,
            schema,
        } => {
            let rows = crate::change_feed::change_record_rows(table, (*from, *to), schema, ctx)?;
            for batch in rows {
                if out.emit(batch)? == Flow::Done {
                    break;
                }
            }
        }
        PhysicalPlan::WorkingTable { id, schema, rows } => {
            for batch in ctx.working_table(*id, *rows).iter() {
                let batch = RecordBatch::try_new(schema.clone(), batch.columns().to_vec())?;
                if out.emit(batch)? == Flow::Done {
                    break;
                }
            }
        }
        PhysicalPlan::RecursiveCte {
            anchor,
            step,
            id,
            distinct,
            key,
            finalize,
        } => {
            leaf = false;
            let reads_so_far = step.exists(&mut |n| {
                matches!(n, PhysicalPlan::WorkingTable { id: i, rows: WorkingRows::SoFar, .. } if i == id)
            });
            let finalized = finalize.as_ref().map(|f| f.schema());
            let (distinct, key) = (*distinct, key.as_deref());
            let mut result =
                RecursiveResult::new(&anchor.schema(), distinct, key, reads_so_far, finalized)?;
            // A keyed CTE with aggregates finalizes all its rows after each run.
            let mut finalize_rows = |candidates: Vec<RecordBatch>| -> Result<Vec<RecordBatch>> {
                let Some(finalize) = finalize else {
                    return Ok(Vec::new());
                };
                ctx.set_working_table(*id, WorkingRows::Candidates, Some(candidates));
                run_pipeline(finalize, collect(ctx), None, ctx)
            };
            let mut rows = run_pipeline(anchor, collect(ctx), None, ctx)?;
            let candidate_schema = anchor.schema();
            let ended = loop {
                ctx.control.check()?;
                let rows_as_cte = rows
                    .iter()
                    .map(|b| RecordBatch::try_new(candidate_schema.clone(), b.columns().to_vec()))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                let applied = result.apply(rows_as_cte, &mut finalize_rows)?;
                // What the recursion keeps grows with every run: bounded by the memory limit.
                ctx.control.check_allocation(result.held_bytes())?;
                if out.emit_all(applied.emit)? == Flow::Done {
                    break false;
                }
                if applied.working.is_empty() {
                    break true;
                }
                ctx.set_working_table(*id, WorkingRows::Last, Some(applied.working));
                if reads_so_far {
                    ctx.set_working_table(*id, WorkingRows::SoFar, Some(result.so_far()?));
                }
                rows = run_pipeline(step, collect(ctx), None, ctx)?;
            };
            for which in [
                WorkingRows::Last,
                WorkingRows::SoFar,
                WorkingRows::Candidates,
            ] {
                ctx.set_working_table(*id, which, None);
            }
            if ended {
                let rows = result.finish()?;
                let rows = rows
                    .iter()
                    .map(|b| RecordBatch::try_new(plan_schema.clone(), b.columns().to_vec()))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                out.emit_all(rows)?;
            }
        }
        PhysicalPlan::HashAggregate {
            input,
            group,
            aggregates,
            schema,
            shared,
        } => {
            leaf = false;
            // A HAVING applied inside makes its rows differ from another occurrence's.
            let shared = shared.filter(|_| filtered.is_none());
            let shared_rows = shared.and_then(|number| ctx.shared.get(number));
            let rows = match shared_rows {
                Some(rows) => rows,
                None => {
                    let aggregate = HashAggregateSink::new(group, aggregates, schema.clone())?
                        .with_output_filter(filtered.cloned())
                        .with_memory(&ctx.memory);
                    let child = Sink::Aggregate(Box::new(aggregate));
                    let rows = Arc::new(run_pipeline(input, child, Some(node), ctx)?);
                    if let Some(number) = shared {
                        ctx.shared.put(number, rows.clone());
                    }
                    rows
                }
            };
            out.emit_all(rows.iter().cloned())?;
        }
        PhysicalPlan::Sort { input, keys, fetch } => {
            leaf = false;
            let child = Sink::Sort(Box::new(SortSink::new(
                input.schema(),
                keys,
                *fetch,
                &ctx.memory,
            )));
            out.emit_all(run_pipeline(input, child, Some(node), ctx)?)?;
        }
        PhysicalPlan::Limit { input, skip, fetch } => {
            leaf = false;
            let child = Sink::Limit {
                skip: *skip,
                fetch: *fetch,
                seen: 0,
                batches: Vec::new(),
            };
            out.emit_all(run_pipeline(input, child, Some(node), ctx)?)?;
        }
        PhysicalPlan::Filter { .. }
        | PhysicalPlan::Projection { .. }
        | PhysicalPlan::Unnest { .. }
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
    if let Some(stats) = &sink_stats {
        stats.add_runs(sink.run_groups());
        stats.add_spilled(sink.spilled_bytes());
    }
    drop(held);
    Ok(sink)
}

/// The probe side of a join whose build side ran: a hash table in memory (whose reservation
/// joins `held`), or partitions on disk (`join_spill`).
fn join_operator<'p>(
    spec: JoinSpec,
    built: Built,
    held: &mut Vec<Reservation>,
    ctx: &ExecContext,
) -> Result<Operator<'p>> {
    Ok(match built {
        Built::InMemory {
            batches,
            reservation,
        } => {
            held.push(reservation);
            Operator::HashJoin(Arc::new(spec.build(&batches)?))
        }
        Built::Spilled {
            encoder,
            partitions,
            bytes,
            key_rows,
        } => {
            let join = SpilledJoin::new(spec, encoder, (partitions, bytes), key_rows, &ctx.memory)?;
            Operator::SpilledJoin(Arc::new(join))
        }
    })
}

/// Runs the pipeline with the scan's morsels spread over the thread pool: each worker takes
/// the next morsel, pushes its rows through the shared stages into a sink of its own, and
/// takes another until none is left. What the workers' sinks hold then reaches `out`'s sink:
/// collected rows in morsel order (so a parallel scan returns what a sequential one does),
/// partial aggregates merged.
fn run_parallel<'p>(
    source: &Source<'_, '_>,
    out: &mut Output<'_, 'p>,
    split: Split<'p>,
    ctx: &ExecContext,
) -> Result<()> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let errors: Mutex<Vec<ExecError>> = Mutex::new(Vec::new());
    let workers = rayon::current_num_threads().min(source.morsels.len());
    let (mut partials, in_order) = match split {
        Split::InOrder => ((0..workers).map(|_| None).collect::<Vec<_>>(), true),
        Split::Partial(partials) => (partials.into_iter().map(Some).collect(), false),
    };
    let (stages, sink_stats) = (out.stages, out.sink_stats.as_deref());
    let source_stats = out.source_stats.as_deref();
    // Morsels' rows reach an in-order sink in morsel order, each as soon as its morsel's turn
    // has come, so that a sort counts them against the memory limit (and spills) as they come.
    let delivery = OrderedDelivery::new(
        &mut out.sink,
        source.morsels.len(),
        ctx.memory.clone(),
        &failed,
    );
    rayon::scope(|scope| {
        for local in partials.iter_mut() {
            let (next, failed, errors, delivery) = (&next, &failed, &errors, &delivery);
            scope.spawn(move |_| {
                let _entered = ctx.control.enter();
                while !failed.load(Ordering::Relaxed) {
                    let unit = next.fetch_add(1, Ordering::Relaxed);
                    if unit >= source.morsels.len() {
                        break;
                    }
                    let mut run = || -> Result<()> {
                        let started = source_stats.map(|_| Instant::now());
                        let batches = source.read(unit, ctx)?;
                        if let (Some(stats), Some(started)) = (source_stats, started) {
                            stats.add(
                                batches.iter().map(|b| b.num_rows()).sum(),
                                started.elapsed(),
                            );
                        }
                        match local {
                            Some(partial) => {
                                for batch in batches {
                                    push(stages, batch, partial, sink_stats)?;
                                }
                                partial.end_of_morsel()
                            }
                            None => {
                                let mut output = delivery.output(unit);
                                for batch in batches {
                                    push(stages, batch, &mut output, sink_stats)?;
                                }
                                output.finish()
                            }
                        }
                    };
                    if let Err(error) = run() {
                        failed.store(true, Ordering::Relaxed);
                        errors.lock().unwrap_or_else(|e| e.into_inner()).push(error);
                    }
                }
            });
        }
    });
    drop(delivery);
    let errors = errors.into_inner().unwrap_or_else(|e| e.into_inner());
    // A worker that stopped because another failed reports the other's error.
    let first = errors
        .iter()
        .position(|e| !e.to_string().starts_with(ANOTHER_WORKER_FAILED))
        .unwrap_or(0);
    if let Some(error) = errors.into_iter().nth(first) {
        return Err(error);
    }
    if !in_order {
        for partial in partials.into_iter().flatten() {
            out.sink.absorb(partial)?;
        }
    }
    Ok(())
}

/// Where a scan's pipeline gets its rows: the scan's morsels, read through its filter (and
/// kept for a later scan when `recorder` is set) or kept by an earlier scan.
struct Source<'s, 'p> {
    morsels: &'s Morsels<'s>,
    /// The scan to read.
    node: &'s PhysicalPlan,
    filter: Option<&'s ScanFilter<'p>>,
    recorder: Option<&'s ScanRecorder>,
    /// Skips the pages of row groups that the scan's filter or joins rule out.
    pages: Option<&'s PagePruning<'s>>,
    /// The string columns read as dictionaries (ADR 0037).
    dictionaries: &'s [usize],
    /// The schema of the planned scan, when the rows read or kept have more columns.
    schema: Option<&'s SchemaRef>,
    /// The scan's predicate, when it takes the rows an unfiltered scan kept.
    refilter: Option<&'s Expr>,
}

impl Source<'_, '_> {
    fn read(&self, morsel: usize, ctx: &ExecContext) -> Result<Vec<RecordBatch>> {
        let batches = match self.morsels {
            Morsels::Read(units) => read_unit(
                &units[morsel],
                self.node,
                (self.filter, self.pages),
                self.dictionaries,
                ctx,
            )?,
            Morsels::Kept(kept) => kept.morsels[morsel].clone(),
        };
        ctx.control.morsel_read();
        if let Some(recorder) = self.recorder {
            recorder.record(morsel, &batches);
        }
        let batches = match self.schema {
            Some(schema) => batches
                .iter()
                .map(|b| as_schema(b, schema))
                .collect::<Result<Vec<_>>>()?,
            None => batches,
        };
        match self.refilter {
            Some(predicate) => batches
                .iter()
                .map(|b| crate::select::filter_where(predicate, b))
                .collect(),
            None => Ok(batches),
        }
    }
}

/// A string column of a Parquet scan whose sampled rows held at most this many distinct values
/// is read as a dictionary when it is only a group key.
const DICTIONARY_KEY_DISTINCT: u32 = 256;

/// The string columns of scan `node` that pass up as dictionaries to `aggregate` (ADR 0037):
/// group keys of few distinct values that only filters (`stages` and the one `applied` in the
/// scan) come between, and that nothing but the grouping reads.
fn dictionary_key_columns(
    (node, statistics): (&PhysicalPlan, Option<&ScanStatistics>),
    stages: &[Stage<'_>],
    applied: Option<&Expr>,
    aggregate: &HashAggregateSink,
) -> Vec<usize> {
    let Some(statistics) = statistics.filter(|s| s.parquet) else {
        return Vec::new();
    };
    let mut read_by_filters: Vec<usize> = applied.map(Expr::column_indices).unwrap_or_default();
    for stage in stages {
        match &stage.operator {
            Operator::Filter(predicate) => read_by_filters.extend(predicate.column_indices()),
            Operator::Applied => {}
            _ => return Vec::new(),
        }
    }
    let few_distinct = |column: usize| {
        let sample = statistics.sample(column);
        sample.is_some_and(|sample| sample.distinct <= DICTIONARY_KEY_DISTINCT)
    };
    let schema = node.schema();
    aggregate
        .columns_read_only_as_keys()
        .into_iter()
        .filter(|&column| {
            schema.field(column).data_type() == &arrow::datatypes::DataType::Utf8
                && few_distinct(column)
        })
        .collect()
}

/// Lets each partial aggregation of `split` take its morsels' group keys as runs (ADR 0029)
/// when its one key is a column of the scan, passed up unchanged by `stages`, whose ranges
/// in the `units` overlap at most at their ends.
fn aggregate_runs(
    split: &mut Split<'_>,
    stages: &[Stage<'_>],
    units: &[crate::morsel::ScanUnit<'_>],
    width: usize,
) -> Result<()> {
    let Split::Partial(partials) = split else {
        return Ok(());
    };
    for partial in partials {
        let Sink::Aggregate(aggregate) = partial else {
            continue;
        };
        let Some(column) = aggregate.single_key_column() else {
            continue;
        };
        // For each column of the rows at this point, the scan column it is, if it is one.
        let mut scan_columns: Vec<Option<usize>> = (0..width).map(Some).collect();
        for stage in stages {
            match &stage.operator {
                Operator::Filter(_) | Operator::Applied => {}
                Operator::Projection(exprs, _) => {
                    scan_columns = through_projection(exprs, &scan_columns);
                }
                Operator::HashJoin(_) | Operator::SpilledJoin(_) | Operator::Unnest(..) => {
                    return Ok(());
                }
            }
        }
        if let Some(Some(scan_column)) = scan_columns.get(column)
            && crate::morsel::units_clustered_on(units, *scan_column)
        {
            aggregate.aggregate_runs()?;
        }
    }
    Ok(())
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
