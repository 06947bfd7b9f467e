//! A server's place in the cluster of its lake (ADR 0053). It joins as follower of a live
//! leader, or leads when none lives. A leader beats and watches for a later term, which makes
//! it follow; a follower long-polls the leader's stream of commits, judges the lease by its own
//! clock, and takes the next term when the lease lapses. A node started `--read-only` follows
//! and never leads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pondra_cluster::{
    BEAT_EVERY, Beating, Lake, Leader, Lease, Node, NodeOptions, Step, StreamedCommit, beat_of,
    highest_term, take_term,
};
use rand::Rng;

use crate::follow::{HttpLeader, live_leader};

/// How long the leader holds a long-poll of its stream open with nothing new.
pub const LONG_POLL: Duration = Duration::from_secs(1);

/// How often a follower that cannot reach the leader reads its beat.
const BEAT_CHECK: Duration = Duration::from_millis(250);

/// How many beats apart a leader flushes its catalog's write-ahead log (ADR 0053).
const FLUSH_EVERY_BEATS: u64 = 4;

/// A node no longer heard from is forgotten after this long.
const FORGET_AFTER: Duration = Duration::from_secs(60);

/// What a node is to the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeRole {
    Leader,
    Follower,
    Reader,
}

impl NodeRole {
    pub fn name(self) -> &'static str {
        match self {
            NodeRole::Leader => "leader",
            NodeRole::Follower => "follower",
            NodeRole::Reader => "reader",
        }
    }

    pub fn parse(name: &str) -> Option<NodeRole> {
        match name {
            "leader" => Some(NodeRole::Leader),
            "follower" => Some(NodeRole::Follower),
            "reader" => Some(NodeRole::Reader),
            _ => None,
        }
    }
}

/// Where a node's doors other than HTTP listen, as others reach them.
pub struct Doors {
    pub flight: String,
    pub kafka: Option<String>,
}

/// A node of the cluster as another knows it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Member {
    pub addr: String,
    pub role: String,
    pub last_seen_ms: u64,
    /// Where its Flight door listens, for the parts of spread queries (ADR 0076).
    #[serde(default)]
    pub flight: Option<String>,
    #[serde(default)]
    pub cores: Option<usize>,
    /// Where its Kafka door listens, if it has one (ADR 0077).
    #[serde(default)]
    pub kafka: Option<String>,
}

/// What a node knows of another.
#[derive(Clone, Debug)]
struct Known {
    role: NodeRole,
    seen: Instant,
    flight: Option<String>,
    cores: Option<usize>,
    kafka: Option<String>,
}

/// One answer of the leader's stream (`GET /cluster/commits`).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct StreamAnswer {
    pub term: u64,
    pub leader: String,
    pub nodes: Vec<Member>,
    /// The follower is behind the commits the leader keeps: it reads the catalog from the lake.
    #[serde(default)]
    pub behind: bool,
    #[serde(default)]
    pub commits: Vec<StreamedCommit>,
}

pub struct Membership {
    pub node: Arc<Node>,
    advertise: String,
    /// Where this node's Flight door listens, as others reach it.
    flight: String,
    /// Where this node's Kafka door listens, as clients reach it (ADR 0077).
    kafka: Option<String>,
    read_only: bool,
    /// Where this node sends its commits while it follows.
    leader: Arc<HttpLeader>,
    http: reqwest::Client,
    token: Option<String>,
    view: Mutex<View>,
    /// The origin of this node's monotonic clock, by which it judges the lease.
    clock: Instant,
}

struct View {
    /// Who leads, as this node judges it (the decisions of the election and the lease).
    lease: Lease,
    /// Beats while leading, and the commit the catalog's log was last flushed at.
    beats_led: u64,
    flushed_commit: u64,
    /// The term this node won and is opening the catalog's writer for.
    opening: Option<u64>,
    /// Whether the leader's stream has failed since its last answer.
    unheard: bool,
    /// While leading: the nodes that long-poll this one. While following: those the leader
    /// named in its last answer.
    members: HashMap<String, Known>,
    beating: Option<Beating>,
}

