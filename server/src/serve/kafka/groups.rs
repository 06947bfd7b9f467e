//! Consumer groups (ADR 0077): the lake's leader coordinates every group. Members and
//! generations live in its memory (a new leader's groups are rebuilt as their members rejoin,
//! as Kafka's are after a coordinator moves); committed offsets are catalog entries.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, FindCoordinatorRequest, FindCoordinatorResponse, HeartbeatRequest, HeartbeatResponse,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
    SyncGroupRequest, SyncGroupResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use pondra_cluster::ConsumerOffset;
use tokio::sync::Notify;

use super::KafkaDoor;

/// How long a new group waits for more members before its first generation (Kafka's
/// `group.initial.rebalance.delay.ms`, shortened: members of one application start together).
const INITIAL_DELAY: Duration = Duration::from_millis(500);

/// The longest a rebalance waits for known members to rejoin, whatever they asked.
const MAX_REBALANCE: Duration = Duration::from_secs(60);

/// The groups this node coordinates.
#[derive(Default)]
pub(super) struct Groups {
    groups: Mutex<HashMap<String, Arc<Group>>>,
}

struct Group {
    state: Mutex<GroupState>,
    /// Woken when a rebalance completes, assignments arrive or members leave.
    changed: Notify,
}

#[derive(Default)]
struct GroupState {
    generation: i32,
    phase: Phase,
    protocol_type: String,
    protocol: Option<String>,
    leader: Option<String>,
    /// Members in the order they first joined.
    members: BTreeMap<u64, Member>,
    next_member: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    #[default]
    Empty,
    /// Waiting for members to join a new generation until the deadline.
    Joining {
        deadline: Instant,
    },
    /// The generation is formed; the leader's assignments are awaited.
    Syncing,
    Stable,
}

struct Member {
    id: String,
    protocols: Vec<(String, Bytes)>,
    session_timeout: Duration,
    rebalance_timeout: Duration,
    last_seen: Instant,
    /// Joined the generation being formed.
    joined: bool,
    assignment: Bytes,
}

impl GroupState {
    fn member(&mut self, id: &str) -> Option<&mut Member> {
        self.members.values_mut().find(|m| m.id == id)
    }

    /// Starts forming a new generation, unless one is being formed.
    fn rebalance(&mut self, wait: Duration) {
        if !matches!(self.phase, Phase::Joining { .. }) {
            for member in self.members.values_mut() {
                member.joined = false;
            }
            self.phase = match self.members.is_empty() {
                true => Phase::Empty,
                false => Phase::Joining {
                    deadline: Instant::now() + wait,
                },
            };
        }
    }

    /// Drops members whose session ended unheard, and rebalances without them.
    fn expire(&mut self, now: Instant) {
        let forming = matches!(self.phase, Phase::Joining { .. });
        let before = self.members.len();
        self.members.retain(|_, m| {
            (forming && m.joined) || now.duration_since(m.last_seen) < m.session_timeout
        });
        if self.members.len() < before {
            let wait = self.rebalance_wait();
            self.rebalance(wait);
        }
    }

    fn rebalance_wait(&self) -> Duration {
        let asked = self.members.values().map(|m| m.rebalance_timeout).max();
        asked.unwrap_or(INITIAL_DELAY).min(MAX_REBALANCE)
    }

    /// Forms the generation if every member joined or the deadline passed: members that did
    /// not join are dropped, a protocol every member named is chosen, the first is leader.
    fn try_form(&mut self, now: Instant) -> bool {
        let Phase::Joining { deadline } = self.phase else {
            return false;
        };
        if now < deadline && self.members.values().any(|m| !m.joined) {
            return false;
        }
        self.members.retain(|_, m| m.joined);
        if self.members.is_empty() {
            self.phase = Phase::Empty;
            return true;
        }
        let first = self.members.values().next().expect("a member");
        let common = first.protocols.iter().map(|(name, _)| name).find(|name| {
            self.members
                .values()
                .all(|m| m.protocols.iter().any(|(n, _)| n == *name))
        });
        self.protocol = common.cloned();
        self.leader = Some(first.id.clone());
        self.generation += 1;
        self.phase = Phase::Syncing;
        for member in self.members.values_mut() {
            member.assignment = Bytes::new();
        }
        true
    }
}

