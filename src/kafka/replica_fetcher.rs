//! The follower's side of replication, one fetcher per shard and leader (Kafka's
//! ReplicaFetcherThread, thread-per-core): for the partitions this shard owns and follows,
//! it asks each partition's task for its next fetch (offset, last epoch, leader epoch),
//! sends them together to their leader as one Kafka Fetch v12 with this node's
//! `replica_id`, and hands each partition's answer back to its task (records appended
//! with the leader's offsets and epochs, or a truncation where the log diverged). A
//! partition whose leader moves leaves its old fetcher at the next view; a fetcher whose
//! leader leads nothing here stops.

use super::replica_quota::{self, Side};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::peer::Peer;
use super::wire_error::KafkaWireError;
use crate::partition_ops::{OpOk, PartitionOp};
use crate::replication::{FetchRequest as ReplicaFetch, NodeId};
use crate::shard::partition::replica::{LeaderAnswer, ReplicaOp, ReplicaReply};
use crate::shard::Shard;
use crate::TopicPartition;

const VERSION: i16 = 12;
/// A leader holds a fetch with nothing new this long (its long poll).
const MAX_WAIT_MS: i32 = 500;
/// What one fetch may bring back, and each partition of it.
const MAX_BYTES: i32 = 8 << 20;
const PARTITION_MAX_BYTES: i32 = 1 << 20;
/// How long a fetch may take past its long poll before the connection is dropped.
const SLACK: Duration = Duration::from_secs(5);
/// After a failed connection or fetch, the next try waits this long.
const BACKOFF: Duration = Duration::from_millis(200);
/// How soon the fetchers' partitions are looked at again while this node is still loading
/// or copying a cluster topic (otherwise each new view is).
const RETRY: Duration = Duration::from_millis(100);

/// The partitions this shard follows, by leader.
type Following = BTreeMap<NodeId, BTreeSet<TopicPartition>>;

/// What the shard's fetchers share: the partitions followed, and the leaders a fetcher
/// runs for. A fetcher leaves `running` in the same step it sees it has nothing left, so
/// a leader never gets a second fetcher while the first is still winding down (two would
/// each make the other's answers stale).
#[derive(Default)]
struct Fetchers {
    following: Following,
    running: BTreeSet<NodeId>,
}

/// Starts the shard's fetchers (cluster mode).
pub fn start(shard: &Rc<Shard>) {
    let Some(link) = shard.cluster_link() else {
        return;
    };
    let (shard, mut views) = (shard.clone(), link.views);
    crate::tasks::spawn(async move {
        let fetchers: Rc<std::cell::RefCell<Fetchers>> = Rc::default();
        while !shard.is_shutting_down() {
            let view = views.borrow_and_update().clone();
            // Until this node has loaded and copied every cluster topic, look again soon.
            let complete = shard.is_ready() && review(&shard, &view, &fetchers);
            let changed = async { views.changed().await.is_ok() };
            let go_on = match complete {
                true => changed.await,
                false => {
                    let retry = async {
                        glommio::timer::sleep(RETRY).await;
                        true
                    };
                    futures_lite::future::or(changed, retry).await
                }
            };
            if !go_on {
                break;
            }
        }
    })
    .detach();
}

/// The partitions this shard follows now, by leader; a fetcher starts for a new leader.
/// Whether this node had its copy of every cluster topic.
fn review(
    shard: &Rc<Shard>,
    view: &crate::cluster::ClusterView,
    fetchers: &Rc<std::cell::RefCell<Fetchers>>,
) -> bool {
    let me = shard.config().cluster.broker_id;
    let (here, complete) = crate::shard::cluster::replication::replicated_here(shard, view, me);
    let mut now = Following::new();
    for (tp, state) in here {
        if let Some(leader) = state.leader.filter(|&l| l != me) {
            now.entry(leader).or_default().insert(tp);
        }
    }
    let leaders: Vec<NodeId> = now.keys().copied().collect();
    let new: Vec<NodeId> = {
        let mut shared = fetchers.borrow_mut();
        // Set before any fetcher starts: a new one reads its partitions from it at once.
        shared.following = now;
        leaders
            .into_iter()
            .filter(|&l| shared.running.insert(l))
            .collect()
    };
    // A spawned fetcher may run at once: nothing is borrowed any more.
    for leader in new {
        let fetcher = Fetcher {
            shard: shard.clone(),
            leader,
            fetchers: fetchers.clone(),
            peer: None,
            failures: 0,
        };
        crate::tasks::spawn(fetcher.run()).detach();
    }
    complete
}