impl Membership {
    /// Opens the lake at `location` as a node of its cluster, reachable at `advertise`.
    pub async fn join(
        location: &str,
        options: NodeOptions,
        advertise: String,
        doors: Doors,
        read_only: bool,
        token: Option<String>,
    ) -> Result<Arc<Membership>, String> {
        let Doors { flight, kafka } = doors;
        let lake = Lake::open(location, options.cache.clone())
            .await
            .map_err(|e| format!("cannot open the lake at {location}: {e}"))?;
        let placeholder = "unknown";
        let leader = HttpLeader::new(placeholder, token.clone())?;
        let found = live_leader(&lake).await?;
        let opened = match (&found, read_only) {
            (Some((term, addr)), _) => {
                leader.set_addr(addr);
                let commits = (!read_only).then(|| leader.clone() as Arc<dyn Leader>);
                Node::open_following(lake, options, commits, *term).await
            }
            (None, true) => {
                let term = highest_term(&lake).await.map_err(|e| e.to_string())?;
                Node::open_following(lake, options, None, term).await
            }
            (None, false) => Node::open_to_beat(lake, options).await,
        };
        let node = opened.map_err(|e| format!("cannot open the lake at {location}: {e}"))?;
        let beating = node
            .leads()
            .then(|| Beating::start(node.lake().clone(), node.term().number, advertise.clone()));
        let lease = match (&found, node.leads()) {
            (_, true) => Lease::leading(node.term().number, &advertise, 0),
            (Some((term, addr)), false) => Lease::following(*term, Some(addr), read_only, 0),
            (None, false) => Lease::following(node.term().number, None, read_only, 0),
        };
        let view = View {
            lease,
            beats_led: 0,
            flushed_commit: 0,
            opening: None,
            unheard: false,
            members: HashMap::new(),
            beating,
        };
        let http = reqwest::Client::builder()
            .timeout(LONG_POLL + Duration::from_secs(2))
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        Ok(Arc::new(Membership {
            node,
            advertise,
            flight,
            kafka,
            read_only,
            leader,
            http,
            token,
            view: Mutex::new(view),
            clock: Instant::now(),
        }))
    }

    /// Keeps this node's role until the task is aborted.
    pub fn start(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let membership = self.clone();
        tokio::spawn(async move {
            loop {
                if membership.node.leads() {
                    membership.lead_a_while().await;
                } else {
                    membership.follow_a_while().await;
                }
            }
        })
    }

    /// Stops beating; a leader marks its term ended, so that the next node leads at once.
    pub async fn leave(&self) {
        let beating = self.view().beating.take();
        if let Some(beating) = beating
            && let Err(e) = beating.end().await
        {
            eprintln!("cannot mark the term ended: {e}");
        }
    }

    /// Milliseconds of this node's monotonic clock.
    fn now_ms(&self) -> u64 {
        self.clock.elapsed().as_millis() as u64
    }

