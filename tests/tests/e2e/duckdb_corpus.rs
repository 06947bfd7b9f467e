//! DuckDB's own sqllogictest files (`duckdb-sqllogictest/`, a selection of its `test/sql/`)
//! run against Pondra, each file against a fresh lake in one session, its records in order.
//! Files with a `require` line (an extension or build setting), an `include` of a template
//! outside the copy or an `unzip` of a DuckDB database are skipped and counted as skipped;
//! `PRAGMA` records are not counted, and not run but for `default_null_order`, run as `SET`.
//! Each session starts with DuckDB's defaults where they differ from Pondra's (NULLs sort last
//! in both directions). A record passes when its outcome is the
//! file's: a statement succeeds or fails as expected (whatever the error message, though the
//! report counts the messages that match), a query answers the expected rows. The dialect is
//! read by `pondra_tests::duckdb_slt`.
//!
//! In CI, the `.test` files (those DuckDB's own CI runs; `.test_slow` ones are four times as
//! long) and no folder may pass fewer of their records than its floor in `PASSING`. The
//! report, over every file (`cargo test --release -p pondra-tests --test e2e duckdb_corpus:: --
//! --ignored --nocapture`), prints the share per folder, the largest groups of failures, and
//! new floors to paste.

use std::collections::{BTreeMap, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use pondra_cluster::{Node, NodeOptions, STATEMENT_STACK_BYTES, Session};
use pondra_tests::duckdb_slt::{
    Answer, Expect, Labels, Parsed, Query, Step, cell_text, check, message_matches, parse_file,
    value_kind,
};
use pondra_tests::{SqlError, run_sql_in};

const CORPUS: &str = "duckdb-sqllogictest";

/// Each statement's timeout: an endless query fails its record instead of stopping the run.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Pondra's error for a statement stopped by its timeout.
const TIMED_OUT: &str = "canceling statement due to statement timeout";

/// Records of the `.test` files each folder passes; no folder may pass fewer. Of their
/// 21,382 records, 17,612 pass (82.4%).
const PASSING: &[(&str, usize)] = &[
    ("aggregate", 2277),
    ("cast", 894),
    ("cte", 624),
    ("filter", 221),
    ("function/date", 507),
    ("function/generic", 329),
    ("function/interval", 126),
    ("function/list", 4118),
    ("function/numeric", 424),
    ("function/operator", 120),
    ("function/string", 1650),
    ("function/timestamp", 468),
    ("join", 1777),
    ("json", 3),
    ("order", 275),
    ("projection", 244),
    ("select", 82),
    ("setops", 245),
    ("subquery", 766),
    ("types/list", 612),
    ("types/struct", 726),
    ("window", 1124),
];

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(CORPUS)
}

