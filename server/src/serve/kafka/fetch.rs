//! Fetch (ADR 0077): a table's rows as records by offset. Offsets land in step 2; until then
//! every partition asked for is answered with an error, and the refusal is logged.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{FetchRequest, FetchResponse};

/// Refuses every partition of a Fetch: reading tables by offset is not built yet.
pub(super) fn fetch_refused(request: FetchRequest) -> FetchResponse {
    let mut response = FetchResponse::default();
    for topic in request.topics {
        eprintln!(
            "kafka: a fetch of {} refused: Fetch is not served yet (ADR 0077, step 2)",
            topic.topic.0.as_str()
        );
        let mut answer = FetchableTopicResponse::default();
        answer.topic = topic.topic;
        for partition in topic.partitions {
            let mut data = PartitionData::default();
            data.partition_index = partition.partition;
            data.error_code = ResponseError::UnsupportedVersion.code();
            data.high_watermark = -1;
            data.last_stable_offset = -1;
            data.log_start_offset = -1;
            answer.partitions.push(data);
        }
        response.responses.push(answer);
    }
    response
}
