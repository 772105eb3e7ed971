//! `loadgen open-txns`: leaves many transactions open on a Kafka listener, as crashed
//! transactional producers would, so recovery can be measured at a scale no pool of live
//! client producers reaches (librdkafka runs out of thread-local storage near a thousand).
//! Each transactional id `open-<i>` gets InitProducerId, AddPartitionsToTxn of one partition
//! and one transactional record (acks=all), then is abandoned: its transaction stays open
//! until the coordinator aborts it at `--due-unix-ms` (its transaction timeout).

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use shardlog::format::batch::{set_producer, set_transactional};
use shardlog::format::{BatchBuilder, RecordSpec};
use shardlog::kafka::blocking_client::BlockingClient;

#[derive(clap::Args)]
pub struct OpenTxnsArgs {
    /// The server's Kafka listener.
    #[arg(long, default_value = "127.0.0.1:9092")]
    kafka: String,
    /// An existing topic the transactions write to (id i writes partition i % partitions).
    #[arg(long)]
    topic: String,
    #[arg(long, default_value_t = 1)]
    partitions: i32,
    /// Transactions to leave open.
    #[arg(long, default_value_t = 10_000)]
    count: usize,
    /// When every transaction times out (ms since the epoch); each id's
    /// transaction.timeout.ms is set so that they all come due then.
    #[arg(long)]
    due_unix_ms: i64,
    /// Connections opening transactions in parallel.
    #[arg(long, default_value_t = 16)]
    connections: usize,
}

const CONCURRENT_TRANSACTIONS: i16 = 51;
const RETRIABLE: [i16; 4] = [14, 15, 16, CONCURRENT_TRANSACTIONS];

pub fn run(args: OpenTxnsArgs) -> Result<(), String> {
    let started = Instant::now();
    let workers: Vec<_> = (0..args.connections.max(1))
        .map(|w| {
            let (kafka, topic) = (args.kafka.clone(), args.topic.clone());
            let (count, step, partitions, due) = (
                args.count,
                args.connections.max(1),
                args.partitions,
                args.due_unix_ms,
            );
            std::thread::spawn(move || -> Result<usize, String> {
                let mut k = BlockingClient::connect_with_timeout(&kafka, Duration::from_secs(60))
                    .map_err(|e| format!("{kafka}: {e}"))?;
                let mut opened = 0;
                for i in (w..count).step_by(step) {
                    open_one(&mut k, &topic, i, i as i32 % partitions, due)?;
                    opened += 1;
                }
                Ok(opened)
            })
        })
        .collect();
    let mut opened = 0;
    for w in workers {
        opened += w.join().map_err(|_| "a worker panicked".to_string())??;
    }
    assert_eq!(opened, args.count, "every id was opened once");
    println!(
        "opened {opened} transactions in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Calls `request` until its error code (read by `code`) is not a retriable one.
fn call_retrying(
    k: &mut BlockingClient,
    key: ApiKey,
    version: i16,
    request: &RequestKind,
    code: impl Fn(&ResponseKind) -> i16,
) -> Result<ResponseKind, String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let response = k
            .call(key, version, request)
            .map_err(|e| format!("{key:?}: {e}"))?;
        match code(&response) {
            0 => return Ok(response),
            c if RETRIABLE.contains(&c) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            c => return Err(format!("{key:?}: error {c}")),
        }
    }
}

fn open_one(
    k: &mut BlockingClient,
    topic: &str,
    i: usize,
    partition: i32,
    due_unix_ms: i64,
) -> Result<(), String> {
    let id = TransactionalId(StrBytes::from_string(format!("open-{i}")));
    let now = shardlog::time::now_ms();
    let timeout_ms = (due_unix_ms - now).clamp(1_000, i32::MAX as i64) as i32;
    let init = RequestKind::InitProducerId(
        InitProducerIdRequest::default()
            .with_transactional_id(Some(id.clone()))
            .with_transaction_timeout_ms(timeout_ms)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1),
    );
    let ResponseKind::InitProducerId(init) =
        call_retrying(k, ApiKey::InitProducerId, 3, &init, |r| match r {
            ResponseKind::InitProducerId(r) => r.error_code,
            _ => -1,
        })?
    else {
        unreachable!("checked by the code reader")
    };
    let (pid, epoch) = (init.producer_id, init.producer_epoch);
    let topic_name = TopicName(StrBytes::from_string(topic.to_string()));
    let add = RequestKind::AddPartitionsToTxn(
        AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(id.clone())
            .with_v3_and_below_producer_id(pid)
            .with_v3_and_below_producer_epoch(epoch)
            .with_v3_and_below_topics(vec![
                add_partitions_to_txn_request::AddPartitionsToTxnTopic::default()
                    .with_name(topic_name.clone())
                    .with_partitions(vec![partition]),
            ]),
    );
    call_retrying(k, ApiKey::AddPartitionsToTxn, 3, &add, |r| match r {
        ResponseKind::AddPartitionsToTxn(r) => r
            .results_by_topic_v3_and_below
            .iter()
            .flat_map(|t| t.results_by_partition.iter())
            .map(|p| p.partition_error_code)
            .find(|&c| c != 0)
            .unwrap_or(r.error_code),
        _ => -1,
    })?;
    produce_open(k, &id, topic_name, partition, (pid.0, epoch))
}

/// One transactional record of producer (id, epoch), acks=all.
fn produce_open(
    k: &mut BlockingClient,
    id: &TransactionalId,
    topic: TopicName,
    partition: i32,
    (pid, epoch): (i64, i16),
) -> Result<(), String> {
    let mut batch = BatchBuilder::new(128)
        .record(RecordSpec::new(None, Some(b"open")).timestamp(shardlog::time::now_ms()))
        .build();
    set_producer(&mut batch, pid, epoch, 0);
    set_transactional(&mut batch);
    let produce = RequestKind::Produce(
        ProduceRequest::default()
            .with_transactional_id(Some(id.clone()))
            .with_acks(-1)
            .with_timeout_ms(30_000)
            .with_topic_data(vec![produce_request::TopicProduceData::default()
                .with_name(topic)
                .with_partition_data(vec![
                    produce_request::PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(Bytes::from(batch))),
                ])]),
    );
    call_retrying(k, ApiKey::Produce, 8, &produce, |r| match r {
        ResponseKind::Produce(r) => r
            .responses
            .iter()
            .flat_map(|t| t.partition_responses.iter())
            .map(|p| p.error_code)
            .find(|&c| c != 0)
            .unwrap_or(0),
        _ => -1,
    })?;
    Ok(())
}
