//! Walking batch headers in a `.log` file without reading whole batches: the building block
//! of offset and timestamp lookups, index rebuilds and tail recovery.

use crate::error::{Error, Result};
use crate::format::{BatchHeader, HEADER_SIZE};
use crate::io::LogFile;

/// Bytes read by the first step of a header walk: enough for many small batches at once.
/// Each further step doubles it (up to `MAX_SCAN_WINDOW`), so a long walk costs few reads.
const SCAN_WINDOW: usize = 16 * 1024;
const MAX_SCAN_WINDOW: usize = 1 << 20;

/// A batch found by a scan: where it starts and its header.
#[derive(Debug, Clone, Copy)]
pub struct FoundBatch {
    pub position: u64,
    pub header: BatchHeader,
}

/// Walks batch headers from `position` (which must be a batch boundary) and returns the
/// first batch for which `pred` is true, or `None` at the end of the data. A header that does
/// not parse or a batch that runs past the end is reported as corruption at its position.
pub async fn find_batch(
    log: &mut LogFile,
    position: u64,
    pred: impl FnMut(&BatchHeader) -> bool,
) -> Result<Option<FoundBatch>> {
    find_batch_from(log, position, &[], pred).await
}

/// As [`find_batch`], starting with `prefetched`: bytes already read from `position`
/// (borrowed, so callers keep them without a copy).
pub async fn find_batch_from(
    log: &mut LogFile,
    mut position: u64,
    prefetched: &[u8],
    mut pred: impl FnMut(&BatchHeader) -> bool,
) -> Result<Option<FoundBatch>> {
    let mut window: std::borrow::Cow<'_, [u8]> = std::borrow::Cow::Borrowed(prefetched);
    let size = log.size();
    let mut window_pos = position;
    let mut step = SCAN_WINDOW;
    while position < size {
        let off = (position - window_pos) as usize;
        if position < window_pos || off + HEADER_SIZE > window.len() {
            window = std::borrow::Cow::Owned(log.read_at(position, step).await?);
            window_pos = position;
            step = (step * 2).min(MAX_SCAN_WINDOW);
            if window.len() < HEADER_SIZE {
                return Err(Error::corruption(
                    log.path(),
                    position,
                    format!("{} bytes left, too few for a batch header", window.len()),
                ));
            }
            continue;
        }
        let header = BatchHeader::parse(&window[off..])
            .map_err(|e| Error::corruption(log.path(), position, e.to_string()))?;
        let end = position + header.size() as u64;
        if end > size {
            return Err(Error::corruption(
                log.path(),
                position,
                format!(
                    "batch of {} bytes runs past the end of the data ({size})",
                    header.size()
                ),
            ));
        }
        if pred(&header) {
            return Ok(Some(FoundBatch { position, header }));
        }
        position = end;
    }
    Ok(None)
}
