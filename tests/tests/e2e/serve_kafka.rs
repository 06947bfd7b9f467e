//! The Kafka door (ADR 0077): real producers through it, and the idempotent producer's rules
//! spoken on the wire.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, InitProducerIdRequest, InitProducerIdResponse, ProduceRequest, ProduceResponse,
    RequestHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use crate::common::{Served, python, sql, stdout};

/// confluent-kafka and kafka-python write a typed table with a view, raw topics, a keyed
/// table's upserts and tombstones, and Debezium events checked against DuckDB's source.
#[test]
fn kafka_producers_write_tables() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(&dir.path().join("lake"), &["--kafka-port", "0"]);
    let printed = run_client(&served, "kafka_producers.py", &[]);
    assert!(printed.contains("kafka producers: ok"), "{printed}");
}

/// Runs the Python client `script` (under `tests/python`) with the server's Kafka address, its
/// Postgres port and `args`; returns what it printed, once it exits successfully.
fn run_client(served: &Served, script: &str, args: &[&str]) -> String {
    let pg_port = served.doors["pg"].rsplit_once(':').unwrap().1.to_string();
    let script = format!("{}/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let output = python()
        .arg(script)
        .arg(&served.doors["kafka"])
        .arg(&pg_port)
        .args(args)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    printed
}

/// A client of the door speaking Kafka's protocol by hand, one request at a time.
struct Client {
    socket: TcpStream,
    correlation: i32,
}

impl Client {
    fn connect(address: &str) -> Client {
        let socket = TcpStream::connect(address).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Client {
            socket,
            correlation: 0,
        }
    }

    /// Sends `request` as `api` at `version` and returns the answer's body.
    fn call(&mut self, api: ApiKey, version: i16, request: &impl Encodable) -> Bytes {
        self.correlation += 1;
        let mut header = RequestHeader::default();
        header.request_api_key = api as i16;
        header.request_api_version = version;
        header.correlation_id = self.correlation;
        header.client_id = Some(StrBytes::from_static_str("e2e"));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, api.request_header_version(version))
            .unwrap();
        request.encode(&mut body, version).unwrap();
        self.send_raw(&body);
        let mut answer = self.receive();
        let correlation = answer.get_i32();
        assert_eq!(correlation, self.correlation);
        if api.response_header_version(version) >= 1 {
            assert_eq!(
                answer.get_u8(),
                0,
                "no tagged fields in the answer's header"
            );
        }
        answer
    }

    fn send_raw(&mut self, body: &[u8]) {
        let mut framed = BytesMut::new();
        framed.put_i32(body.len() as i32);
        framed.extend_from_slice(body);
        self.socket.write_all(&framed).unwrap();
    }

    fn receive(&mut self) -> Bytes {
        let mut size = [0u8; 4];
        self.socket.read_exact(&mut size).unwrap();
        let mut answer = vec![0u8; i32::from_be_bytes(size) as usize];
        self.socket.read_exact(&mut answer).unwrap();
        Bytes::from(answer)
    }

    fn producer_id(&mut self) -> (i64, i16) {
        let mut request = InitProducerIdRequest::default();
        request.transactional_id = None;
        request.transaction_timeout_ms = 60_000;
        let mut answer = self.call(ApiKey::InitProducerId, 4, &request);
        let answer = InitProducerIdResponse::decode(&mut answer, 4).unwrap();
        assert_eq!(answer.error_code, 0);
        (answer.producer_id.0, answer.producer_epoch)
    }

    /// Produces `values` to `topic` as one batch of `producer` from `sequence`; returns the
    /// partition's error code.
    fn produce(
        &mut self,
        topic: &str,
        producer: (i64, i16),
        sequence: i32,
        values: &[&str],
    ) -> i16 {
        let records: Vec<Record> = values
            .iter()
            .enumerate()
            .map(|(i, value)| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: producer.0,
                producer_epoch: producer.1,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                sequence: sequence + i as i32,
                timestamp: 1_765_000_000_000,
                key: None,
                value: Some(Bytes::from(value.to_string())),
                headers: Default::default(),
            })
            .collect();
        let mut batch = BytesMut::new();
        let options = RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        };
        RecordBatchEncoder::encode(&mut batch, &records, &options).unwrap();
        let mut partition = PartitionProduceData::default();
        partition.index = 0;
        partition.records = Some(batch.freeze());
        let mut data = TopicProduceData::default();
        data.name = TopicName(StrBytes::from_string(topic.to_string()));
        data.partition_data = vec![partition];
        let mut request = ProduceRequest::default();
        request.acks = -1;
        request.timeout_ms = 30_000;
        request.topic_data = vec![data];
        let mut answer = self.call(ApiKey::Produce, 9, &request);
        let answer = ProduceResponse::decode(&mut answer, 9).unwrap();
        answer.responses[0].partition_responses[0].error_code
    }
}

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;

