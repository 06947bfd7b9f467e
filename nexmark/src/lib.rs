//! `pondra nexmark gen`: Nexmark's three streams, made by the `nexmark` crate's generator,
//! appended to a lake batch by batch, as producers would append them: every batch is one
//! durable commit that keeps the views over the tables current.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray};
use arrow::datatypes::{Field, Schema};
use nexmark::EventGenerator;
use nexmark::config::NexmarkConfig;
use nexmark::event::{Auction, Bid, Event, Person};
use pondra_cluster::{Node, NodeError};

mod files;

pub use files::{read_parquet, replay, write_parquet};

/// The tables, with RisingWave's Nexmark columns; `date_time` carries a watermark.
pub const TABLES: [(&str, &str); 3] = [
    (
        "person",
        "CREATE TABLE person (id BIGINT, name VARCHAR, email_address VARCHAR, \
         credit_card VARCHAR, city VARCHAR, state VARCHAR, date_time TIMESTAMP, extra VARCHAR, \
         WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)",
    ),
    (
        "auction",
        "CREATE TABLE auction (id BIGINT, item_name VARCHAR, description VARCHAR, \
         initial_bid BIGINT, reserve BIGINT, date_time TIMESTAMP, expires TIMESTAMP, \
         seller BIGINT, category BIGINT, extra VARCHAR, \
         WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)",
    ),
    (
        "bid",
        "CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, \
         url VARCHAR, date_time TIMESTAMP, extra VARCHAR, \
         WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)",
    ),
];

/// The first event's time, in ms since the epoch (2026-01-01): fixed, so that two runs make the
/// same events.
const BASE_TIME_MS: u64 = 1_767_225_600_000;

/// How many events of each stream were appended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub persons: u64,
    pub auctions: u64,
    pub bids: u64,
}

impl Counts {
    pub fn total(&self) -> u64 {
        self.persons + self.auctions + self.bids
    }

    fn add(&mut self, more: Counts) {
        self.persons += more.persons;
        self.auctions += more.auctions;
        self.bids += more.bids;
    }
}

/// Creates the three tables in the lake behind `node` (unless they exist) and appends
/// `events` events to them, `batch` events per commit. `progress` is told the counts after
/// each commit.
pub async fn generate(
    node: &Arc<Node>,
    events: u64,
    batch: usize,
    mut progress: impl FnMut(Counts),
) -> Result<Counts, NodeError> {
    if batch == 0 {
        return Err(NodeError::Other("a batch needs at least one event".into()));
    }
    for (name, create) in TABLES {
        if node.snapshot().table(name).is_none() {
            node.execute(create).await?;
        }
    }
    let mut counts = Counts::default();
    for commit in EventBatches::new(events, batch) {
        let commit = commit?;
        for (name, rows) in &commit.tables {
            if rows.num_rows() > 0 {
                node.append(name, std::slice::from_ref(rows), None).await?;
            }
        }
        counts.add(commit.counts);
        progress(counts);
    }
    Ok(counts)
}

/// One commit's events: each table's rows, in [`TABLES`]' order.
pub struct Commit {
    pub tables: Vec<(&'static str, RecordBatch)>,
    pub counts: Counts,
}

/// The generator's events, `batch` at a time, as rows of the three tables.
pub struct EventBatches {
    generator: EventGenerator,
    left: u64,
    batch: usize,
}

impl EventBatches {
    /// The first `events` events, from the same start every time.
    pub fn new(events: u64, batch: usize) -> Self {
        let config = NexmarkConfig {
            base_time: BASE_TIME_MS,
            ..NexmarkConfig::default()
        };
        EventBatches {
            generator: EventGenerator::new(config),
            left: events,
            batch: batch.max(1),
        }
    }
}

impl Iterator for EventBatches {
    type Item = Result<Commit, NodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let take = self.left.min(self.batch as u64);
        self.left -= take;
        let mut batches = Batches::default();
        for event in self.generator.by_ref().take(take as usize) {
            batches.push(event);
        }
        let counts = batches.counts();
        Some(batches.finish().map(|tables| Commit { tables, counts }))
    }
}