/// `.test` and `.test_slow` files, sorted.
fn corpus_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path
                .extension()
                .is_some_and(|e| e == "test" || e == "test_slow")
            {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The folder a file's records count in: its first folder, or its first two under
/// `function/` and `types/`, whose subfolders are unrelated topics.
fn folder_of(relative: &Path) -> String {
    let parts: Vec<String> = relative
        .parent()
        .into_iter()
        .flat_map(|p| p.components())
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match parts.as_slice() {
        [] => ".".into(),
        [first, second, ..] if first == "function" || first == "types" => {
            format!("{first}/{second}")
        }
        [first, ..] => first.clone(),
    }
}

/// A file's lake and the session its statements share, as one client's connection.
struct Lake {
    runtime: Arc<tokio::runtime::Runtime>,
    dir: tempfile::TempDir,
    node: Arc<Node>,
    session: Arc<Session>,
}

impl Lake {
    fn open(runtime: &Arc<tokio::runtime::Runtime>) -> Lake {
        let dir = tempfile::tempdir().unwrap();
        let node = Self::open_node(runtime, dir.path());
        let lake = Lake {
            runtime: runtime.clone(),
            dir,
            node,
            session: Session::new(Some(STATEMENT_TIMEOUT)),
        };
        lake.as_duckdb_session();
        lake
    }

    /// The files expect DuckDB's session defaults where Pondra's (PostgreSQL's) differ:
    /// NULLs last in descending order too.
    fn as_duckdb_session(&self) {
        self.run("SET default_null_order = 'nulls_last'")
            .expect("the session takes DuckDB's NULL order");
    }

    fn open_node(runtime: &tokio::runtime::Runtime, dir: &Path) -> Arc<Node> {
        runtime
            .block_on(Node::open_folder(dir, Self::options()))
            .unwrap()
    }

    /// The node's options: a quarter of the default memory limit. An allocation is checked
    /// against what the pool holds, and the workers of one statement make theirs at once, so
    /// under the whole default a few files' quadratic statements (an IN over 100,000 values
    /// for each of 100,000 rows) ran the machine out of memory instead of failing with
    /// Pondra's error.
    fn options() -> NodeOptions {
        NodeOptions {
            memory: pondra_cluster::MemoryPool::new(pondra_cluster::default_memory_limit() / 4),
            ..NodeOptions::default()
        }
    }

    /// `restart`: the lake closed and opened again, in a new session.
    fn restart(&mut self) {
        self.runtime.block_on(self.node.close()).unwrap();
        self.node = Self::open_node(&self.runtime, self.dir.path());
        self.session = Session::new(Some(STATEMENT_TIMEOUT));
        self.as_duckdb_session();
    }

    fn run(&self, sql: &str) -> Result<Option<(SchemaRef, Vec<RecordBatch>)>, SqlError> {
        run_sql_in(&self.node, &self.runtime, &self.session, sql)
    }

    fn close(self) {
        self.runtime.block_on(self.node.close()).unwrap();
    }
}

/// Why a record did not pass: the group it is counted in, what the group is about where it
/// names something (`function X does not exist`: the function), and what happened.
struct Failed {
    group: String,
    subject: Option<String>,
    detail: String,
}

impl Failed {
    fn new(group: impl Into<String>, detail: impl Into<String>) -> Failed {
        Failed {
            group: group.into(),
            subject: None,
            detail: detail.into(),
        }
    }

    /// A failure by Pondra's error message.
    fn error(message: String) -> Failed {
        let (group, subject) = error_group(&message);
        Failed {
            group,
            subject,
            detail: message,
        }
    }
}

/// A record's line in its file and why it did not pass.
struct Failure {
    line: usize,
    failed: Failed,
}

/// `statement error` records: they pass on any error, so the report counts them apart.
#[derive(Clone, Copy, Default)]
struct ErrorRecords {
    run: usize,
    passed: usize,
    /// Those after which the file names DuckDB's message, and those whose error has it.
    named: usize,
    matched: usize,
}

impl ErrorRecords {
    fn add(&mut self, other: ErrorRecords) {
        self.run += other.run;
        self.passed += other.passed;
        self.named += other.named;
        self.matched += other.matched;
    }
}

#[derive(Default)]
struct FileTally {
    records: usize,
    passed: usize,
    errors: ErrorRecords,
    pragmas: usize,
    failures: Vec<Failure>,
    /// The line of the record that took longest, and how long: records near the timeout
    /// pass or fail by the machine's load.
    slowest: (usize, Duration),
}

impl FileTally {
    fn count(&mut self, line: usize, outcome: Result<(), Failed>) {
        self.records += 1;
        match outcome {
            Ok(()) => self.passed += 1,
            Err(failed) => self.failures.push(Failure { line, failed }),
        }
    }
}

enum FileOutcome {
    Skipped(String),
    Ran(FileTally),
}

fn run_file(runtime: &Arc<tokio::runtime::Runtime>, corpus: &Path, path: &Path) -> FileOutcome {
    let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
    let scratch = tempfile::tempdir().unwrap();
    let scratch_path = scratch.path().display().to_string();
    // DuckDB's data/ folder is not copied: files reading from it fail as they would there
    // without it.
    let builtins = [
        ("TEST_DIR".to_string(), scratch_path.clone()),
        ("TEMP_DIR".to_string(), scratch_path),
        ("DATA_DIR".to_string(), "data".to_string()),
    ];
    let (steps, pragmas) = match parse_file(&text, &builtins) {
        Parsed::Skip(reason) => return FileOutcome::Skipped(reason),
        Parsed::Run { steps, pragmas } => (steps, pragmas),
    };
    let mut tally = FileTally {
        pragmas,
        ..FileTally::default()
    };
    let mut lake = Lake::open(runtime);
    let mut labels = Labels::new();
    let run = catch_unwind(AssertUnwindSafe(|| {
        for located in &steps {
            let started = Instant::now();
            let outcome = match &located.step {
                Step::Restart => {
                    lake.restart();
                    continue;
                }
                Step::Setting(set) => {
                    // A setting DuckDB would refuse is refused here too, uncounted.
                    let _ = lake.run(set);
                    continue;
                }
                Step::Statement { sql, expect } => {
                    run_statement(&lake, &with_corpus_paths(sql, corpus), expect, &mut tally)
                }
                Step::Query(query) => run_query(&lake, query, &mut labels, corpus),
            };
            tally.count(located.line, outcome);
            if started.elapsed() > tally.slowest.1 {
                tally.slowest = (located.line, started.elapsed());
            }
        }
    }));
    if let Err(panic) = run {
        // The record that panicked and those after it did not pass.
        let records = steps
            .iter()
            .filter(|s| !matches!(s.step, Step::Restart | Step::Setting(_)))
            .count();
        let message = panic_message(&panic);
        for _ in tally.records..records {
            tally.count(0, Err(Failed::new("panic", message.clone())));
        }
    }
    // After a panic the node may be in any state; closing it may panic too.
    let _ = catch_unwind(AssertUnwindSafe(|| lake.close()));
    FileOutcome::Ran(tally)
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    (panic.downcast_ref::<String>().cloned())
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic".into())
}

/// Paths in the files start at DuckDB's repository; its `test/sql/` is the copy here.
fn with_corpus_paths(sql: &str, corpus: &Path) -> String {
    let copy = corpus.display();
    sql.replace("'test/sql/", &format!("'{copy}/"))
        .replace("\"test/sql/", &format!("\"{copy}/"))
}

fn run_statement(
    lake: &Lake,
    sql: &str,
    expect: &Expect,
    tally: &mut FileTally,
) -> Result<(), Failed> {
    let result = lake.run(sql);
    let Expect::Error(message) = expect else {
        return result.map(|_| ()).map_err(|e| Failed::error(e.0));
    };
    let named = message.as_ref().filter(|m| !m.trim().is_empty());
    tally.errors.run += 1;
    tally.errors.named += usize::from(named.is_some());
    match result {
        // Stopped before it could fail or not: whether it passed would depend on the
        // machine's speed.
        Err(e) if e.0.starts_with(TIMED_OUT) => Err(Failed::error(e.0)),
        Err(e) => {
            tally.errors.passed += 1;
            if named.is_some_and(|m| message_matches(&e.0, m)) {
                tally.errors.matched += 1;
            }
            Ok(())
        }
        Ok(_) => {
            let detail = format!("DuckDB's error: {}", message.as_deref().unwrap_or("-"));
            Err(Failed::new("no error where DuckDB errors", detail))
        }
    }
}

fn run_query(lake: &Lake, query: &Query, labels: &mut Labels, corpus: &Path) -> Result<(), Failed> {
    let explain = query
        .sql
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("explain");
    let outcome = match lake.run(&with_corpus_paths(&query.sql, corpus)) {
        Err(e) => Err(Failed::error(e.0)),
        Ok(None) => Err(Failed::new("no rows: not a query", "")),
        Ok(Some((schema, batches))) => check(query, answer(&schema, &batches), labels, corpus)
            .map_err(|m| Failed::new(m.group(), m.to_string())),
    };
    // EXPLAIN's expected lines are DuckDB's operator names: kept apart from the others.
    outcome.map_err(|failed| match explain {
        true => Failed::new(
            "EXPLAIN: DuckDB's plan",
            format!("{}: {}", failed.group, failed.detail),
        ),
        false => failed,
    })
}

fn answer(schema: &SchemaRef, batches: &[RecordBatch]) -> Answer {
    let kinds = schema
        .fields()
        .iter()
        .map(|f| value_kind(f.data_type()))
        .collect();
    let mut rows = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            let cells = batch.columns().iter().map(|c| cell_text(c.as_ref(), row));
            rows.push(cells.collect());
        }
    }
    Answer { kinds, rows }
}

