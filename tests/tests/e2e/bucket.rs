//! Lakes and files in a bucket (ADR 0046), on each store's API on loopback: S3 (moto's
//! server), Azure (Azurite) and Google Cloud Storage (fake-gcs-server). On each, a lake made
//! and read at its URL holds every object in the bucket, a lake folder copied to a bucket opens
//! there as it was and back, files in a bucket are read and written in place, a server on a
//! bucket keeps what it acknowledged through a SIGKILL, and a table published there reads
//! through `delta_scan` and `iceberg_scan` at its URL. An unknown scheme is an error.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::emulators::{BucketStore, Emulator};
use common::s3::S3;
use common::{http_post, pondra, python, sql, stderr, stdout};

/// Runs `scenario` on each store, as a test per store: `<scenario>::s3`, `::azure`, `::gcs`.
macro_rules! on_every_store {
    ($scenario:ident) => {
        mod $scenario {
            #[test]
            fn s3() {
                super::$scenario(super::S3::start());
            }

            #[test]
            fn azure() {
                super::$scenario(super::Emulator::azure());
            }

            #[test]
            fn gcs() {
                super::$scenario(super::Emulator::gcs());
            }
        }
    };
}

on_every_store!(a_lake_in_a_bucket_keeps_every_object_there);
on_every_store!(a_lake_folder_copied_to_a_bucket_opens_there_as_it_was_and_back);
on_every_store!(files_in_a_bucket_are_read_and_written_in_place);
on_every_store!(a_server_on_a_bucket_appends_exactly_once_and_keeps_what_it_acknowledged);
on_every_store!(a_table_published_in_a_bucket_reads_through_delta_scan_and_iceberg_scan);

/// Runs `pondra sql` on the lake at `location`, in `cwd`, with the store's variables and a
/// cache under `cwd`.
fn sql_at(store: &dyn BucketStore, cwd: &Path, location: &str, statements: &str) -> Output {
    pondra()
        .current_dir(cwd)
        .envs(store.env())
        .args(["sql", "--format", "csv", "--dir", location, "--cache-dir"])
        .arg(cwd.join("cache"))
        .arg(statements)
        .output()
        .expect("run pondra sql")
}

/// `sql_at` that must succeed; returns its stdout.
fn answer(store: &dyn BucketStore, cwd: &Path, location: &str, statements: &str) -> String {
    let output = sql_at(store, cwd, location, statements);
    assert!(output.status.success(), "{statements}: {}", stderr(&output));
    stdout(&output)
}

/// Runs a Python script with `args` as `sys.argv[1:]`; returns its stdout.
fn run_python(script: &str, args: &[&str]) -> String {
    let output = python().arg("-c").arg(script).args(args).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    stdout(&output)
}

