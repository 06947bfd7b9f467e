"""An idempotent producer (librdkafka) writing numbered records through every node of a
cluster while the test kills the leader: prints how many records were acknowledged and, on
the next line, their numbers, for the test to find each in the table exactly once.

Usage: kafka_failover.py BOOTSTRAP_SERVERS SECONDS TOPIC.
"""

import json
import sys
import time

from confluent_kafka import Producer

servers, seconds, topic = sys.argv[1], float(sys.argv[2]), sys.argv[3]
producer = Producer({
    "bootstrap.servers": servers,
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 5,
    "message.timeout.ms": 120_000,
    "reconnect.backoff.max.ms": 500,
    "topic.metadata.refresh.interval.ms": 1000,
})
acknowledged = []
failed = []


def delivered(error, message):
    if error is None:
        acknowledged.append(json.loads(message.value())["v"])
    else:
        failed.append(str(error))


started = time.time()
number = 0
while time.time() - started < seconds:
    for _ in range(100):
        producer.produce(topic, value=json.dumps({"v": number}).encode(), on_delivery=delivered)
        number += 1
    producer.poll(0.01)
left = producer.flush(120)
assert left == 0, f"{left} records neither acknowledged nor failed"
assert not failed, failed[:5]
print(f"acknowledged {len(acknowledged)} of {number}")
print(",".join(str(v) for v in sorted(acknowledged)))