impl Groups {
    fn group(&self, name: &str) -> Arc<Group> {
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        let group = groups.entry(name.to_string()).or_insert_with(|| {
            Arc::new(Group {
                state: Mutex::new(GroupState::default()),
                changed: Notify::new(),
            })
        });
        group.clone()
    }

    fn existing(&self, name: &str) -> Option<Arc<Group>> {
        let groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        groups.get(name).cloned()
    }

    /// Forgets `name` if its last member has left (its committed offsets stay in the lake).
    fn forget_if_empty(&self, name: &str) {
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        if groups
            .get(name)
            .is_some_and(|g| g.state().members.is_empty())
        {
            groups.remove(name);
        }
    }
}

impl Group {
    fn state(&self) -> std::sync::MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn refused<T: Default>(error: ResponseError, set: impl FnOnce(&mut T, i16)) -> T {
    let mut response = T::default();
    set(&mut response, error.code());
    response
}

impl KafkaDoor {
    /// Whether this node coordinates groups: the lake's leader does.
    fn coordinates(&self) -> bool {
        self.node.leads()
    }

    /// FindCoordinator: the lake's leader, for every group.
    pub(super) fn find_coordinator(
        &self,
        request: FindCoordinatorRequest,
        version: i16,
    ) -> FindCoordinatorResponse {
        let mut response = FindCoordinatorResponse::default();
        let found = self.coordinator_address();
        let keys = match version >= 4 {
            true => request.coordinator_keys,
            false => vec![request.key],
        };
        for key in keys {
            let mut coordinator = Coordinator::default();
            coordinator.key = key;
            match &found {
                Some((id, host, port)) => {
                    coordinator.node_id = BrokerId(*id);
                    coordinator.host = StrBytes::from_string(host.clone());
                    coordinator.port = *port;
                }
                None => {
                    coordinator.node_id = BrokerId(-1);
                    coordinator.error_code = ResponseError::CoordinatorNotAvailable.code();
                }
            }
            response.coordinators.push(coordinator);
        }
        // Before version 4 the one coordinator is the answer's own fields.
        if version < 4
            && let Some(first) = response.coordinators.pop()
        {
            response.error_code = first.error_code;
            response.node_id = first.node_id;
            response.host = first.host;
            response.port = first.port;
        }
        response
    }

    /// The leader's broker id, host and Kafka port, when it is known and has a Kafka door.
    fn coordinator_address(&self) -> Option<(i32, String, i32)> {
        let membership = self.server.membership.as_ref()?;
        let address = match self.node.leads() {
            true => membership.kafka()?.to_string(),
            false => {
                let leader = membership.leader_addr()?;
                let members = membership.members();
                members.into_iter().find(|m| m.addr == leader)?.kafka?
            }
        };
        let (host, port) = address.rsplit_once(':')?;
        Some((
            super::topics::broker_id(&address),
            host.to_string(),
            port.parse().ok()?,
        ))
    }