fn a_lake_in_a_bucket_keeps_every_object_there(s3: &dyn BucketStore) {
    let bucket = s3.bucket("lake");
    let cwd = tempfile::tempdir().unwrap();
    let lake = s3.url(&bucket, "lakes/first");
    answer(
        s3,
        cwd.path(),
        &lake,
        "CREATE TABLE t (a BIGINT, b VARCHAR); INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, 'z'); \
         CHECKPOINT",
    );
    answer(s3, cwd.path(), &lake, "INSERT INTO t VALUES (4, 'w')");
    let counted = answer(
        s3,
        cwd.path(),
        &lake,
        "SELECT count(*), sum(a), max(b) FROM t",
    );
    assert_eq!(counted, "count(*),sum(a),max(b)\n4,10,z\n");

    let keys = s3.keys(&bucket, "");
    let has = |prefix: &str| keys.iter().any(|k| k.starts_with(prefix));
    assert!(has("lakes/first/catalog/"), "{keys:?}");
    assert!(has("lakes/first/cluster/term/"), "{keys:?}");
    assert!(
        keys.iter()
            .any(|k| k.starts_with("lakes/first/data/t/") && k.ends_with(".parquet")),
        "{keys:?}"
    );
    assert!(
        keys.iter().all(|k| k.starts_with("lakes/first/")),
        "{keys:?}"
    );
    // Nothing of the lake was written locally: the working folder holds the cache alone.
    let local: Vec<_> = std::fs::read_dir(cwd.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(local, ["cache"]);
}

fn a_lake_folder_copied_to_a_bucket_opens_there_as_it_was_and_back(s3: &dyn BucketStore) {
    let bucket = s3.bucket("copied");
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("lake");
    // Rows tiered into Parquet, rows still in the log tail, and a view kept current.
    let made = sql(
        &folder,
        &[
            "CREATE TABLE orders (id BIGINT, city VARCHAR, amount DOUBLE); \
           CREATE MATERIALIZED VIEW by_city AS SELECT city, count(*) AS n, sum(amount) AS total FROM orders GROUP BY city; \
           INSERT INTO orders SELECT i, 'c' || (i % 7), i * 0.5 FROM generate_series(1, 5000) AS g(i); \
           CHECKPOINT; \
           INSERT INTO orders VALUES (5001, 'c1', 10), (5002, 'new', 1)",
        ],
    );
    assert!(made.status.success(), "{}", stderr(&made));
    let query = "SELECT city, n, total FROM by_city ORDER BY city; \
                 SELECT count(*), sum(id), sum(amount) FROM orders";
    let in_folder = stdout(&sql(&folder, &["--format", "csv", query]));
    assert!(in_folder.contains("new,1,1"), "{in_folder}");

    s3.upload(&folder, &bucket, "lake");
    let lake = s3.url(&bucket, "lake");
    assert_eq!(answer(s3, dir.path(), &lake, query), in_folder);

    // Written to in the bucket, then copied back to a folder.
    answer(
        s3,
        dir.path(),
        &lake,
        "INSERT INTO orders VALUES (6000, 'back', 2)",
    );
    let in_bucket = answer(s3, dir.path(), &lake, query);
    assert!(in_bucket.contains("back,1,2"), "{in_bucket}");
    let back = dir.path().join("back");
    s3.download(&bucket, "lake", &back);
    assert_eq!(stdout(&sql(&back, &["--format", "csv", query])), in_bucket);
}

fn files_in_a_bucket_are_read_and_written_in_place(s3: &dyn BucketStore) {
    let bucket = s3.bucket("files");
    // Parquet parts of several row groups, a CSV file and JSON lines, put by another tool.
    let files = tempfile::tempdir().unwrap();
    run_python(
        "import os, sys, pyarrow as pa, pyarrow.parquet as pq\n\
         root = sys.argv[1]\n\
         for part in range(3):\n    \
             ids = list(range(part * 1000, part * 1000 + 1000))\n    \
             table = pa.table({'id': ids, 'name': ['n%d' % (i % 10) for i in ids], 'pad': ['x' * 50] * 1000})\n    \
             pq.write_table(table, os.path.join(root, 'part-%d.parquet' % part), row_group_size=250)\n\
         open(os.path.join(root, 'other.txt'), 'wb').write(b'not parquet')\n\
         open(os.path.join(root, 'cities.csv'), 'wb').write(b'city,people\\nOslo,709000\\nLima,10000000\\n')\n\
         open(os.path.join(root, 'events.ndjson'), 'wb').write(b'{\"kind\": \"a\", \"n\": 1}\\n{\"kind\": \"b\", \"n\": 2, \"x\": 0.5}\\n')",
        &[files.path().to_str().unwrap()],
    );
    s3.upload(files.path(), &bucket, "in");
    let cwd = tempfile::tempdir().unwrap();
    let lake = cwd.path().join("lake");
    let lake = lake.to_str().unwrap();
    let url = |key: &str| s3.url(&bucket, key);
    let read = |statements: String| answer(s3, cwd.path(), lake, &statements);

    let parts = url("in/part-*.parquet");
    assert_eq!(
        read(format!(
            "SELECT count(*), sum(id), count(DISTINCT name) FROM read_parquet('{parts}')"
        )),
        "count(*),sum(id),count(DISTINCT name)\n3000,4498500,10\n"
    );
    assert_eq!(
        read(format!(
            "SELECT id, name FROM read_parquet('{}') WHERE id = 1733",
            url("in/part-1.parquet")
        )),
        "id,name\n1733,n3\n"
    );
    assert_eq!(
        read(format!(
            "SELECT city FROM read_csv('{}') WHERE people > 1000000",
            url("in/cities.csv")
        )),
        "city\nLima\n"
    );
    assert_eq!(
        read(format!(
            "SELECT kind, n, x FROM read_json('{}') ORDER BY n",
            url("in/events.ndjson")
        )),
        "kind,n,x\na,1,\nb,2,0.5\n"
    );
    let missing = sql_at(
        s3,
        cwd.path(),
        lake,
        &format!(
            "SELECT * FROM read_parquet('{}')",
            url("in/nothing-*.parquet")
        ),
    );
    assert!(
        stderr(&missing).contains("no file matches"),
        "{}",
        stderr(&missing)
    );

    // COPY TO a bucket in each format, and back in with COPY FROM and the readers.
    let written = url("out/small.parquet");
    read(format!(
        "COPY (SELECT id, name FROM read_parquet('{parts}') WHERE id % 100 = 0) TO '{written}'; \
         COPY (SELECT 1 AS a, 'q' AS b) TO '{}'; \
         COPY (SELECT 2 AS a, 'r' AS b) TO '{}'",
        url("out/one.csv"),
        url("out/one.json")
    ));
    assert_eq!(
        read(format!(
            "CREATE TABLE t (id BIGINT, name VARCHAR); COPY t FROM '{written}'; \
             SELECT count(*), sum(id) FROM t"
        )),
        "count(*),sum(id)\n30,43500\n"
    );
    assert_eq!(
        read(format!(
            "SELECT a, b FROM read_csv('{}') UNION ALL SELECT a, b FROM read_json('{}')",
            url("out/one.csv"),
            url("out/one.json")
        )),
        "a,b\n1,q\n2,r\n"
    );
    // What Pondra wrote, another tool reads.
    let copy = files.path().join("small.parquet");
    s3.get(&bucket, "out/small.parquet", &copy);
    let rows = run_python(
        "import sys, pyarrow.parquet as pq\nprint(pq.read_table(sys.argv[1]).num_rows)",
        &[copy.to_str().unwrap()],
    );
    assert_eq!(rows.trim(), "30");
}

#[test]
fn an_unknown_scheme_is_an_error_and_creates_nothing() {
    let cwd = tempfile::tempdir().unwrap();
    for location in ["ftp://x/lake", "s4://bucket/lake"] {
        let output = pondra()
            .current_dir(cwd.path())
            .args(["sql", "--dir", location, "SELECT 1"])
            .output()
            .unwrap();
        assert!(!output.status.success());
        let scheme = location.split("://").next().unwrap();
        assert!(
            stderr(&output).contains(&format!("the scheme {scheme}:// is not known")),
            "{}",
            stderr(&output)
        );
    }
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0);
}

