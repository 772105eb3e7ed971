//! Reading a large file through a bounded window, for offline tools: only the bytes being
//! looked at (at least one chunk, at most one record batch more) are in memory, so dumping
//! a 3 GiB segment does not take 3 GiB.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Bytes read from the file at a time.
const CHUNK: usize = 4 << 20;

pub struct FileWindow {
    file: File,
    len: u64,
    /// File position of `buf[0]`.
    start: u64,
    buf: Vec<u8>,
}

impl FileWindow {
    /// Opens a regular file (a FIFO, device or directory would block or never end).
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{} is not a regular file", path.display()),
            ));
        }
        Ok(FileWindow {
            file,
            len: meta.len(),
            start: 0,
            buf: Vec::new(),
        })
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes `[pos, pos + want)`, fewer at the end of the file. Reads only what the
    /// window does not hold yet; drops what lies before `pos`.
    pub fn bytes(&mut self, pos: u64, want: usize) -> std::io::Result<&[u8]> {
        assert!(pos <= self.len, "a read starts inside the file");
        let end = (pos + want as u64).min(self.len);
        let held_end = self.start + self.buf.len() as u64;
        if pos < self.start || end > held_end {
            let read_len = ((end - pos) as usize)
                .max(CHUNK)
                .min((self.len - pos) as usize);
            self.buf.resize(read_len, 0);
            self.file.seek(SeekFrom::Start(pos))?;
            self.file.read_exact(&mut self.buf)?;
            self.start = pos;
        }
        assert!(self.start <= pos, "the window starts at or before the read");
        assert!(
            end <= self.start + self.buf.len() as u64,
            "the window holds the read"
        );
        let a = (pos - self.start) as usize;
        let b = (end - self.start) as usize;
        Ok(&self.buf[a..b])
    }
}