/// An error message's failure group and what it is about, so that `function foo does not
/// exist` and `function bar does not exist` count together, under `foo` and `bar`: its first
/// line without the position, with the name after `function`, `table`, `the type`, ...
/// replaced by X, and quoted text and numbers too.
fn error_group(message: &str) -> (String, Option<String>) {
    let line = message.lines().next().unwrap_or("");
    let line = line.split(" at Line: ").next().unwrap_or(line).trim();
    if let Some(rest) = line.strip_prefix("not supported yet: the ") {
        let kinds = [
            "table function",
            "query form",
            "type",
            "statement",
            "expression",
            "interval",
            "literal",
            "operator",
            "function",
        ];
        for kind in kinds {
            if let Some(what) = rest.strip_prefix(kind).and_then(|r| r.strip_prefix(' ')) {
                let subject = match kind {
                    "type" => what.split(['(', '[']).next().unwrap_or(what).to_string(),
                    "statement" => first_words(what, 2),
                    _ => first_words(what, 3),
                };
                return (format!("not supported yet: the {kind} X"), Some(subject));
            }
        }
    }
    if let Some(rest) = line.strip_prefix("not supported yet: ") {
        return (format!("not supported yet: {}", generic(rest, 6)), None);
    }
    for prefix in ["syntax error", "conversion failed"] {
        if let Some(rest) = line.strip_prefix(prefix).and_then(|r| r.strip_prefix(": ")) {
            return (prefix.to_string(), Some(generic(rest, 8)));
        }
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    let named = [
        "function", "table", "column", "view", "type", "schema", "sequence",
    ];
    if let [kind, name, rest @ ..] = words.as_slice()
        && named.contains(kind)
        && rest
            .first()
            .is_some_and(|w| ["does", "already", "must", "of", "is"].contains(w))
    {
        let group = format!("{kind} X {}", generic(&rest.join(" "), 6));
        return (group, Some(name.trim_matches('"').to_string()));
    }
    (generic(line, 7), None)
}

fn first_words(text: &str, n: usize) -> String {
    text.split_whitespace()
        .take(n)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first `n` words of `text`, quoted text and numbers replaced by X.
fn generic(text: &str, n: usize) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut out: Vec<&str> = words
        .iter()
        .take(n)
        .map(
            |w| match w.contains(['\'', '"', '`']) || w.contains(|c: char| c.is_ascii_digit()) {
                true => "X",
                false => w,
            },
        )
        .collect();
    if words.len() > n {
        out.push("...");
    }
    out.join(" ")
}

#[derive(Default)]
struct FolderTally {
    files_run: usize,
    files_skipped: usize,
    records: usize,
    passed: usize,
    errors: ErrorRecords,
    pragmas: usize,
    /// Failures by group, and by what each group is about.
    groups: HashMap<String, usize>,
    subjects: HashMap<String, HashMap<String, usize>>,
}

impl FolderTally {
    fn add_file(&mut self, tally: &FileTally) {
        self.files_run += 1;
        self.records += tally.records;
        self.passed += tally.passed;
        self.errors.add(tally.errors);
        self.pragmas += tally.pragmas;
        for Failure { failed, .. } in &tally.failures {
            *self.groups.entry(failed.group.clone()).or_default() += 1;
            if let Some(subject) = &failed.subject {
                let subjects = self.subjects.entry(failed.group.clone()).or_default();
                *subjects.entry(subject.clone()).or_default() += 1;
            }
        }
    }

    fn add(&mut self, other: &FolderTally) {
        self.files_run += other.files_run;
        self.files_skipped += other.files_skipped;
        self.records += other.records;
        self.passed += other.passed;
        self.errors.add(other.errors);
        self.pragmas += other.pragmas;
        for (group, count) in &other.groups {
            *self.groups.entry(group.clone()).or_default() += count;
        }
        for (group, subjects) in &other.subjects {
            let mine = self.subjects.entry(group.clone()).or_default();
            for (subject, count) in subjects {
                *mine.entry(subject.clone()).or_default() += count;
            }
        }
    }

    fn share(&self) -> f64 {
        percent(self.passed, self.records)
    }

    /// The share of the records that are not `statement error` ones.
    fn share_without_errors(&self) -> f64 {
        let records = self.records - self.errors.run;
        percent(self.passed - self.errors.passed, records)
    }
}

/// One file's run.
struct FileRun {
    /// The path under `duckdb-sqllogictest/`.
    name: String,
    folder: String,
    outcome: FileOutcome,
    took: Duration,
}

/// The files DuckDB's own CI runs: `.test`, not `.test_slow`.
fn is_fast(name: &str) -> bool {
    name.ends_with(".test")
}

/// Every file `select` takes (by its path under `duckdb-sqllogictest/`) run, in order.
fn run_corpus(select: impl Fn(&str) -> bool + Sync) -> Vec<FileRun> {
    // Statements are parsed on the thread that runs them and planned on the runtime's
    // threads: both get the stacks `pondra serve` gives its threads, which the deepest
    // statement the parser lets through needs in a debug build.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(STATEMENT_STACK_BYTES)
        .build()
        .unwrap();
    let runtime = Arc::new(runtime);
    let run = || {
        let corpus = corpus_dir();
        let mut runs = Vec::new();
        for file in corpus_files(&corpus) {
            let relative = file.strip_prefix(&corpus).unwrap();
            let name = relative.display().to_string();
            if !select(&name) {
                continue;
            }
            let started = Instant::now();
            let outcome = run_file(&runtime, &corpus, &file);
            runs.push(FileRun {
                folder: folder_of(relative),
                name,
                outcome,
                took: started.elapsed(),
            });
        }
        runs
    };
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("duckdb-corpus".into())
            .stack_size(STATEMENT_STACK_BYTES)
            .spawn_scoped(scope, run)
            .unwrap()
            .join()
            .unwrap()
    })
}

