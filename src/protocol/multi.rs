//! Multi-partition Produce and Fetch (PROTOCOL.md, keys 21 and 22): one request for many
//! partitions, as Kafka's Produce and Fetch carry, so a client pays one round trip for all
//! of them; the server runs them on their owner shards at once.

use bytes::Bytes;

use super::frame::FrameBuilder;
use super::wire::{WireError, WireReader, WireWriter};
use super::ErrorCode;
use crate::io::chain::ByteChain;

/// Most partitions one multi-partition request may name.
pub const MAX_PARTITIONS: usize = 1000;

/// A partition's part of a MultiProduce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceEntry {
    pub topic: String,
    pub partition: i32,
    pub records: Bytes,
}

/// A partition's part of a MultiFetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchEntry {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub max_bytes: i32,
}

/// A partition's outcome: `error` is `None` on success.
pub type PartitionError = Option<(ErrorCode, String)>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Produced {
    pub topic: String,
    pub partition: i32,
    pub error: PartitionError,
    pub base_offset: i64,
    pub last_offset: i64,
    pub log_append_time: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    pub topic: String,
    pub partition: i32,
    pub error: PartitionError,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub records: ByteChain,
}

fn put_error(w: &mut WireWriter, e: &PartitionError) {
    match e {
        None => w.i16(0).nullable_string(None),
        Some((code, msg)) => w.i16(*code as i16).nullable_string(Some(msg)),
    };
}

fn get_error(r: &mut WireReader<'_>) -> Result<PartitionError, WireError> {
    let code = r.i16("error_code")?;
    let msg = r.nullable_string("error_message")?;
    Ok((code != 0).then(|| {
        let code = ErrorCode::from_i16(code).unwrap_or(ErrorCode::Internal);
        (code, msg.unwrap_or_default())
    }))
}

pub fn put_produce_request(w: &mut WireWriter, acks: i16, entries: &[ProduceEntry]) {
    w.i16(acks).i32(entries.len() as i32);
    for e in entries {
        w.string(&e.topic).i32(e.partition).bytes(&e.records);
    }
}

pub fn get_produce_request(r: &mut WireReader<'_>) -> Result<(i16, Vec<ProduceEntry>), WireError> {
    let acks = r.i16("acks")?;
    let n = r.count("partition count", 10)?.unwrap_or(0);
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        entries.push(ProduceEntry {
            topic: r.string("topic name")?,
            partition: r.i32("partition")?,
            records: r.bytes("records")?,
        });
    }
    Ok((acks, entries))
}

pub fn put_fetch_request(w: &mut WireWriter, max_bytes: i32, entries: &[FetchEntry]) {
    w.i32(max_bytes).i32(entries.len() as i32);
    for e in entries {
        w.string(&e.topic)
            .i32(e.partition)
            .i64(e.offset)
            .i32(e.max_bytes);
    }
}

pub fn get_fetch_request(r: &mut WireReader<'_>) -> Result<(i32, Vec<FetchEntry>), WireError> {
    let max_bytes = r.i32("max_bytes")?;
    let n = r.count("partition count", 18)?.unwrap_or(0);
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        entries.push(FetchEntry {
            topic: r.string("topic name")?,
            partition: r.i32("partition")?,
            offset: r.i64("offset")?,
            max_bytes: r.i32("partition max_bytes")?,
        });
    }
    Ok((max_bytes, entries))
}

pub fn put_produced(w: &mut WireWriter, all: &[Produced]) {
    w.i32(all.len() as i32);
    for p in all {
        w.string(&p.topic).i32(p.partition);
        put_error(w, &p.error);
        w.i64(p.base_offset)
            .i64(p.last_offset)
            .i64(p.log_append_time);
    }
}

pub fn get_produced(r: &mut WireReader<'_>) -> Result<Vec<Produced>, WireError> {
    let n = r.count("partition count", 34)?.unwrap_or(0);
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(Produced {
            topic: r.string("topic name")?,
            partition: r.i32("partition")?,
            error: get_error(r)?,
            base_offset: r.i64("base_offset")?,
            last_offset: r.i64("last_offset")?,
            log_append_time: r.i64("log_append_time")?,
        });
    }
    Ok(out)
}

/// The records of each partition go into the frame as the slices they are.
pub fn put_fetched(f: &mut FrameBuilder, all: &[Fetched]) {
    f.w.i32(all.len() as i32);
    for p in all {
        f.w.string(&p.topic).i32(p.partition);
        put_error(&mut f.w, &p.error);
        f.w.i64(p.log_start_offset).i64(p.log_end_offset);
        f.records(&p.records);
    }
}

pub fn get_fetched(r: &mut WireReader<'_>) -> Result<Vec<Fetched>, WireError> {
    let n = r.count("partition count", 30)?.unwrap_or(0);
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(Fetched {
            topic: r.string("topic name")?,
            partition: r.i32("partition")?,
            error: get_error(r)?,
            log_start_offset: r.i64("log_start_offset")?,
            log_end_offset: r.i64("log_end_offset")?,
            records: r.bytes("records")?.into(),
        });
    }
    Ok(out)
}
