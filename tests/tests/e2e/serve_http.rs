//! `pondra serve`'s HTTP door, used with curl as a user would.

use crate::common;

use common::{Served, curl};

#[test]
fn sql_appends_stats_and_errors_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path(), &[]);
    let sql = |body: &str, extra: &[&str]| {
        let url = served.url("/sql");
        let mut args = vec!["-X", "POST", url.as_str(), "--data-binary", body];
        args.extend_from_slice(extra);
        curl(&args)
    };

    let (body, status) = sql(
        "CREATE TABLE t (id INT, name VARCHAR, amount DECIMAL(10,2))",
        &[],
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, r#"{"columns":[],"rows":[],"tag":"CREATE TABLE"}"#);
    let (body, _) = sql("INSERT INTO t VALUES (1, 'a', 1.50), (2, NULL, NULL)", &[]);
    assert!(body.contains(r#""tag":"INSERT 0 2""#), "{body}");

    let (body, status) = sql("SELECT * FROM t ORDER BY id", &[]);
    assert_eq!(status, 200);
    assert_eq!(
        body,
        r#"{"columns":[{"name":"id","type":"INTEGER"},{"name":"name","type":"VARCHAR"},{"name":"amount","type":"DECIMAL(10,2)"}],"rows":[[1,"a",1.50],[2,null,null]]}"#
    );
    // A struct as DuckDB writes it, typed as DESCRIBE names it; NULL as null (ADR 0063).
    let (body, _) = sql("SELECT {'a': 1, 'b': 'x y'} AS s, NULL AS n", &[]);
    assert_eq!(
        body,
        r#"{"columns":[{"name":"s","type":"STRUCT(a INTEGER, b VARCHAR)"},{"name":"n","type":"NULL"}],"rows":[["{'a': 1, 'b': x y}",null]]}"#
    );
    let url = served.url("/sql?rows=objects");
    let (body, _) = curl(&[
        "-X",
        "POST",
        &url,
        "--data-binary",
        "SELECT id, name FROM t WHERE id = 1",
    ]);
    assert!(body.ends_with(r#""rows":[{"id":1,"name":"a"}]}"#), "{body}");
    let (body, _) = sql(
        "SELECT id, name FROM t ORDER BY id",
        &["-H", "Accept: text/csv"],
    );
    assert_eq!(body, "id,name\n1,a\n2,\n");

    // An Arrow IPC stream comes back when asked for; it starts with the IPC continuation marker.
    let arrow_file = dir.path().join("result.arrows");
    let url = served.url("/sql");
    let arrow_path = arrow_file.to_string_lossy().into_owned();
    let (_, status) = curl(&[
        "-X",
        "POST",
        &url,
        "--data-binary",
        "SELECT * FROM t",
        "-H",
        "Accept: application/vnd.apache.arrow.stream",
        "-o",
        &arrow_path,
    ]);
    assert_eq!(status, 200);
    let bytes = std::fs::read(&arrow_file).unwrap();
    let reader =
        arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None).unwrap();
    // Decimals reach Arrow clients as Decimal128, whatever width they are held in.
    assert_eq!(
        reader.schema().field(2).data_type(),
        &arrow::datatypes::DataType::Decimal128(10, 2)
    );
    let batches: Vec<_> = reader.map(|b| b.unwrap()).collect();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
    let amounts = arrow::compute::concat(
        &batches
            .iter()
            .map(|b| b.column(2).as_ref())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert_eq!(
        arrow::util::display::array_value_to_string(&amounts, 0).unwrap(),
        "1.50"
    );

    // Errors are HTTP 400 with a JSON message, and change nothing.
    let (body, status) = sql("SELEC 1", &[]);
    assert_eq!(status, 400);
    assert!(body.starts_with(r#"{"error":"syntax error"#), "{body}");
    let (body, status) = sql("SELECT nope FROM t", &[]);
    assert_eq!(status, 400);
    assert!(
        body.contains("column \\\"nope\\\" does not exist"),
        "{body}"
    );

    // Appends: JSON lines, then the same producer and sequence again (a retry: dropped), then CSV
    // naming some columns.
    let append = served.url("/tables/t/append?producer=loader&seq=7");
    let lines = "{\"id\":3,\"name\":\"c\",\"amount\":3.25}\n{\"id\":4}\n";
    let json_type = "Content-Type: application/x-ndjson";
    let (body, status) = curl(&[
        "-X",
        "POST",
        &append,
        "-H",
        json_type,
        "--data-binary",
        lines,
    ]);
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"rows":2,"duplicate":false}"#)
    );
    let (body, _) = curl(&[
        "-X",
        "POST",
        &append,
        "-H",
        json_type,
        "--data-binary",
        lines,
    ]);
    assert_eq!(body, r#"{"rows":0,"duplicate":true}"#);
    let csv_url = served.url("/tables/t/append");
    let (body, status) = curl(&[
        "-X",
        "POST",
        &csv_url,
        "-H",
        "Content-Type: text/csv",
        "--data-binary",
        "name,id\ne,5\n",
    ]);
    assert_eq!(
        (status, body.as_str()),
        (200, r#"{"rows":1,"duplicate":false}"#)
    );
    let (body, status) = curl(&[
        "-X",
        "POST",
        &csv_url,
        "-H",
        "Content-Type: text/csv",
        "--data-binary",
        "id\nnot a number\n",
    ]);
    assert_eq!(status, 400, "{body}");
    let (body, _) = sql("SELECT count(*), sum(amount), max(name) FROM t", &[]);
    assert!(body.ends_with(r#""rows":[[5,4.75,"e"]]}"#), "{body}");

    let (body, status) = curl(&[&served.url("/stats")]);
    assert_eq!(status, 200);
    assert!(body.contains(r#""untiered_rows":5"#), "{body}");
    assert!(
        body.contains(r#"{"lake":"lake","name":"t","rows":5}"#),
        "{body}"
    );
    assert!(body.contains(r#""uptime_secs":"#), "{body}");
    let (body, status) = curl(&[&served.url("/health")]);
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));

    // Appends to a merge table fold into the rows of their keys (ADR 0050).
    let create = "CREATE TABLE counters (k VARCHAR PRIMARY KEY, n BIGINT) WITH (merge = 'n sum')";
    assert_eq!(sql(create, &[]).1, 200);
    let counters = served.url("/tables/counters/append");
    let counts = "{\"k\":\"a\",\"n\":1}\n{\"k\":\"a\",\"n\":2}\n{\"k\":\"b\",\"n\":5}\n";
    for _ in 0..2 {
        let (body, status) = curl(&[
            "-X",
            "POST",
            &counters,
            "-H",
            json_type,
            "--data-binary",
            counts,
        ]);
        assert_eq!(status, 200, "{body}");
    }
    let (body, _) = sql("SELECT k, n FROM counters ORDER BY k", &[]);
    assert!(body.ends_with(r#""rows":[["a",6],["b",10]]}"#), "{body}");

    // A watermarked table keeps its late rows and counts them (ADR 0055): the watermark is
    // 00:00:15 when 00:00:01 arrives.
    let create = "CREATE TABLE clicks (ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)";
    assert_eq!(sql(create, &[]).1, 200);
    let clicks = "INSERT INTO clicks VALUES (TIMESTAMP '2024-01-01 00:00:20')";
    assert_eq!(sql(clicks, &[]).1, 200);
    let late = "INSERT INTO clicks VALUES ('2024-01-01 00:00:01'), ('2024-01-01 00:00:16')";
    assert_eq!(sql(late, &[]).1, 200);
    let counted = r#"{"lake":"lake","name":"clicks","rows":3,"watermark_micros":1704067215000000,"late_rows":1}"#;
    let (body, _) = curl(&[&served.url("/stats")]);
    assert!(body.contains(counted), "{body}");

    assert!(served.stop().success());
    // Nothing acknowledged is lost across the shutdown.
    let served = Served::start(dir.path(), &[]);
    let url = served.url("/sql");
    let (body, _) = curl(&[
        "-X",
        "POST",
        &url,
        "--data-binary",
        "SELECT count(*) FROM t",
    ]);
    assert!(body.ends_with(r#""rows":[[5]]}"#), "{body}");
    let (body, _) = curl(&[&served.url("/stats")]);
    assert!(body.contains(counted), "{body}");
}

#[test]
fn tokens_guard_every_http_request() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(
        dir.path(),
        &[
            "--token-read",
            "r-secret",
            "--token-write",
            "w-secret",
            "--token-admin",
            "a-secret",
        ],
    );
    let url = served.url("/sql");
    let run = |token: Option<&str>, body: &str| {
        let header = token.map(|t| format!("Authorization: Bearer {t}"));
        let mut args = vec!["-X", "POST", url.as_str(), "--data-binary", body];
        if let Some(header) = &header {
            args.extend_from_slice(&["-H", header.as_str()]);
        }
        curl(&args)
    };
    let (body, status) = run(None, "SELECT 1");
    assert_eq!(status, 401, "{body}");
    let (_, status) = run(Some("wrong"), "SELECT 1");
    assert_eq!(status, 401);
    let (body, status) = run(Some("w-secret"), "CREATE TABLE t (a INT)");
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("a write token cannot run this statement (it needs admin)"),
        "{body}"
    );
    let (_, status) = run(Some("a-secret"), "CREATE TABLE t (a INT)");
    assert_eq!(status, 200);
    let (body, status) = run(Some("r-secret"), "INSERT INTO t VALUES (1)");
    assert_eq!(status, 403, "{body}");
    let (_, status) = run(Some("w-secret"), "INSERT INTO t VALUES (1)");
    assert_eq!(status, 200);
    let (body, status) = run(Some("r-secret"), "SELECT count(*) FROM t");
    assert_eq!(status, 200);
    assert!(body.ends_with(r#""rows":[[1]]}"#), "{body}");

    let append = served.url("/tables/t/append");
    let (_, status) = curl(&[
        "-X",
        "POST",
        &append,
        "-H",
        "Authorization: Bearer r-secret",
        "-H",
        "Content-Type: text/csv",
        "--data-binary",
        "a\n2\n",
    ]);
    assert_eq!(status, 403);
    let (_, status) = curl(&[
        "-X",
        "POST",
        &append,
        "-H",
        "Authorization: Bearer w-secret",
        "-H",
        "Content-Type: text/csv",
        "--data-binary",
        "a\n2\n",
    ]);
    assert_eq!(status, 200);
    let (_, status) = curl(&[&served.url("/stats")]);
    assert_eq!(status, 401);
}

/// A commit another process prepared, handed to the server (ADR 0053): committed once, visible
/// at once, a retry answered without committing again, a stale conflicting one refused with
/// 409, and a malformed one or one naming a missing object refused with 400.
#[test]
fn the_server_commits_what_another_process_prepared() {
    use std::sync::Arc;

    use arrow::array::{Int64Array, RecordBatch};
    use pondra_catalog::{Change, Column, ForwardedCommit, SegmentPayload, SqlType, TableDef};

    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path(), &[]);
    let post = |path: &str, body: &str| {
        let url = served.url(path);
        curl(&["-X", "POST", url.as_str(), "--data-binary", body])
    };
    let commit_now = || {
        let (stats, _) = curl(&[served.url("/stats").as_str()]);
        let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
        stats["commits"].as_u64().unwrap()
    };
    let (body, status) = post("/sql", "CREATE TABLE t (k BIGINT)");
    assert_eq!(status, 200, "{body}");
    let base = commit_now();

    let column = Column {
        name: "k".into(),
        sql_type: SqlType::BigInt,
        not_null: false,
        id: 0,
    };
    let def = TableDef::new(
        "prepared".into(),
        vec![column],
        pondra_catalog::TableKind::Table,
    );
    let schema = def.arrow_schema();
    let rows = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![7, 8]))]);
    let segment = pondra_storage::encode_log_segment(&schema, &[rows.unwrap()]).unwrap();
    let create = Change::CreateTable {
        def,
        initial: Some((2, SegmentPayload::Inline(segment))),
    };
    let forwarded = |changes: Vec<Change>, sequence: u64| {
        let commit = ForwardedCommit {
            base,
            changes,
            producer: "elsewhere".into(),
            sequence,
        };
        serde_json::to_string(&commit).unwrap()
    };
    let (body, status) = post("/cluster/commit", &forwarded(vec![create.clone()], 1));
    assert_eq!(status, 200, "{body}");
    let (body, _) = post("/sql", "SELECT k FROM prepared ORDER BY k");
    assert!(body.ends_with(r#""rows":[[7],[8]]}"#), "{body}");

    // The same attempt again (its answer lost): answered, not committed twice.
    let (body, status) = post("/cluster/commit", &forwarded(vec![create.clone()], 1));
    assert_eq!(status, 200, "{body}");
    let (body, _) = post("/sql", "SELECT count(*) FROM prepared");
    assert!(body.ends_with(r#""rows":[[2]]}"#), "{body}");

    // Prepared against the snapshot before the table was created: a conflict.
    let (body, status) = post("/cluster/commit", &forwarded(vec![create], 2));
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("could not serialize"), "{body}");

    let missing = Change::AppendSegment {
        table_id: 1,
        rows: 1,
        payload: SegmentPayload::Object("log/t/missing.arrows".into()),
        ranges: Vec::new(),
        column_ids: Vec::new(),
        partition: 0,
    };
    let (body, status) = post("/cluster/commit", &forwarded(vec![missing], 3));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("does not hold"), "{body}");
    let (body, status) = post("/cluster/commit", "{\"base\": 1}");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("not a commit"), "{body}");
    let (body, _) = post("/sql", "SELECT count(*) FROM t");
    assert!(body.ends_with(r#""rows":[[0]]}"#), "{body}");
}

/// A producer's appends in flight together (ADR 0078): each names the sequence it follows,
/// arrives in any order and commits in line; one behind a failed append is refused (409) and
/// nothing of it written, and both go through when sent again.
#[test]
fn a_producers_appends_in_flight_commit_in_line() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(dir.path(), &[]);
    let sql = |body: &str| curl(&["-X", "POST", &served.url("/sql"), "--data-binary", body]);
    assert_eq!(sql("CREATE TABLE t (v INT NOT NULL)").1, 200);
    let append = |seq: u64, follows: u64, value: &str| {
        let url = served.url(&format!(
            "/tables/t/append?producer=p&seq={seq}&follows={follows}"
        ));
        let line = format!("{{\"v\":{value}}}\n");
        let args = [
            "-X",
            "POST",
            &url,
            "-H",
            "Content-Type: application/x-ndjson",
        ];
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        args.extend(["--data-binary".to_string(), line]);
        std::thread::spawn(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            curl(&args)
        })
    };
    let pause = || std::thread::sleep(std::time::Duration::from_millis(300));
    // Sent last first: the third and second wait for the ones they follow.
    let third = append(3, 2, "3");
    pause();
    let second = append(2, 1, "2");
    pause();
    let first = append(1, 0, "1");
    for (sent, seq) in [(first, 1), (second, 2), (third, 3)] {
        let (body, status) = sent.join().unwrap();
        assert_eq!(status, 200, "append {seq}: {body}");
        assert!(
            body.contains(r#""duplicate":false"#),
            "append {seq}: {body}"
        );
    }
    let (body, _) = sql("SELECT string_agg(v::VARCHAR, ',' ORDER BY _offset) FROM t");
    assert!(body.contains(r#""1,2,3""#), "{body}");
    // The fifth waits for the fourth, which fails (a NULL in a NOT NULL column).
    let fifth = append(5, 4, "5");
    pause();
    let (body, status) = append(4, 3, "null").join().unwrap();
    assert_eq!(status, 400, "{body}");
    let (body, status) = fifth.join().unwrap();
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("follows 4"), "{body}");
    for seq in [4, 5] {
        let (body, status) = append(seq, seq - 1, &seq.to_string()).join().unwrap();
        assert_eq!(
            (status, body.contains(r#""duplicate":false"#)),
            (200, true),
            "{body}"
        );
    }
    let (body, _) = append(5, 4, "5").join().unwrap();
    assert!(body.contains(r#""duplicate":true"#), "a retry: {body}");
    let (body, _) = sql("SELECT string_agg(v::VARCHAR, ',' ORDER BY _offset) FROM t");
    assert!(body.contains(r#""1,2,3,4,5""#), "{body}");
    let (body, status) = append(6, 6, "6").join().unwrap();
    assert_eq!(status, 400, "follows itself: {body}");
}

/// The MCP door (ADR 0082) through the official `mcp` SDK (`tests/python/mcp_client.py`): its
/// tools and resources, and what each token may do through them.
#[test]
fn serve_mcp() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = ["mcp-reader", "mcp-writer", "mcp-admin"];
    let served = Served::start(
        dir.path(),
        &[
            "--token-read",
            tokens[0],
            "--token-write",
            tokens[1],
            "--token-admin",
            tokens[2],
        ],
    );
    let script = format!("{}/python/mcp_client.py", env!("CARGO_MANIFEST_DIR"));
    let output = common::python()
        .arg(script)
        .arg(&served.doors["http"])
        .args(tokens)
        .output()
        .unwrap();
    let printed = common::stdout(&output);
    assert!(
        output.status.success() && printed.contains("mcp: ok"),
        "{printed}{}",
        common::stderr(&output)
    );
}