/// An idempotent producer's retry is written once, a gap in its sequence numbers is refused
/// and writes nothing, and a request the door cannot read closes only its connection.
#[test]
fn idempotent_producers_retries_and_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let served = Served::start(&lake, &["--kafka-port", "0"]);
    let address = served.doors["kafka"].clone();
    let mut client = Client::connect(&address);
    let producer = client.producer_id();
    assert_eq!(client.produce("events", producer, 0, &["a", "b", "c"]), 0);
    // The same batch again, as a client retries one whose answer it lost.
    assert_eq!(client.produce("events", producer, 0, &["a", "b", "c"]), 0);
    // A batch past a gap (sequence 3 was never sent).
    let gap = client.produce("events", producer, 5, &["x"]);
    assert_eq!(gap, OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_eq!(client.produce("events", producer, 3, &["d"]), 0);
    // Transactions are refused by name, with a code clients do not retry.
    let mut transactional = InitProducerIdRequest::default();
    transactional.transactional_id = Some(StrBytes::from_static_str("tx-1").into());
    transactional.transaction_timeout_ms = 60_000;
    let mut answer = client.call(ApiKey::InitProducerId, 4, &transactional);
    let answer = InitProducerIdResponse::decode(&mut answer, 4).unwrap();
    assert_eq!(answer.error_code, TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    // Another producer's numbers are its own.
    let other = client.producer_id();
    assert_ne!(other.0, producer.0);
    assert_eq!(client.produce("events", other, 0, &["e"]), 0);

    // Made-up bytes: the connection closes, the door keeps serving.
    let mut broken = Client::connect(&address);
    broken.send_raw(&[0, 0, 0, 9, 0, 0, 0, 1, 0xff, 0xff]);
    let mut byte = [0u8; 1];
    assert_eq!(broken.socket.read(&mut byte).unwrap_or(0), 0, "closed");
    let mut huge = Client::connect(&address);
    huge.socket.write_all(&i32::MAX.to_be_bytes()).unwrap();
    assert_eq!(huge.socket.read(&mut byte).unwrap_or(0), 0, "closed");
    assert_eq!(client.produce("events", other, 1, &["f"]), 0);

    // With auto-creation off, a topic with no table is unknown.
    let other = tempfile::tempdir().unwrap();
    let strict = Served::start(
        &other.path().join("lake"),
        &["--kafka-port", "0", "--kafka-auto-create=false"],
    );
    let mut strict_client = Client::connect(&strict.doors["kafka"]);
    let unknown = strict_client.produce("nowhere", (-1, -1), -1, &["x"]);
    assert_eq!(unknown, UNKNOWN_TOPIC_OR_PARTITION);

    let counted = sql(
        &lake,
        &["SELECT string_agg(value, '' ORDER BY value), count(*) FROM events"],
    );
    let printed = stdout(&counted);
    assert!(
        printed.contains("abcdef") && printed.contains(" 6 "),
        "{printed}"
    );
}

/// confluent-kafka and kafka-python consumers read tables by offset: groups commit, resume and
/// split partitions; a group's committed offset survives a restart of the server.
#[test]
fn kafka_consumers_read_tables_and_groups_resume() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    for phase in ["before", "after"] {
        let served = Served::start(&lake, &["--kafka-port", "0"]);
        let printed = run_client(&served, "kafka_consumers.py", &[phase]);
        assert!(
            printed.contains(&format!("kafka consumers ({phase}): ok")),
            "{printed}"
        );
        assert!(served.stop().success());
    }
}