fn by_folder<'a>(runs: impl Iterator<Item = &'a FileRun>) -> BTreeMap<String, FolderTally> {
    let mut folders: BTreeMap<String, FolderTally> = BTreeMap::new();
    for run in runs {
        let folder = folders.entry(run.folder.clone()).or_default();
        match &run.outcome {
            FileOutcome::Skipped(_) => folder.files_skipped += 1,
            FileOutcome::Ran(tally) => folder.add_file(tally),
        }
    }
    folders
}

/// The `.test` files (about a minute and a half in a debug build on two cores; the
/// `.test_slow` files take four times as long, mostly in statements that time out).
#[test]
fn duckdb_corpus_passes_no_fewer_records() {
    let started = Instant::now();
    let runs = run_corpus(is_fast);
    let folders = by_folder(runs.iter());
    let mut regressions = Vec::new();
    for (folder, tally) in &folders {
        println!(
            "{folder}: {} of {} records pass",
            tally.passed, tally.records
        );
        match PASSING.iter().find(|(f, _)| f == folder) {
            Some((_, floor)) if tally.passed < *floor => regressions.push(format!(
                "{folder}: {} of {} records pass, {floor} did before",
                tally.passed, tally.records
            )),
            Some(_) => {}
            None => regressions.push(format!("{folder}: no floor in PASSING")),
        }
    }
    for (folder, _) in PASSING {
        if !folders.contains_key(*folder) {
            regressions.push(format!("{folder}: in PASSING but not in the corpus"));
        }
    }
    println!("ran in {:.0?}", started.elapsed());
    assert!(
        regressions.is_empty(),
        "{}\n(the report shows the failures: cargo test --release -p pondra-tests --test \
         duckdb_corpus -- --ignored --nocapture, PONDRA_DUCKDB_FILTER=<path part> to narrow it)",
        regressions.join("\n")
    );
}