    /// JoinGroup: waits until the generation forms; the leader gets the members.
    pub(super) async fn join_group(&self, request: JoinGroupRequest) -> JoinGroupResponse {
        if !self.coordinates() {
            return refused(
                ResponseError::NotCoordinator,
                |r: &mut JoinGroupResponse, c| r.error_code = c,
            );
        }
        let group = self.groups.group(request.group_id.0.as_str());
        let (member_id, deadline) = {
            let mut state = group.state();
            let now = Instant::now();
            state.expire(now);
            if !state.protocol_type.is_empty()
                && state.protocol_type != request.protocol_type.as_str()
            {
                return refused(
                    ResponseError::InconsistentGroupProtocol,
                    |r: &mut JoinGroupResponse, c| r.error_code = c,
                );
            }
            state.protocol_type = request.protocol_type.as_str().to_string();
            let protocols: Vec<(String, Bytes)> = request
                .protocols
                .iter()
                .map(|p| (p.name.as_str().to_string(), p.metadata.clone()))
                .collect();
            let session_timeout = Duration::from_millis(request.session_timeout_ms.max(1) as u64);
            let rebalance_timeout = match request.rebalance_timeout_ms {
                ms if ms > 0 => Duration::from_millis(ms as u64),
                _ => session_timeout,
            };
            // A join starts a new generation (clearing who joined it) unless one is forming.
            let wait = match state.phase {
                Phase::Empty => INITIAL_DELAY,
                _ => state.rebalance_wait(),
            };
            state.rebalance(wait);
            let asked = request.member_id.as_str().to_string();
            let member_id = match state.member(&asked) {
                Some(member) => {
                    member.protocols = protocols;
                    member.session_timeout = session_timeout;
                    member.rebalance_timeout = rebalance_timeout;
                    member.last_seen = now;
                    member.joined = true;
                    asked
                }
                None if !asked.is_empty() => {
                    return refused(
                        ResponseError::UnknownMemberId,
                        |r: &mut JoinGroupResponse, c| r.error_code = c,
                    );
                }
                None => {
                    let id = format!("member-{:016x}", rand::random::<u64>());
                    let order = state.next_member;
                    state.next_member += 1;
                    state.members.insert(
                        order,
                        Member {
                            id: id.clone(),
                            protocols,
                            session_timeout,
                            rebalance_timeout,
                            last_seen: now,
                            joined: true,
                            assignment: Bytes::new(),
                        },
                    );
                    id
                }
            };
            if state.phase == Phase::Empty {
                state.phase = Phase::Joining {
                    deadline: now + INITIAL_DELAY,
                };
            }
            let Phase::Joining { deadline } = state.phase else {
                unreachable!("a group with a member that joined is forming a generation");
            };
            (member_id, deadline)
        };
        loop {
            let notified = group.changed.notified();
            {
                let mut state = group.state();
                let now = Instant::now();
                state.expire(now);
                if state.try_form(now) {
                    group.changed.notify_waiters();
                }
                if !matches!(state.phase, Phase::Joining { .. }) {
                    return joined(&mut state, &member_id);
                }
            }
            // Woken by the others, or to see sessions end, or at the deadline.
            let left = deadline.saturating_duration_since(Instant::now());
            let wait = left.clamp(Duration::from_millis(10), Duration::from_secs(1));
            let _ = tokio::time::timeout(wait, notified).await;
        }
    }

    /// SyncGroup: the leader hands out assignments; every member waits for its own.
    pub(super) async fn sync_group(&self, request: SyncGroupRequest) -> SyncGroupResponse {
        let error = |e: ResponseError| refused(e, |r: &mut SyncGroupResponse, c| r.error_code = c);
        if !self.coordinates() {
            return error(ResponseError::NotCoordinator);
        }
        let Some(group) = self.groups.existing(request.group_id.0.as_str()) else {
            return error(ResponseError::UnknownMemberId);
        };
        let member_id = request.member_id.as_str().to_string();
        loop {
            let notified = group.changed.notified();
            let wait = {
                let mut state = group.state();
                state.expire(Instant::now());
                if state.generation != request.generation_id {
                    return error(ResponseError::IllegalGeneration);
                }
                if matches!(state.phase, Phase::Joining { .. } | Phase::Empty) {
                    return error(ResponseError::RebalanceInProgress);
                }
                let leads = state.leader.as_deref() == Some(member_id.as_str());
                let Some(member) = state.member(&member_id) else {
                    return error(ResponseError::UnknownMemberId);
                };
                member.last_seen = Instant::now();
                if leads && state.phase == Phase::Syncing {
                    for given in &request.assignments {
                        if let Some(member) = state.member(given.member_id.as_str()) {
                            member.assignment = given.assignment.clone();
                        }
                    }
                    state.phase = Phase::Stable;
                    group.changed.notify_waiters();
                }
                if state.phase == Phase::Stable {
                    let mut response = SyncGroupResponse::default();
                    response.protocol_type =
                        Some(StrBytes::from_string(state.protocol_type.clone()));
                    response.protocol_name = state.protocol.clone().map(StrBytes::from_string);
                    let member = state.member(&member_id).expect("checked above");
                    response.assignment = member.assignment.clone();
                    return response;
                }
                state.rebalance_wait()
            };
            if tokio::time::timeout(wait, notified).await.is_err() {
                return error(ResponseError::RebalanceInProgress);
            }
        }
    }

