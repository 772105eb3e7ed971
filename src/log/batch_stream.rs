//! Reading a `.log` front to back, batch by batch, at device speed: 1 MiB reads with several
//! in flight, each batch handed out whole (framing checked, CRC left to the caller). The one
//! sequential walker over whole batches: recovery and the cleaner both use it.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use glommio::Task;

use crate::error::{Error, Result};
use crate::format::cursor::Window;
use crate::format::{BatchError, HEADER_SIZE};
use crate::io::StorageFile;

/// How a stream reads: the size of each read and how many are in flight.
#[derive(Debug, Clone, Copy)]
pub struct ReadPace {
    pub chunk: usize,
    pub ahead: usize,
}

/// Recovery: as fast as the device goes.
pub const FULL_SPEED: ReadPace = ReadPace {
    chunk: 1 << 20,
    ahead: 4,
};

/// Background work (the cleaner): one 64 KiB read at a time, so foreground I/O on the
/// same device never queues behind much of it.
pub const BACKGROUND: ReadPace = ReadPace {
    chunk: 64 << 10,
    ahead: 1,
};

/// Reads a file front to back with `pace.ahead` reads in flight.
struct SequentialReader {
    file: Rc<dyn StorageFile>,
    next_pos: u64,
    end: u64,
    pace: ReadPace,
    in_flight: VecDeque<Task<std::io::Result<Vec<u8>>>>,
}

impl SequentialReader {
    fn new(file: Rc<dyn StorageFile>, end: u64, pace: ReadPace) -> Self {
        let mut r = SequentialReader {
            file,
            next_pos: 0,
            end,
            pace,
            in_flight: VecDeque::new(),
        };
        r.fill();
        r
    }

    fn fill(&mut self) {
        while self.in_flight.len() < self.pace.ahead && self.next_pos < self.end {
            let pos = self.next_pos;
            let len = ((self.end - pos) as usize).min(self.pace.chunk);
            let file = self.file.clone();
            self.in_flight.push_back(crate::tasks::spawn(
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

/// What the stream gives next.
#[non_exhaustive]
pub enum Next<'a> {
    /// A whole batch (by its declared length) starting at `position`.
    Batch { position: u64, bytes: &'a [u8] },
    /// The clean end of the data.
    End,
    /// Bytes at `position` that are not a whole batch, and why (zero padding, a torn write,
    /// garbage): where a recovery truncates. `padding`: only zeros follow (what a direct
    /// write's block and space allocated ahead leave; nothing was lost).
    Stop {
        position: u64,
        reason: String,
        padding: bool,
    },
}

pub struct BatchStream {
    path: PathBuf,
    reader: SequentialReader,
    file_size: u64,
    /// File bytes from `buf_pos`; `cursor` indexes the next batch in it.
    buf: Vec<u8>,
    buf_pos: u64,
    cursor: usize,
    eof: bool,
}

impl BatchStream {
    /// Streams `[0, end)` of `file` (`path` names it in errors) at `pace`.
    pub fn new(file: Rc<dyn StorageFile>, path: &Path, end: u64, pace: ReadPace) -> Self {
        BatchStream {
            path: path.to_path_buf(),
            reader: SequentialReader::new(file, end, pace),
            file_size: end,
            buf: Vec::with_capacity(2 * pace.chunk),
            buf_pos: 0,
            cursor: 0,
            eof: false,
        }
    }

    /// Position of the next batch (after the last one handed out).
    pub fn position(&self) -> u64 {
        self.buf_pos + self.cursor as u64
    }

    /// Reads until `need` bytes from the cursor are buffered or the data ends.
    async fn fill_to(&mut self, need: usize) -> Result<()> {
        while self.buf.len() - self.cursor < need && !self.eof {
            match self.reader.next().await {
                Some(chunk) => {
                    let chunk = chunk.map_err(|e| Error::io("read", &self.path, e))?;
                    if self.cursor > self.reader.pace.chunk {
                        self.buf.drain(..self.cursor);
                        self.buf_pos += self.cursor as u64;
                        self.cursor = 0;
                    }
                    self.buf.extend_from_slice(&chunk);
                }
                None => self.eof = true,
            }
        }
        Ok(())
    }

    /// The next whole batch, the end, or why the bytes here are not a batch. The framing
    /// rules are the batch cursor's, through a window on the buffered bytes.
    pub async fn next(&mut self) -> Result<Next<'_>> {
        let position = self.position();
        self.fill_to(HEADER_SIZE).await?;
        let window = Window {
            start: self.buf_pos as usize,
            bytes: &self.buf,
            len: self.file_size as usize,
        };
        if !window.holds_header_at(position as usize) {
            let left = self.buf.len() - self.cursor;
            let reason = format!("{left} bytes were cut short while reading a header");
            let padding = self.zeros_to_end().await?;
            return Ok(Next::Stop {
                position,
                reason,
                padding,
            });
        }
        let size = match window.step_at(position as usize) {
            None => return Ok(Next::End),
            Some(Ok((_, header))) => header.size(),
            Some(Err((_, e))) => {
                let padding = self.zeros_to_end().await?;
                let reason = self.stop_reason(e, padding);
                return Ok(Next::Stop {
                    position,
                    reason,
                    padding,
                });
            }
        };
        self.fill_to(size).await?;
        if self.buf.len() - self.cursor < size {
            let reason = format!("batch of {size} bytes was cut short while reading");
            return Ok(Next::Stop {
                position,
                reason,
                padding: false,
            });
        }
        // Filling may have moved the buffer: take the batch's place after it.
        let at = self.cursor;
        self.cursor += size;
        Ok(Next::Batch {
            position,
            bytes: &self.buf[at..at + size],
        })
    }

    /// Whether only zeros are left from the cursor to the end of the file: what the last
    /// direct write's block and the space allocated ahead of the writes leave, so it is
    /// read to the end only when it is no longer than those can be. Ends the walk (the
    /// buffer is consumed).
    async fn zeros_to_end(&mut self) -> Result<bool> {
        let left = self.file_size.saturating_sub(self.position());
        if left > crate::io::BLOCK + crate::io::MAX_ALLOCATE_AHEAD {
            return Ok(false);
        }
        loop {
            if self.buf[self.cursor..].iter().any(|&b| b != 0) {
                return Ok(false);
            }
            self.buf_pos += self.buf.len() as u64;
            self.buf.clear();
            self.cursor = 0;
            if self.eof {
                return Ok(true);
            }
            self.fill_to(1).await?;
        }
    }

    /// Why the walk stops here. What a crash leaves is named as such: the zero padding of
    /// the last direct write, and a whole header whose batch runs past the end of the file
    /// (a torn write); anything else by the cursor's error.
    fn stop_reason(&self, e: BatchError, padding: bool) -> String {
        match e {
            _ if padding => {
                "zero padding (end of the last direct write, or space allocated ahead)".to_string()
            }
            BatchError::SizeMismatch {
                total, available, ..
            } if total > available as u64 && available >= HEADER_SIZE => {
                format!("{e}: a torn write")
            }
            e => e.to_string(),
        }
    }
}