/// The share passing per folder over every file, `.test_slow` too; the largest failure
/// groups; and the floors of the `.test` files for `PASSING`. Each file's failures and time
/// too with `PONDRA_DUCKDB_VERBOSE`; `PONDRA_DUCKDB_FILTER` narrows the files to those whose
/// path contains it.
#[test]
#[ignore]
fn duckdb_corpus_report() {
    let started = Instant::now();
    let filter = std::env::var("PONDRA_DUCKDB_FILTER").unwrap_or_default();
    let runs = run_corpus(|name| name.contains(&filter));
    if std::env::var_os("PONDRA_DUCKDB_VERBOSE").is_some() {
        print_failures(&runs);
    }
    let folders = by_folder(runs.iter());
    let mut total = FolderTally::default();
    println!(
        "{:<20} {:>5} {:>7} {:>7} {:>7} {:>6} {:>18} {:>12} {:>7}",
        "folder",
        "files",
        "skipped",
        "records",
        "passing",
        "share",
        "share w/o errors",
        "msg matched",
        "pragmas"
    );
    for (folder, tally) in &folders {
        print_row(folder, tally);
        total.add(tally);
    }
    print_row("total", &total);
    let fast = by_folder(runs.iter().filter(|r| is_fast(&r.name)));
    let mut fast_total = FolderTally::default();
    fast.values().for_each(|tally| fast_total.add(tally));
    print_row("total, .test only", &fast_total);

    println!("\nlargest failure groups (and what they are about):");
    print_groups(&total, 30);
    for (folder, tally) in &folders {
        println!("\n{folder}:");
        print_groups(tally, 5);
    }
    let mut skipped_for: HashMap<String, usize> = HashMap::new();
    for run in &runs {
        if let FileOutcome::Skipped(reason) = &run.outcome {
            *skipped_for.entry(reason.clone()).or_default() += 1;
        }
    }
    println!("\nfiles skipped:");
    for (reason, count) in largest(&skipped_for, 40) {
        println!("{count:>5}  {reason}");
    }
    println!("\nfloors for PASSING (.test files):");
    for (folder, tally) in &fast {
        println!("    (\"{folder}\", {}),", tally.passed);
    }
    println!("\nran in {:.0?}", started.elapsed());
}

