//! Nexmark's streams appended batch by batch keep views of Nexmark's queries current: after
//! the events, each view holds what its query answers over the tables.

use pondra_cluster::{Node, NodeOptions};
use pondra_tests::{run_sql, sorted_rows};

/// Views in the spirit of Nexmark's queries (RisingWave's SQL forms) that views can keep:
/// q1's projection, q2's filter, q3's join, q5's hot items per HOP window, q8's new users per
/// TUMBLE window joined to their auctions, and highest bids per auction (q9's top-1).
const VIEWS: [(&str, &str); 6] = [
    (
        "q1",
        "SELECT auction, bidder, 0.908 * price AS price, date_time FROM bid",
    ),
    (
        "q2",
        "SELECT auction, price FROM bid WHERE auction % 123 = 0",
    ),
    (
        "q3",
        "SELECT p.name, p.city, p.state, a.id FROM auction a JOIN person p ON a.seller = p.id \
         WHERE a.category = 10 AND (p.state = 'or' OR p.state = 'id' OR p.state = 'ca')",
    ),
    (
        "q5_counts",
        "SELECT auction, window_start, count(*) AS num FROM HOP(bid, date_time, \
         INTERVAL '2' SECOND, INTERVAL '10' SECOND) GROUP BY auction, window_start",
    ),
    (
        "q8",
        "SELECT p.id, p.name, p.window_start FROM TUMBLE(person, date_time, INTERVAL '10' SECOND) p \
         JOIN TUMBLE(auction, date_time, INTERVAL '10' SECOND) a \
         ON p.id = a.seller AND p.window_start = a.window_start",
    ),
    (
        "q9_top",
        "SELECT auction, bidder, price FROM (SELECT auction, bidder, price, row_number() OVER \
         (PARTITION BY auction ORDER BY price DESC, bidder) AS rn FROM bid) WHERE rn = 1",
    ),
];

#[test]
fn nexmark_events_keep_views_of_its_queries_current() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let node = runtime
        .block_on(Node::open_folder(dir.path(), NodeOptions::default()))
        .unwrap();
    // No events: the tables only.
    let none = runtime
        .block_on(pondra_nexmark::generate(&node, 0, 1, |_| {}))
        .unwrap();
    assert_eq!(none.total(), 0);
    for (view, query) in VIEWS {
        run_sql(
            &node,
            &runtime,
            &format!("CREATE MATERIALIZED VIEW {view} AS {query}"),
        )
        .unwrap();
    }
    let mut commits = 0;
    let counts = runtime
        .block_on(pondra_nexmark::generate(&node, 20_000, 2_000, |_| {
            commits += 1
        }))
        .unwrap();
    assert_eq!((counts.total(), commits), (20_000, 10));
    // Nexmark's proportions: 1 person and 3 auctions per 46 bids.
    assert_eq!(
        (counts.persons, counts.auctions, counts.bids),
        (400, 1_200, 18_400)
    );
    for (view, query) in VIEWS {
        let held = sorted_rows(&node, &runtime, &format!("SELECT * FROM {view}"));
        assert!(!held.is_empty(), "view {view} holds no rows");
        assert_eq!(held, sorted_rows(&node, &runtime, query), "view {view}");
    }
    // The tables have watermarks, which moved with the events (ADR 0055).
    let snapshot = node.snapshot();
    let bid = snapshot.table("bid").unwrap();
    assert!(snapshot.watermark(bid).is_some());
    runtime.block_on(node.close()).unwrap();
}

/// `CREATE MATERIALIZED VIEW <name> AS <query>` statements of a benchmark file, as (name,
/// query), comments dropped.
fn views_of(script: &str) -> Vec<(String, String)> {
    let text: String = script
        .lines()
        .filter(|line| !line.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    text.split(';')
        .filter(|s| !s.trim().is_empty())
        .map(|statement| {
            let rest = statement
                .trim()
                .strip_prefix("CREATE MATERIALIZED VIEW ")
                .expect("a view");
            let (name, query) = rest.split_once(" AS").expect("AS");
            (name.trim().to_string(), query.trim().to_string())
        })
        .collect()
}

/// The benchmark's queries (`bench/nexmark/q*.sql`), kept as views while the events written
/// by `nexmark gen --parquet` are replayed from memory: every view holds what its query
/// answers, and the replay appended exactly the events the generator makes.
#[test]
fn benchmark_views_over_replayed_events_hold_their_queries() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let files = tempfile::tempdir().unwrap();
    let written = pondra_nexmark::write_parquet(files.path(), 20_000, 2_500).unwrap();
    let commits = pondra_nexmark::read_parquet(files.path()).unwrap();
    assert_eq!(commits.len(), 8);
    let bench = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/nexmark");
    let mut scripts: Vec<_> = std::fs::read_dir(&bench)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "sql"))
        .collect();
    scripts.sort();
    assert_eq!(scripts.len(), 9, "q0 to q9 but q6");
    let dir = tempfile::tempdir().unwrap();
    let node = runtime
        .block_on(Node::open_folder(dir.path(), NodeOptions::default()))
        .unwrap();
    runtime
        .block_on(pondra_nexmark::generate(&node, 0, 1, |_| {}))
        .unwrap();
    let mut views = Vec::new();
    for script in &scripts {
        let text = std::fs::read_to_string(script).unwrap();
        run_sql(&node, &runtime, &text).unwrap();
        views.extend(views_of(&text));
    }
    let replayed = runtime
        .block_on(pondra_nexmark::replay(&node, &commits, |_| {}))
        .unwrap();
    assert_eq!(replayed, written);
    // The same events as appending straight from the generator.
    let direct = tempfile::tempdir().unwrap();
    let generated = runtime
        .block_on(async {
            let other = Node::open_folder(direct.path(), NodeOptions::default()).await?;
            pondra_nexmark::generate(&other, 20_000, 2_500, |_| {}).await?;
            Ok::<_, pondra_cluster::NodeError>(other)
        })
        .unwrap();
    for table in ["person", "auction", "bid"] {
        let all = format!("SELECT * FROM {table}");
        assert_eq!(
            sorted_rows(&node, &runtime, &all),
            sorted_rows(&generated, &runtime, &all),
            "{table}"
        );
    }
    runtime.block_on(generated.close()).unwrap();
    for (view, query) in views {
        let held = sorted_rows(&node, &runtime, &format!("SELECT * FROM {view}"));
        assert!(!held.is_empty(), "view {view} holds no rows");
        assert_eq!(held, sorted_rows(&node, &runtime, &query), "view {view}");
    }
    runtime.block_on(node.close()).unwrap();
}
