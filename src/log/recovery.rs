//! Recovery scan of one segment after an unclean shutdown: read the `.log` sequentially at
//! device speed (1 MiB reads, several in flight), validate every batch (size, magic, CRC,
//! offsets increasing and inside the segment's range) and rebuild the segment's indexes on
//! the way. The scan stops at the first invalid batch; everything from there on (a torn
//! write, the zero padding of the last direct write, garbage) is what the caller truncates.

use std::collections::VecDeque;
use std::path::Path;
use std::rc::Rc;

use glommio::Task;

use super::index_state::IndexState;
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::format::batch::{check_framing_and_crc, LOG_OVERHEAD, MIN_BATCH_LENGTH};
use crate::io::StorageFile;

const READ_CHUNK: usize = 1 << 20;
const READ_AHEAD: usize = 4;

/// What a scan found.
pub struct ScanOutcome {
    /// End of the last valid batch.
    pub valid_size: u64,
    /// Size of the file on disk.
    pub file_size: u64,
    /// Why the scan stopped before the end of the file, if it did.
    pub stop_reason: Option<String>,
    pub state: IndexState,
}

/// Reads a file front to back with `READ_AHEAD` reads in flight.
struct SequentialReader {
    file: Rc<dyn StorageFile>,
    next_pos: u64,
    end: u64,
    in_flight: VecDeque<Task<std::io::Result<Vec<u8>>>>,
}

impl SequentialReader {
    fn new(file: Rc<dyn StorageFile>, end: u64) -> Self {
        let mut r = SequentialReader {
            file,
            next_pos: 0,
            end,
            in_flight: VecDeque::new(),
        };
        r.fill();
        r
    }

    fn fill(&mut self) {
        while self.in_flight.len() < READ_AHEAD && self.next_pos < self.end {
            let pos = self.next_pos;
            let len = ((self.end - pos) as usize).min(READ_CHUNK);
            let file = self.file.clone();
            self.in_flight.push_back(glommio::spawn_local(
                async move { file.read_at(pos, len).await },
            ));
            self.next_pos += len as u64;
        }
    }

    /// The next chunk, or `None` at the end.
    async fn next(&mut self) -> Option<std::io::Result<Vec<u8>>> {
        let task = self.in_flight.pop_front()?;
        let out = task.await;
        self.fill();
        Some(out)
    }
}

/// Scans `file` (segment `base_offset`) from byte 0. `min_next_offset` is the first offset the
/// segment may hold (the previous segment's end).
pub async fn scan_segment(
    file: Rc<dyn StorageFile>,
    path: &Path,
    base_offset: i64,
    min_next_offset: i64,
    config: &LogConfig,
) -> Result<ScanOutcome> {
    let file_size = file.size().await.map_err(|e| Error::io("stat", path, e))?;
    let mut reader = SequentialReader::new(file, file_size);
    let mut state = IndexState::new(base_offset, config);
    let mut expected_next = min_next_offset.max(base_offset);
    // `buf` holds file bytes from `buf_pos`; `cursor` indexes the next batch in it.
    let mut buf: Vec<u8> = Vec::with_capacity(2 * READ_CHUNK);
    let mut buf_pos = 0u64;
    let mut cursor = 0usize;
    let mut eof = false;
    let stop_reason = loop {
        let pos = buf_pos + cursor as u64;
        // Make sure the batch header, then the whole batch, is in the buffer.
        let mut need = LOG_OVERHEAD;
        let mut declared_size = None;
        loop {
            if buf.len() - cursor >= need {
                if declared_size.is_none() {
                    let len = i32::from_be_bytes(buf[cursor + 8..cursor + 12].try_into().unwrap());
                    if len < MIN_BATCH_LENGTH {
                        break;
                    }
                    let size = LOG_OVERHEAD + len as usize;
                    declared_size = Some(size);
                    if pos + size as u64 > file_size {
                        break;
                    }
                    need = size;
                    continue;
                }
                break;
            }
            if eof {
                break;
            }
            match reader.next().await {
                Some(chunk) => {
                    let chunk = chunk.map_err(|e| Error::io("read", path, e))?;
                    if cursor > READ_CHUNK {
                        buf.drain(..cursor);
                        buf_pos += cursor as u64;
                        cursor = 0;
                    }
                    buf.extend_from_slice(&chunk);
                }
                None => eof = true,
            }
        }
        let left = buf.len() - cursor;
        if left == 0 && eof {
            break None;
        }
        if left < LOG_OVERHEAD {
            break Some(format!("{left} trailing bytes are too few for a batch"));
        }
        let Some(size) = declared_size else {
            let len = i32::from_be_bytes(buf[cursor + 8..cursor + 12].try_into().unwrap());
            let zeros = buf[cursor..].iter().all(|&b| b == 0);
            break Some(if zeros {
                "zero padding (end of the last direct write)".to_string()
            } else {
                format!("batch declares length {len}, below the minimum {MIN_BATCH_LENGTH}")
            });
        };
        if buf.len() - cursor < size {
            break Some(format!(
                "batch of {size} bytes runs past the end of the file ({} bytes left): a torn write",
                file_size - pos
            ));
        }
        let bytes = &buf[cursor..cursor + size];
        let h = match check_framing_and_crc(bytes) {
            Ok(h) => h,
            Err(e) => break Some(format!("invalid batch: {e}")),
        };
        if h.last_offset_delta < 0 {
            break Some(format!("negative lastOffsetDelta {}", h.last_offset_delta));
        }
        if h.base_offset < expected_next {
            break Some(format!(
                "batch base offset {} is below the expected {expected_next}",
                h.base_offset
            ));
        }
        if h.last_offset() - base_offset > i32::MAX as i64 {
            break Some(format!(
                "offset {} is outside the segment's relative range",
                h.last_offset()
            ));
        }
        state.add_batch(&h, pos, config);
        expected_next = h.last_offset() + 1;
        cursor += size;
    };
    Ok(ScanOutcome {
        valid_size: buf_pos + cursor as u64,
        file_size,
        stop_reason,
        state,
    })
}