fn print_failures(runs: &[FileRun]) {
    for run in runs {
        let FileOutcome::Ran(tally) = &run.outcome else {
            continue;
        };
        let name = &run.name;
        let (line, took) = tally.slowest;
        println!(
            "{name}: {} of {} in {:.1?}, the longest record {took:.1?} (line {line})",
            tally.passed, tally.records, run.took
        );
        for Failure { line, failed } in &tally.failures {
            let detail = failed.detail.lines().next().unwrap_or("");
            let detail: String = detail.chars().take(200).collect();
            println!("    {name}:{line} [{}] {detail}", failed.group);
        }
    }
}

/// A folder's counts; `share w/o errors` leaves out `statement error` records, and
/// `msg matched` counts those whose error has the message the file names, of those naming one.
fn print_row(folder: &str, t: &FolderTally) {
    println!(
        "{:<20} {:>5} {:>7} {:>7} {:>7} {:>5.1}% {:>17.1}% {:>12} {:>7}",
        folder,
        t.files_run,
        t.files_skipped,
        t.records,
        t.passed,
        t.share(),
        t.share_without_errors(),
        format!("{}/{}", t.errors.matched, t.errors.named),
        t.pragmas
    );
}

fn percent(part: usize, whole: usize) -> f64 {
    match whole {
        0 => 0.0,
        whole => 100.0 * part as f64 / whole as f64,
    }
}

/// The `n` largest groups, each with its five most frequent subjects.
fn print_groups(tally: &FolderTally, n: usize) {
    for (group, count) in largest(&tally.groups, n) {
        let subjects = match tally.subjects.get(group) {
            Some(subjects) => largest(subjects, 5)
                .iter()
                .map(|(s, c)| format!("{s} {c}"))
                .collect::<Vec<_>>()
                .join(", "),
            None => String::new(),
        };
        println!("{count:>7}  {group}  {subjects}");
    }
}

/// The `n` largest counts, largest first.
fn largest(counts: &HashMap<String, usize>, n: usize) -> Vec<(&str, usize)> {
    let mut sorted: Vec<(&str, usize)> = counts.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    sorted.truncate(n);
    sorted
}

#[test]
fn error_groups_gather_messages_that_differ_in_names() {
    let group = |m: &str| error_group(m);
    assert_eq!(
        group("function trunc does not exist"),
        ("function X does not exist".into(), Some("trunc".into()))
    );
    assert_eq!(
        group("not supported yet: the type STRUCT(a INT)"),
        (
            "not supported yet: the type X".into(),
            Some("STRUCT".into())
        )
    );
    assert_eq!(
        group("syntax error: Expected: ), found: EXCLUDE at Line: 1, Column: 30"),
        (
            "syntax error".into(),
            Some("Expected: ), found: EXCLUDE".into())
        )
    );
    assert_eq!(
        group("count takes one argument, got 0\n  at exec/src/x.rs:1"),
        ("count takes one argument, got X".into(), None)
    );
    assert_eq!(
        folder_of(Path::new("function/list/lambdas/x.test")),
        "function/list"
    );
    assert_eq!(folder_of(Path::new("join/asof/x.test")), "join");
}
