//! A partition's side of transactions (Kafka's KIP-98): the markers a transaction's end
//! writes, the last stable offset that read_committed readers stop at, and the aborted
//! transactions a read overlaps. Producer state tracks each producer's open transaction
//! (`producer_state`); the index of aborted ones is `txn_index`.

use super::partition::{visible_prefix, AppendInfo, PartitionLog};
use crate::error::Result;
use crate::format::batch::set_base_offset;
use crate::format::control::{marker_batch, EndTxnMarker};
use crate::format::cursor::BatchCursor;
use crate::io::chain::ByteChain;

impl PartitionLog {
    /// Writes the marker ending `producer_id`'s transaction (the coordinator's call):
    /// refused for an epoch older than the producer's here (a zombie); accepted, and
    /// completing nothing, when the producer has no open transaction here (markers may be
    /// sent again after a coordinator restart).
    pub async fn append_marker(
        &mut self,
        producer_id: i64,
        epoch: i16,
        marker: EndTxnMarker,
    ) -> Result<AppendInfo> {
        self.check_healthy().await?;
        self.producers.check_marker(producer_id, epoch)?;
        let mut batch = marker_batch(producer_id, epoch, marker, crate::time::now_ms());
        set_base_offset(&mut batch, self.log_end_offset());
        let info = self.append_with_assigned_offsets(&batch).await?;
        // The marker ended the producer's transaction here, whatever it held.
        assert!(!self.producers.has_open_txn(producer_id));
        Ok(info)
    }

    /// Appends a batch a coordinator wrote for a producer's transaction (offsets sent inside
    /// it, to an offsets partition): offsets from the log end, the producer's epoch checked
    /// as a marker's, no sequence (Kafka's coordinator origin).
    pub async fn append_for_coordinator(&mut self, batch: &[u8]) -> Result<AppendInfo> {
        self.check_healthy().await?;
        let header = crate::format::BatchHeader::parse(batch)
            .map_err(|source| crate::error::Error::InvalidBatch { at: 0, source })?;
        self.producers
            .check_marker(header.producer_id, header.producer_epoch)?;
        let mut batch = batch.to_vec();
        set_base_offset(&mut batch, self.log_end_offset());
        self.append_with_assigned_offsets(&batch).await
    }

    /// The offset below which every transaction is decided (Kafka's LSO): the first offset
    /// of the earliest open transaction, else the visible end.
    pub fn last_stable_offset(&self) -> i64 {
        let end = self.visible_end_offset();
        self.producers
            .first_unstable_offset()
            .map_or(end, |first| first.min(end))
    }

    /// A read_committed read (Kafka's FetchIsolation.TXN_COMMITTED): as `read_bounded`,
    /// with only the batches below the last stable offset, and the aborted transactions
    /// those batches overlap (the client drops their records).
    pub async fn read_committed(
        &mut self,
        offset: i64,
        max_bytes: usize,
        at_least_one: bool,
    ) -> Result<(ByteChain, Vec<(i64, i64)>)> {
        let stable = self.last_stable_offset();
        let data = self.read_bounded(offset, max_bytes, at_least_one).await?;
        let data = visible_prefix(data, stable);
        let upper = BatchCursor::new(&data)
            .filter_map(|step| step.ok())
            .last()
            .map(|(_, h)| h.last_offset() + 1);
        let aborted = upper.map_or_else(Vec::new, |upper| self.aborted_transactions(offset, upper));
        Ok((data, aborted))
    }

    /// The producers this partition remembers (Kafka's DescribeProducers).
    pub fn producers(&self) -> Vec<crate::log::producer_state::ActiveProducer> {
        self.producers.describe()
    }

    /// (producer id, first offset) of the aborted transactions that records in
    /// `[from, upper)` may belong to: what a read_committed fetch answers with them.
    pub fn aborted_transactions(&self, from: i64, upper: i64) -> Vec<(i64, i64)> {
        self.aborted.overlapping(from, upper)
    }
}