    /// Heartbeat: keeps a member's session; tells it when the group rebalances.
    pub(super) fn heartbeat(&self, request: HeartbeatRequest) -> HeartbeatResponse {
        let code = match self.member_check(
            request.group_id.0.as_str(),
            request.member_id.as_str(),
            request.generation_id,
        ) {
            Ok(()) => 0,
            Err(error) => error.code(),
        };
        let mut response = HeartbeatResponse::default();
        response.error_code = code;
        response
    }

    /// Whether `member` of `group` is in `generation`, which is stable; notes it seen.
    fn member_check(
        &self,
        group: &str,
        member: &str,
        generation: i32,
    ) -> Result<(), ResponseError> {
        if !self.coordinates() {
            return Err(ResponseError::NotCoordinator);
        }
        let Some(group) = self.groups.existing(group) else {
            return Err(ResponseError::UnknownMemberId);
        };
        let mut state = group.state();
        let now = Instant::now();
        state.expire(now);
        let forming = matches!(state.phase, Phase::Joining { .. });
        let current = state.generation;
        let Some(found) = state.member(member) else {
            return Err(ResponseError::UnknownMemberId);
        };
        found.last_seen = now;
        if forming {
            return Err(ResponseError::RebalanceInProgress);
        }
        if current != generation {
            return Err(ResponseError::IllegalGeneration);
        }
        Ok(())
    }

    /// LeaveGroup: the members leave, and the others rebalance without them.
    pub(super) fn leave_group(
        &self,
        request: LeaveGroupRequest,
        version: i16,
    ) -> LeaveGroupResponse {
        let mut response = LeaveGroupResponse::default();
        if !self.coordinates() {
            response.error_code = ResponseError::NotCoordinator.code();
            return response;
        }
        let leaving: Vec<StrBytes> = match version >= 3 {
            true => request
                .members
                .iter()
                .map(|m| m.member_id.clone())
                .collect(),
            false => vec![request.member_id.clone()],
        };
        let group = self.groups.existing(request.group_id.0.as_str());
        for member_id in leaving {
            let mut answer = MemberResponse::default();
            answer.member_id = member_id.clone();
            let removed = group.as_ref().is_some_and(|group| {
                let mut state = group.state();
                let before = state.members.len();
                state.members.retain(|_, m| m.id != member_id.as_str());
                let removed = state.members.len() < before;
                if removed {
                    let wait = state.rebalance_wait();
                    state.rebalance(wait);
                    group.changed.notify_waiters();
                }
                removed
            });
            if !removed {
                answer.error_code = ResponseError::UnknownMemberId.code();
                if version < 3 {
                    response.error_code = answer.error_code;
                }
            }
            response.members.push(answer);
        }
        self.groups.forget_if_empty(request.group_id.0.as_str());
        // Before version 3 one member leaves, answered by the top-level error.
        if version < 3 {
            response.members.clear();
        }
        response
    }

    /// OffsetCommit: the offsets written to the lake, once durable.
    pub(super) async fn offset_commit(&self, request: OffsetCommitRequest) -> OffsetCommitResponse {
        let group = request.group_id.0.as_str().to_string();
        // A member of a managed group commits in its generation; a standalone consumer (-1)
        // and a group this coordinator has not seen since it took the lead commit freely.
        let checked = match request.generation_id_or_member_epoch {
            generation if generation >= 0 && self.groups.existing(&group).is_some() => {
                self.member_check(&group, request.member_id.as_str(), generation)
            }
            _ if !self.coordinates() => Err(ResponseError::NotCoordinator),
            _ => Ok(()),
        };
        let mut offsets = Vec::new();
        for topic in &request.topics {
            for partition in &topic.partitions {
                offsets.push(ConsumerOffset {
                    group: group.clone(),
                    topic: topic.name.0.as_str().to_string(),
                    partition: partition.partition_index,
                    offset: partition.committed_offset,
                    metadata: partition
                        .committed_metadata
                        .as_ref()
                        .map(|m| m.as_str().to_string()),
                });
            }
        }
        let outcome = match checked {
            Err(error) => Err(error),
            Ok(()) => self
                .node
                .commit_consumer_offsets(offsets)
                .await
                .map_err(|e| {
                    eprintln!("kafka: offsets of group {group} not committed: {e}");
                    ResponseError::CoordinatorNotAvailable
                }),
        };
        let code = outcome.err().map_or(0, |e| e.code());
        let mut response = OffsetCommitResponse::default();
        for topic in request.topics {
            let mut answer = OffsetCommitResponseTopic::default();
            answer.name = topic.name;
            for partition in topic.partitions {
                let mut result = OffsetCommitResponsePartition::default();
                result.partition_index = partition.partition_index;
                result.error_code = code;
                answer.partitions.push(result);
            }
            response.topics.push(answer);
        }
        response
    }