/// One fetcher: this shard's partitions led by `leader`, over one connection.
struct Fetcher {
    shard: Rc<Shard>,
    leader: NodeId,
    fetchers: Rc<std::cell::RefCell<Fetchers>>,
    peer: Option<Peer>,
    /// Fetches failed in a row (the first of a streak, and every `WARN_EVERY`th, is a
    /// warning: a refused login or a leader out of reach must reach the operator).
    failures: u64,
}

/// A failing fetcher warns once per this many failures in a row (a minute at `BACKOFF`).
const WARN_EVERY: u64 = 300;

impl Fetcher {
    async fn run(mut self) {
        tracing::debug!(
            leader = self.leader,
            shard = self.shard.id(),
            "replica fetcher started"
        );
        loop {
            if self.shard.is_shutting_down() {
                break;
            }
            let partitions = self.fetchers.borrow().following.get(&self.leader).cloned();
            let Some(partitions) = partitions.filter(|p| !p.is_empty()) else {
                // Nothing left: it stops in this same step, so no second one started.
                self.fetchers.borrow_mut().running.remove(&self.leader);
                break;
            };
            let asked = self.next_fetches(&partitions).await;
            if asked.is_empty() {
                glommio::timer::sleep(BACKOFF).await;
                continue;
            }
            match self.fetch(&asked).await {
                Ok(answers) => {
                    self.failures = 0;
                    self.hand_back(&asked, answers).await
                }
                Err(e) => {
                    self.failed(&e);
                    self.peer = None;
                    glommio::timer::sleep(BACKOFF).await;
                }
            }
        }
        tracing::debug!(
            leader = self.leader,
            shard = self.shard.id(),
            "replica fetcher stopped"
        );
    }

    /// Reports a failed fetch: a warning at the start of a streak and now and then after.
    fn failed(&mut self, e: &KafkaWireError) {
        let (leader, failures) = (self.leader, self.failures);
        match failures % WARN_EVERY {
            0 => {
                tracing::warn!(leader, failures, error = %e, "fetching from the leader failed; retrying")
            }
            _ => tracing::debug!(leader, error = %e, "a replica fetch failed; retrying"),
        }
        self.failures += 1;
    }

    /// Whether this node's copying of `tp` is throttled (follower.replication.throttled.*).
    fn throttled(&self, tp: &TopicPartition) -> bool {
        let me = self.shard.config().cluster.broker_id;
        let at = (&*tp.topic, tp.partition);
        replica_quota::throttles(&self.shard, Side::Follower, at, me)
    }

    /// Each partition's next fetch from its task, where it follows this leader.
    async fn next_fetches(
        &self,
        partitions: &BTreeSet<TopicPartition>,
    ) -> Vec<(TopicPartition, ReplicaFetch)> {
        let mut asked = Vec::new();
        for tp in partitions {
            if self.throttled(tp) && replica_quota::exceeded(&self.shard, Side::Follower) {
                continue;
            }
            let op = PartitionOp::Replica(ReplicaOp::NextFetch);
            let reply = self.shard.partition_op(&tp.topic, tp.partition, op).await;
            if let Ok(OpOk::Replica(ReplicaReply::NextFetch(Some((leader, request))))) = reply {
                if leader == self.leader {
                    asked.push((tp.clone(), request));
                }
            }
        }
        asked
    }

    /// One Fetch to the leader: its answer per partition, in the order asked.
    async fn fetch(
        &mut self,
        asked: &[(TopicPartition, ReplicaFetch)],
    ) -> Result<Vec<PartitionData>, KafkaWireError> {
        let request =
            RequestKind::Fetch(fetch_request(self.shard.config().cluster.broker_id, asked));
        let wait = Duration::from_millis(MAX_WAIT_MS as u64) + SLACK;
        let peer = self.connected().await?;
        let ResponseKind::Fetch(body) = peer.call(ApiKey::Fetch, VERSION, &request, wait).await?
        else {
            return Err(KafkaWireError::Unexpected("not a Fetch response".into()));
        };
        if body.error_code != 0 {
            return Err(KafkaWireError::Unexpected(format!(
                "the leader refused the fetch: {}",
                super::errors::describe(body.error_code)
            )));
        }
        answers_in_order(asked, body.responses)
    }

    async fn connected(&mut self) -> Result<&mut Peer, KafkaWireError> {
        if self.peer.is_none() {
            let view = self.shard.cluster();
            let security = self.shard.config().inter_broker_client();
            let addr = super::peer::peer_address(view.as_deref(), self.leader, security.protocol)?;
            let connected = Peer::connect(&addr, &security, SLACK, "shardlog-replica-fetcher");
            self.peer = Some(connected.await?);
        }
        Ok(self.peer.as_mut().expect("connected just now"))
    }