fn a_server_on_a_bucket_appends_exactly_once_and_keeps_what_it_acknowledged(s3: &dyn BucketStore) {
    let bucket = s3.bucket("served");
    let cwd = tempfile::tempdir().unwrap();
    let lake = s3.url(&bucket, "lake");
    answer(
        s3,
        cwd.path(),
        &lake,
        "CREATE TABLE events (id BIGINT, kind VARCHAR)",
    );
    let cache = cwd.path().join("cache");
    let cache = cache.to_str().unwrap();
    let served = common::Served::start_at(&lake, &s3.env(), &["--cache-dir", cache]);
    let address = served.doors["http"].clone();
    let mut acknowledged = 0;
    for sequence in 1..=20u64 {
        let body: String = (0..10)
            .map(|i| format!("{{\"id\":{},\"kind\":\"k{i}\"}}\n", sequence * 100 + i))
            .collect();
        let path = format!("/tables/events/append?producer=p1&seq={sequence}");
        let (status, answer) = http_post(&address, &path, "application/x-ndjson", body.as_bytes());
        assert_eq!(
            (status, answer.as_str()),
            (200, r#"{"rows":10,"duplicate":false}"#)
        );
        acknowledged += 10;
        // Every third batch is sent again, as a producer that lost the answer would.
        if sequence % 3 == 0 {
            let (_, again) = http_post(&address, &path, "application/x-ndjson", body.as_bytes());
            assert_eq!(again, r#"{"rows":0,"duplicate":true}"#);
        }
    }
    // `pondra sql` beside the server hands its commit to it (ADR 0053): the server sees the
    // row at once and keeps its lake.
    answer(
        s3,
        cwd.path(),
        &lake,
        "INSERT INTO events VALUES (1, 'from sql')",
    );
    acknowledged += 1;
    let (status, seen) = http_post(
        &address,
        "/sql",
        "text/plain",
        b"SELECT count(*) FROM events",
    );
    assert_eq!(status, 200, "{seen}");
    assert!(
        seen.ends_with(&format!("\"rows\":[[{acknowledged}]]}}")),
        "{seen}"
    );
    // SIGKILL: nothing is flushed at exit; what was acknowledged must already be in the bucket.
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(served.pid() as i32, libc::SIGKILL) };
    drop(served);
    assert_eq!(
        answer(
            s3,
            cwd.path(),
            &lake,
            "SELECT count(*), count(DISTINCT id) FROM events"
        ),
        format!("count(*),count(DISTINCT id)\n{acknowledged},{acknowledged}\n")
    );
}

fn a_table_published_in_a_bucket_reads_through_delta_scan_and_iceberg_scan(s3: &dyn BucketStore) {
    let bucket = s3.bucket("published");
    let cwd = tempfile::tempdir().unwrap();
    let lake = s3.url(&bucket, "lakes/shared");
    answer(
        s3,
        cwd.path(),
        &lake,
        "CREATE TABLE t (a BIGINT, b VARCHAR) WITH (publish = 'delta,iceberg'); \
         INSERT INTO t SELECT i, 'b' || i FROM generate_series(1, 1000) AS g(i); CHECKPOINT; \
         DELETE FROM t WHERE a <= 10; CHECKPOINT",
    );
    let own = answer(s3, cwd.path(), &lake, "SELECT count(*), sum(a) FROM t");
    assert_eq!(own.lines().last().unwrap(), "990,500445");
    // Another lake, in a folder, reads the published table in the bucket by its URL.
    let reader = cwd.path().join("reader");
    let table = s3.url(&bucket, "lakes/shared/data/t");
    for function in ["delta_scan", "iceberg_scan"] {
        let query = format!("SELECT count(*), sum(a) FROM {function}('{table}')");
        let read = answer(s3, cwd.path(), reader.to_str().unwrap(), &query);
        assert_eq!(read.lines().last().unwrap(), "990,500445", "{function}");
    }
    let keys = s3.keys(&bucket, "lakes/shared/data/t/");
    assert!(keys.iter().any(|k| k.contains("/_delta_log/")), "{keys:?}");
    assert!(
        keys.iter().any(|k| k.ends_with("version-hint.text")),
        "{keys:?}"
    );
}