    /// OffsetFetch: the offsets a group committed (-1 where it committed none).
    pub(super) fn offset_fetch(&self, request: OffsetFetchRequest) -> OffsetFetchResponse {
        let mut response = OffsetFetchResponse::default();
        if !self.coordinates() {
            response.error_code = ResponseError::NotCoordinator.code();
            return response;
        }
        let group = request.group_id.0.as_str();
        let snapshot = self.node.snapshot();
        let committed = &snapshot.consumer_offsets;
        let asked: Vec<(String, Vec<i32>)> = match request.topics {
            Some(topics) => topics
                .into_iter()
                .map(|t| (t.name.0.as_str().to_string(), t.partition_indexes))
                .collect(),
            None => {
                let mut all: BTreeMap<String, Vec<i32>> = BTreeMap::new();
                for (g, topic, partition) in committed.keys() {
                    if g == group {
                        all.entry(topic.clone()).or_default().push(*partition);
                    }
                }
                all.into_iter().collect()
            }
        };
        for (topic, partitions) in asked {
            let mut answer = OffsetFetchResponseTopic::default();
            answer.name = TopicName(StrBytes::from_string(topic.clone()));
            for partition in partitions {
                let mut result = OffsetFetchResponsePartition::default();
                result.partition_index = partition;
                result.committed_leader_epoch = -1;
                let place = (group.to_string(), topic.clone(), partition);
                match committed.get(&place) {
                    Some(offset) => {
                        result.committed_offset = offset.offset;
                        result.metadata = offset.metadata.clone().map(StrBytes::from_string);
                    }
                    None => {
                        result.committed_offset = -1;
                        result.metadata = Some(StrBytes::from_static_str(""));
                    }
                }
                answer.partitions.push(result);
            }
            response.topics.push(answer);
        }
        response
    }
}

/// The answer to a member whose generation formed: the leader gets every member's metadata
/// for the chosen protocol.
fn joined(state: &mut GroupState, member_id: &str) -> JoinGroupResponse {
    let mut response = JoinGroupResponse::default();
    if state.member(member_id).is_none() {
        response.error_code = ResponseError::UnknownMemberId.code();
        return response;
    }
    response.generation_id = state.generation;
    response.protocol_type = Some(StrBytes::from_string(state.protocol_type.clone()));
    response.protocol_name = state.protocol.clone().map(StrBytes::from_string);
    response.leader = StrBytes::from_string(state.leader.clone().unwrap_or_default());
    response.member_id = StrBytes::from_string(member_id.to_string());
    if state.leader.as_deref() == Some(member_id) {
        let protocol = state.protocol.clone().unwrap_or_default();
        response.members = state
            .members
            .values()
            .map(|m| {
                let mut member = JoinGroupResponseMember::default();
                member.member_id = StrBytes::from_string(m.id.clone());
                member.metadata = m
                    .protocols
                    .iter()
                    .find(|(name, _)| *name == protocol)
                    .map(|(_, metadata)| metadata.clone())
                    .unwrap_or_default();
                member
            })
            .collect();
    }
    if state.protocol.is_none() {
        response.error_code = ResponseError::InconsistentGroupProtocol.code();
    }
    response
}