/// An idempotent librdkafka producer writes through three nodes while the leader is killed
/// with SIGKILL: every acknowledged record is in the table exactly once, and no record twice.
#[test]
fn an_idempotent_producer_survives_a_killed_leader_exactly_once() {
    use crate::cluster_nodes::until;
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let mut nodes: Vec<Served> = (0..3)
        .map(|_| Served::start(&lake, &["--kafka-port", "0"]))
        .collect();
    let http = nodes[0].http();
    let (answer, status) = crate::common::curl(&[
        "-X",
        "POST",
        &format!("http://{http}/sql"),
        "--data-binary",
        "CREATE TABLE numbers (v BIGINT)",
    ]);
    assert_eq!(status, 200, "{answer}");
    // Every node knows the others' Kafka doors before the producer asks for brokers.
    until(Duration::from_secs(15), "three brokers", || {
        let url = format!("http://{http}/cluster");
        let (cluster, _) = crate::common::curl(&["-m", "5", &url]);
        (cluster.matches("\"kafka\":\"").count() == 3).then_some(())
    });
    let servers: Vec<String> = nodes.iter().map(|n| n.doors["kafka"].clone()).collect();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/python/kafka_failover.py");
    let producer = python()
        .arg(script)
        .arg(servers.join(","))
        .arg("8")
        .arg("numbers")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    // The first node leads, and the producer bootstrapped through it.
    let mut killed = nodes.remove(0);
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(killed.pid() as i32, libc::SIGKILL);
    }
    while killed.running() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let output = producer.wait_with_output().unwrap();
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{printed}");
    let mut lines = printed.lines();
    let summary = lines.next().unwrap_or_default();
    let acknowledged: Vec<i64> = lines
        .next()
        .unwrap_or_default()
        .split(',')
        .filter(|v| !v.is_empty())
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(!acknowledged.is_empty(), "{summary}");

    let survivor = nodes[0].http();
    let rows = until(Duration::from_secs(30), "the rows on a survivor", || {
        let (answer, status) = crate::common::curl(&[
            "-m",
            "20",
            "-X",
            "POST",
            &format!("http://{survivor}/sql"),
            "--data-binary",
            "SELECT v FROM numbers ORDER BY v",
        ]);
        (status == 200).then_some(answer)
    });
    let rows: serde_json::Value = serde_json::from_str(&rows).unwrap();
    let stored: Vec<i64> = rows["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[0].as_i64().unwrap())
        .collect();
    let mut distinct = stored.clone();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        stored.len(),
        "a record written twice ({summary})"
    );
    let missing: Vec<&i64> = acknowledged
        .iter()
        .filter(|v| stored.binary_search(v).is_err())
        .take(5)
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged but lost: {missing:?} ({summary})"
    );
    eprintln!("{summary}; {} stored", stored.len());
}

/// kcat (Debian's, librdkafka 2.0 from C) produces keyed lines to a raw topic the door creates
/// and reads them back from the start, with their offsets.
#[test]
fn kcat_produces_and_consumes_a_raw_topic() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let served = Served::start(&lake, &["--kafka-port", "0"]);
    let broker = served.doors["kafka"].clone();
    let lines: String = (0..500).map(|i| format!("k{i}:v{i}\n")).collect();
    let input = dir.path().join("lines.txt");
    std::fs::write(&input, lines).unwrap();
    let produced = std::process::Command::new("kcat")
        .args(["-b", &broker, "-P", "-t", "lines", "-K:", "-l"])
        .arg(&input)
        .output()
        .expect("kcat is installed by .ci/run (Debian's kafkacat)");
    assert!(produced.status.success(), "{produced:?}");
    let consumed = std::process::Command::new("kcat")
        .args([
            "-b",
            &broker,
            "-C",
            "-t",
            "lines",
            "-o",
            "beginning",
            "-c",
            "500",
            "-q",
        ])
        .args(["-f", "%o %k %s\n"])
        .output()
        .unwrap();
    assert!(consumed.status.success(), "{consumed:?}");
    let read = String::from_utf8_lossy(&consumed.stdout);
    let expected: String = (0..500).map(|i| format!("{i} k{i} v{i}\n")).collect();
    assert_eq!(read, expected);
    let counted = stdout(&sql(
        &lake,
        &["SELECT count(*), count(DISTINCT key) FROM lines"],
    ));
    assert!(
        counted.contains("500") && !counted.contains("499"),
        "{counted}"
    );
}