    fn view(&self) -> std::sync::MutexGuard<'_, View> {
        self.view.lock().expect("membership lock")
    }

    pub fn role(&self) -> NodeRole {
        match (self.node.leads(), self.read_only) {
            (true, _) => NodeRole::Leader,
            (false, true) => NodeRole::Reader,
            (false, false) => NodeRole::Follower,
        }
    }

    /// The term this node won and is opening the catalog for, if it is.
    pub fn opening(&self) -> Option<u64> {
        self.view().opening
    }

    pub fn leader_addr(&self) -> Option<String> {
        self.view().lease.leader().map(String::from)
    }

    pub fn advertise(&self) -> &str {
        &self.advertise
    }

    /// Notes a node that long-polls this one, with its doors and cores.
    pub fn register(&self, addr: &str, role: NodeRole, doors: Doors, cores: Option<usize>) {
        if addr != self.advertise {
            let known = Known {
                role,
                seen: Instant::now(),
                flight: Some(doors.flight).filter(|f| !f.is_empty()),
                cores,
                kafka: doors.kafka,
            };
            self.view().members.insert(addr.to_string(), known);
        }
    }

    pub fn flight(&self) -> &str {
        &self.flight
    }

    pub fn kafka(&self) -> Option<&str> {
        self.kafka.as_deref()
    }

    /// Every node this one knows, itself first.
    pub fn members(&self) -> Vec<Member> {
        let mut view = self.view();
        view.members
            .retain(|_, known| known.seen.elapsed() < FORGET_AFTER);
        let mut members = vec![Member {
            addr: self.advertise.clone(),
            role: self.role().name().into(),
            last_seen_ms: 0,
            flight: Some(self.flight.clone()),
            cores: Some(pondra_cluster::process_threads()),
            kafka: self.kafka.clone(),
        }];
        let mut others: Vec<_> = view
            .members
            .iter()
            .map(|(addr, known)| Member {
                addr: addr.clone(),
                role: known.role.name().into(),
                last_seen_ms: known.seen.elapsed().as_millis() as u64,
                flight: known.flight.clone(),
                cores: known.cores,
                kafka: known.kafka.clone(),
            })
            .collect();
        others.sort_by(|a, b| a.addr.cmp(&b.addr));
        members.extend(others);
        members
    }

    /// Leads until a later term shows: then follows it. Every few beats, moves the commits
    /// made since out of the catalog's write-ahead log, which the next leader would replay.
    async fn lead_a_while(&self) {
        tokio::time::sleep(BEAT_EVERY).await;
        let due = {
            let mut view = self.view();
            view.beats_led += 1;
            view.beats_led.is_multiple_of(FLUSH_EVERY_BEATS)
                && view.flushed_commit < self.node.snapshot().commit
        };
        if due {
            match self.node.flush_catalog_log().await {
                Ok(commit) => self.view().flushed_commit = commit,
                Err(e) => eprintln!("cannot flush the catalog's log: {e}"),
            }
        }
        let highest = match highest_term(self.node.lake()).await {
            Ok(highest) => highest,
            Err(e) => {
                eprintln!("cannot read the terms: {e}");
                return;
            }
        };
        let now = self.now_ms();
        let (step, beating) = {
            let mut view = self.view();
            let superseded = view.beating.as_ref().is_some_and(Beating::superseded);
            let step = match self.node.is_fenced() || superseded {
                true => view.lease.fenced(highest, now),
                false => view.lease.saw_highest_term(highest, now),
            };
            let beating = match step {
                Step::StepDown { .. } => {
                    view.members.clear();
                    view.beating.take()
                }
                _ => None,
            };
            (step, beating)
        };
        if let Step::StepDown { term } = step {
            eprintln!(
                "{}: another writer replaced this node's term {} (term {term} now): following",
                self.advertise,
                self.node.term().number
            );
            // Dropped without ending: the term is not this node's to end.
            drop(beating);
            self.node.follow(self.commits_to(), term).await;
        }
    }

    /// Where a follower's commits go: the leader, unless this node only reads.
    fn commits_to(&self) -> Option<Arc<dyn Leader>> {
        (!self.read_only).then(|| self.leader.clone() as Arc<dyn Leader>)
    }

    /// One long-poll of the leader's stream, or, when the leader does not answer, one look at
    /// its beat; takes the next term when the lease has lapsed.
    async fn follow_a_while(&self) {
        let leader = self.leader_addr();
        let answered = match &leader {
            Some(addr) => self.poll_stream(addr).await,
            None => Err("no leader known".into()),
        };
        match answered {
            Ok(()) => {
                let now = self.now_ms();
                let mut view = self.view();
                view.lease.heard(now);
                view.unheard = false;
                return;
            }
            // Said once per spell without answers.
            Err(e) if leader.is_some() && !std::mem::replace(&mut self.view().unheard, true) => {
                eprintln!("{}: the leader's stream: {e}", self.advertise);
            }
            Err(_) => {}
        }
        tokio::time::sleep(BEAT_CHECK).await;
        let lake = self.node.lake();
        let read = async {
            let highest = highest_term(lake).await?;
            let beat = match highest {
                0 => None,
                term => beat_of(lake, term).await?,
            };
            Ok::<_, pondra_cluster::NodeError>((highest, beat))
        };
        let (highest, beat) = match read.await {
            Ok(read) => read,
            Err(e) => {
                eprintln!("cannot read the leader's beat: {e}");
                return;
            }
        };
        let now = self.now_ms();
        let step = self.view().lease.saw_beat(highest, beat.as_ref(), now);
        match step {
            Step::Stay => {}
            // The new leader's stream goes on from the commit this node holds: both are
            // prefixes of one durable history. One that cannot says so, and the catalog is
            // read from the lake then.
            Step::Follow { term, addr } => {
                self.leader.set_addr(&addr);
                self.node.follow(self.commits_to(), term).await;
            }
            Step::Contend { term } => {
                let jitter = Lease::jitter(rand::rng().random::<f64>());
                tokio::time::sleep(jitter).await;
                self.contend(term).await;
            }
            Step::StepDown { .. } => unreachable!("a follower does not step down"),
        }
    }

    /// Contends for term `term`, the one after the term this node follows, and no later one:
    /// a later term taken already is another node's win, which this one follows. Leads the
    /// term when won.
    async fn contend(&self, term: u64) {
        let won = match highest_term(self.node.lake()).await {
            Ok(highest) if !self.view().lease.may_take(term, highest) => Ok(false),
            Ok(_) => take_term(self.node.lake(), term, &self.advertise).await,
            Err(e) => Err(e),
        };
        match won {
            Ok(true) => {}
            Ok(false) => {
                // Another node won: its beat names it.
                let now = self.now_ms();
                self.view().lease.lost(now);
                return;
            }
            Err(e) => {
                eprintln!("cannot contend for term {term}: {e}");
                return;
            }
        }
        // Beating from the win on, while the catalog opens: a term without a beat would look
        // dead to the others.
        let beating = Beating::start(self.node.lake().clone(), term, self.advertise.clone());
        let started = Instant::now();
        self.view().opening = Some(term);
        let taken = self.node.take_over(term).await;
        let opened = started.elapsed();
        // Followers behind this leader's stream read the catalog from the lake, replaying the
        // write-ahead log the last leader left: flushed into the tree before this node
        // answers them, their reads skip it (on a busy bucket, seconds of replay).
        let flushed = match &taken {
            Ok(()) => self.node.flush_catalog_log().await,
            Err(_) => Ok(0),
        };
        self.view().opening = None;
        match taken {
            Ok(()) => {
                let now = self.now_ms();
                let mut view = self.view();
                view.lease.won(term, &self.advertise, now);
                view.members.clear();
                view.beating = Some(beating);
                match flushed {
                    Ok(commit) => view.flushed_commit = commit,
                    Err(e) => eprintln!("cannot flush the catalog's log: {e}"),
                }
                self.leader.set_addr(&self.advertise);
                eprintln!(
                    "{}: leading term {term} (opened the catalog in {opened:?}, flushed its log in {:?})",
                    self.advertise,
                    started.elapsed() - opened
                );
            }
            // The beat stops with `beating` dropped: after a lapse another node contends.
            Err(e) => eprintln!("won term {term} but cannot open the catalog: {e}"),
        }
    }

    /// One long-poll of the leader's stream at `addr`, applied to the catalog.
    async fn poll_stream(&self, addr: &str) -> Result<(), String> {
        let after = self.node.snapshot().commit;
        let url = format!(
            "http://{addr}/cluster/commits?after={after}&addr={}&role={}&flight={}&cores={}{}",
            self.advertise,
            self.role().name(),
            self.flight,
            pondra_cluster::process_threads(),
            match &self.kafka {
                Some(kafka) => format!("&kafka={kafka}"),
                None => String::new(),
            }
        );
        let mut request = self.http.get(&url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let text = response.text().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("{status}: {text}"));
        }
        let answer: StreamAnswer =
            serde_json::from_str(&text).map_err(|e| format!("not a stream answer: {e}"))?;
        if answer.term < self.node.term().number {
            return Err(format!("it leads term {}, an old one", answer.term));
        }
        {
            let mut view = self.view();
            view.members = answer
                .nodes
                .iter()
                .filter(|m| m.addr != self.advertise)
                .filter_map(|m| {
                    let role = NodeRole::parse(&m.role)?;
                    let ago = Duration::from_millis(m.last_seen_ms);
                    let seen = Instant::now().checked_sub(ago).unwrap_or_else(Instant::now);
                    let known = Known {
                        role,
                        seen,
                        flight: m.flight.clone(),
                        cores: m.cores,
                        kafka: m.kafka.clone(),
                    };
                    Some((m.addr.clone(), known))
                })
                .collect();
        }
        if answer.behind {
            let started = Instant::now();
            self.node
                .reload_catalog()
                .await
                .map_err(|e| e.to_string())?;
            eprintln!(
                "{}: behind the leader's stream: read the catalog from the lake in {:?}",
                self.advertise,
                started.elapsed()
            );
            return Ok(());
        }
        self.node
            .apply_streamed(answer.commits)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}