/// Microseconds from the generator's milliseconds.
fn micros(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX / 1_000) * 1_000
}

fn id(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// One commit's events, by stream.
#[derive(Default)]
struct Batches {
    persons: Vec<Person>,
    auctions: Vec<Auction>,
    bids: Vec<Bid>,
}

impl Batches {
    fn push(&mut self, event: Event) {
        match event {
            Event::Person(p) => self.persons.push(p),
            Event::Auction(a) => self.auctions.push(a),
            Event::Bid(b) => self.bids.push(b),
        }
    }

    fn counts(&self) -> Counts {
        Counts {
            persons: self.persons.len() as u64,
            auctions: self.auctions.len() as u64,
            bids: self.bids.len() as u64,
        }
    }

    /// Each table's rows, in its columns' order.
    fn finish(&self) -> Result<Vec<(&'static str, RecordBatch)>, NodeError> {
        let p = &self.persons;
        let person: Vec<ArrayRef> = vec![
            ints(p.iter().map(|p| id(p.id))),
            texts(p.iter().map(|p| &p.name)),
            texts(p.iter().map(|p| &p.email_address)),
            texts(p.iter().map(|p| &p.credit_card)),
            texts(p.iter().map(|p| &p.city)),
            texts(p.iter().map(|p| &p.state)),
            times(p.iter().map(|p| p.date_time)),
            texts(p.iter().map(|p| &p.extra)),
        ];
        let a = &self.auctions;
        let auction: Vec<ArrayRef> = vec![
            ints(a.iter().map(|a| id(a.id))),
            texts(a.iter().map(|a| &a.item_name)),
            texts(a.iter().map(|a| &a.description)),
            ints(a.iter().map(|a| id(a.initial_bid))),
            ints(a.iter().map(|a| id(a.reserve))),
            times(a.iter().map(|a| a.date_time)),
            times(a.iter().map(|a| a.expires)),
            ints(a.iter().map(|a| id(a.seller))),
            ints(a.iter().map(|a| id(a.category))),
            texts(a.iter().map(|a| &a.extra)),
        ];
        let b = &self.bids;
        let bid: Vec<ArrayRef> = vec![
            ints(b.iter().map(|b| id(b.auction))),
            ints(b.iter().map(|b| id(b.bidder))),
            ints(b.iter().map(|b| id(b.price))),
            texts(b.iter().map(|b| &b.channel)),
            texts(b.iter().map(|b| &b.url)),
            times(b.iter().map(|b| b.date_time)),
            texts(b.iter().map(|b| &b.extra)),
        ];
        let tables = [("person", person), ("auction", auction), ("bid", bid)];
        tables
            .into_iter()
            .map(|(name, columns)| {
                let fields = columns
                    .iter()
                    .zip(column_names(name))
                    .map(|(c, n)| Field::new(n, c.data_type().clone(), true));
                let schema = Arc::new(Schema::new(fields.collect::<Vec<_>>()));
                Ok((name, RecordBatch::try_new(schema, columns)?))
            })
            .collect()
    }
}

/// The columns of `table`, from its definition in [`TABLES`].
fn column_names(table: &str) -> Vec<&'static str> {
    let (_, create) = TABLES
        .iter()
        .find(|(name, _)| *name == table)
        .expect("a table");
    let inner = &create[create.find('(').expect("columns") + 1..];
    inner
        .split(", ")
        .map(|column| column.trim().split(' ').next().expect("a name"))
        .take_while(|name| *name != "WATERMARK")
        .collect()
}

fn ints(values: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(values))
}

fn times(values: impl Iterator<Item = u64>) -> ArrayRef {
    Arc::new(TimestampMicrosecondArray::from_iter_values(
        values.map(micros),
    ))
}

fn texts<'a>(values: impl Iterator<Item = &'a String>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(values))
}