    /// Each partition's answer to its task; when the leader refused them all (it has not
    /// taken its leadership yet, or this node's epoch is behind), the next fetch waits.
    async fn hand_back(
        &self,
        asked: &[(TopicPartition, ReplicaFetch)],
        answers: Vec<PartitionData>,
    ) {
        let mut taken = 0;
        for ((tp, request), answer) in asked.iter().zip(answers) {
            let Some(answer) = leader_answer(tp, answer) else {
                continue;
            };
            taken += 1;
            if let LeaderAnswer::Records { records, .. } = &answer {
                if self.throttled(tp) {
                    replica_quota::record(&self.shard, Side::Follower, records.len());
                }
            }
            let op = ReplicaOp::Received {
                answered: *request,
                answer,
            };
            let reply = self
                .shard
                .partition_op(&tp.topic, tp.partition, PartitionOp::Replica(op))
                .await;
            if let Err(e) = reply {
                tracing::warn!(partition = %tp, error = %e, "a follower could not take its leader's records");
            }
        }
        if taken == 0 {
            glommio::timer::sleep(BACKOFF).await;
        }
    }
}

fn fetch_request(me: NodeId, asked: &[(TopicPartition, ReplicaFetch)]) -> FetchRequest {
    let mut topics: Vec<FetchTopic> = Vec::new();
    for (tp, r) in asked {
        let partition = FetchPartition::default()
            .with_partition(tp.partition)
            .with_current_leader_epoch(r.current_leader_epoch)
            .with_fetch_offset(r.fetch_offset)
            .with_last_fetched_epoch(r.last_fetched_epoch.unwrap_or(-1))
            .with_partition_max_bytes(PARTITION_MAX_BYTES);
        match topics
            .last_mut()
            .filter(|t| t.topic.0.as_str() == &*tp.topic)
        {
            Some(t) => t.partitions.push(partition),
            None => topics.push(
                FetchTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(tp.topic.to_string())))
                    .with_partitions(vec![partition]),
            ),
        }
    }
    let asked_count: usize = topics.iter().map(|t| t.partitions.len()).sum();
    assert_eq!(asked_count, asked.len(), "every partition asked once");
    assert!(me >= 0, "a replica fetch names its broker");
    FetchRequest::default()
        .with_replica_id(BrokerId(me))
        .with_max_wait_ms(MAX_WAIT_MS)
        .with_min_bytes(1)
        .with_max_bytes(MAX_BYTES)
        .with_topics(topics)
}

/// The response's partitions in the order asked (a leader answers every partition asked,
/// in order).
fn answers_in_order(
    asked: &[(TopicPartition, ReplicaFetch)],
    topics: Vec<kafka_protocol::messages::fetch_response::FetchableTopicResponse>,
) -> Result<Vec<PartitionData>, KafkaWireError> {
    let answers: Vec<(String, PartitionData)> = topics
        .into_iter()
        .flat_map(|t| {
            let name = t.topic.0.to_string();
            t.partitions.into_iter().map(move |p| (name.clone(), p))
        })
        .collect();
    let matches = answers.len() == asked.len()
        && asked
            .iter()
            .zip(&answers)
            .all(|((tp, _), (name, p))| *name == *tp.topic && p.partition_index == tp.partition);
    if !matches {
        return Err(KafkaWireError::Unexpected(
            "the leader's answer does not match the partitions asked".into(),
        ));
    }
    Ok(answers.into_iter().map(|(_, p)| p).collect())
}

/// A partition's answer as its task takes it; None for an error (the partition waits for
/// its next state: a new leader, or its own epoch catching up).
fn leader_answer(tp: &TopicPartition, p: PartitionData) -> Option<LeaderAnswer> {
    if p.error_code == super::errors::OFFSET_OUT_OF_RANGE && p.log_start_offset > 0 {
        // Below the leader's log start: the task starts over there if its log ends before.
        return Some(LeaderAnswer::StartsAt {
            log_start: p.log_start_offset,
        });
    }
    if p.error_code != 0 {
        tracing::debug!(partition = %tp, error = %super::errors::describe(p.error_code), "the leader refused a partition's fetch");
        return None;
    }
    if p.diverging_epoch.end_offset >= 0 {
        if p.records.as_ref().is_some_and(|r| !r.is_empty()) {
            tracing::warn!(partition = %tp, "the leader sent records with a divergence; ignored");
            return None;
        }
        return Some(LeaderAnswer::Diverging {
            epoch: p.diverging_epoch.epoch,
            end_offset: p.diverging_epoch.end_offset,
        });
    }
    Some(LeaderAnswer::Records {
        records: p.records.unwrap_or_default(),
        high_watermark: p.high_watermark,
    })
}
