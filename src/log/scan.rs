//! Walking batch headers in a `.log` file without reading whole batches: the building block
//! of offset and timestamp lookups, index rebuilds and tail recovery.

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::format::cursor::Window;
use crate::format::BatchHeader;
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
/// (borrowed, so callers keep them without a copy). The framing rules are the batch
/// cursor's, applied through a window that is refilled whenever the next header is not in it.
pub async fn find_batch_from(
    log: &mut LogFile,
    position: u64,
    prefetched: &[u8],
    mut pred: impl FnMut(&BatchHeader) -> bool,
) -> Result<Option<FoundBatch>> {
    let mut window: Cow<'_, [u8]> = Cow::Borrowed(prefetched);
    let (mut pos, size) = (position as usize, log.size() as usize);
    let mut window_start = pos;
    let mut step = SCAN_WINDOW;
    let mut read_here = false;
    loop {
        let run = Window {
            start: window_start,
            bytes: &window,
            len: size,
        };
        if pos < size && !run.holds_header_at(pos) {
            if read_here {
                // A read from here came back short of the size the log claims.
                let why = format!("read {} bytes, short of a batch header", window.len());
                return Err(Error::corruption(log.path(), pos as u64, why));
            }
            window = Cow::Owned(log.read_at(pos as u64, step).await?);
            window_start = pos;
            read_here = true;
            step = (step * 2).min(MAX_SCAN_WINDOW);
            continue;
        }
        match run.step_at(pos) {
            None => return Ok(None),
            Some(Err((at, e))) => {
                return Err(Error::corruption(log.path(), at as u64, e.to_string()))
            }
            Some(Ok((at, header))) if pred(&header) => {
                let position = at as u64;
                return Ok(Some(FoundBatch { position, header }));
            }
            Some(Ok((at, header))) => {
                pos = at + header.size();
                read_here = false;
            }
        }
    }
}
