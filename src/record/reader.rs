//! [`Reader`]: reads a recording chunk by chunk and recovers from damage.
//!
//! Invariants: the file header must be intact (it is checked whole before the reader exists);
//! after it, every chunk whose header and payload check out is returned, in file order, and
//! every byte not part of such a chunk is accounted for in [`Damage`] (`skipped_bytes`), with
//! one message per damaged region. The reader holds at most one chunk (capped at
//! [`MAX_CHUNK_BYTES`]) plus one read block in memory, whatever the file's size, so it streams
//! arbitrarily long recordings. Nothing here panics on any input.

use super::codec;
use super::{
    ChunkHeader, Damage, Header, RecordError, CHUNK_HEADER_LEN, CHUNK_MAGIC, FILE_MAGIC,
    FILE_PREFIX_LEN, FORMAT_VERSION, MAX_HEADER_BYTES,
};
use crate::event::Event;
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

/// Size of one read from the underlying stream.
const READ_BLOCK: usize = 64 << 10;

/// Reads a recording from a file or a byte buffer.
pub struct Reader {
    s: Stream,
    header: Header,
    /// Set after the end or a read error: nothing more comes.
    done: bool,
    damage: Damage,
    decompressor: Option<zstd::bulk::Decompressor<'static>>,
}

/// A window over the underlying stream: bytes read and not yet consumed start at `buf[pos]`.
struct Stream {
    src: Box<dyn Read + Send>,
    buf: Vec<u8>,
    pos: usize,
    /// File offset of `buf[0]`.
    base: u64,
    eof: bool,
}

/// What reading at the current position gave.
enum Step {
    Chunk(Vec<Event>),
    Skipped,
    End,
}

impl Reader {
    /// Opens the recording at `path` and reads its header.
    pub fn open(path: &Path) -> Result<Reader, RecordError> {
        let p = || path.to_path_buf();
        let file =
            std::fs::File::open(path).map_err(|source| RecordError::Open { path: p(), source })?;
        // Opening a directory read-only succeeds on Linux; reading it would fail obscurely.
        let meta = file
            .metadata()
            .map_err(|source| RecordError::Open { path: p(), source })?;
        if meta.is_dir() {
            return Err(RecordError::IsDirectory { path: p() });
        }
        Reader::start(Box::new(file), p())
    }

    /// Reads a recording held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Reader, RecordError> {
        Reader::start(
            Box::new(std::io::Cursor::new(bytes)),
            PathBuf::from("recording"),
        )
    }

    /// The recording's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The events of the next good chunk, or `None` at the end of the file. Damaged chunks
    /// are skipped and recorded in [`Reader::damage`].
    pub fn next_chunk(&mut self) -> Option<Vec<Event>> {
        while !self.done {
            match self.step() {
                Ok(Step::Chunk(events)) => return Some(events),
                Ok(Step::Skipped) => {}
                Ok(Step::End) => self.done = true,
                Err(e) => {
                    let at = self.s.offset();
                    self.damage.messages.push(format!(
                        "byte {at}: read error: {e}; the rest of the file was not read"
                    ));
                    self.done = true;
                }
            }
        }
        None
    }

    /// What has been skipped so far (complete once [`Reader::next_chunk`] returned `None`).
    pub fn damage(&self) -> &Damage {
        &self.damage
    }

    pub(super) fn start(src: Box<dyn Read + Send>, path: PathBuf) -> Result<Reader, RecordError> {
        let mut s = Stream {
            src,
            buf: Vec::new(),
            pos: 0,
            base: 0,
            eof: false,
        };
        let header = s.read_file_header(&path)?;
        Ok(Reader {
            s,
            header,
            done: false,
            damage: Damage::default(),
            decompressor: None,
        })
    }

    /// Reads the chunk at the current position, or skips the damage there.
    fn step(&mut self) -> std::io::Result<Step> {
        let avail = self.s.fill(CHUNK_HEADER_LEN)?;
        if avail == 0 {
            return Ok(Step::End);
        }
        let at = self.s.offset();
        if avail < CHUNK_HEADER_LEN {
            let m = avail.min(CHUNK_MAGIC.len());
            if self.s.buf[self.s.pos..self.s.pos + m] != CHUNK_MAGIC[..m] {
                return self.skip_damage(at, "not a chunk header".into(), false);
            }
            return self.skip_damage(
                at,
                format!("the file ends {avail} bytes into a chunk header"),
                true,
            );
        }
        let h = match ChunkHeader::parse(&self.s.buf[self.s.pos..self.s.pos + CHUNK_HEADER_LEN]) {
            Ok(h) => h,
            Err(reason) => return self.skip_damage(at, reason, false),
        };
        let total = CHUNK_HEADER_LEN + h.comp_len as usize;
        let avail = self.s.fill(total)?;
        if avail < total {
            let reason = format!(
                "the file ends {} bytes into its {}-byte payload ({} events)",
                avail - CHUNK_HEADER_LEN,
                h.comp_len,
                h.count
            );
            return self.skip_damage(at, reason, true);
        }
        let payload = &self.s.buf[self.s.pos + CHUNK_HEADER_LEN..self.s.pos + total];
        if crc32fast::hash(payload) != h.payload_crc {
            let reason = format!("checksum mismatch ({} events lost)", h.count);
            return self.skip_damage(at, reason, false);
        }
        match self.decode(&h, total) {
            Ok(events) => {
                self.s.pos += total;
                Ok(Step::Chunk(events))
            }
            Err(reason) => self.skip_damage(at, reason, false),
        }
    }

    /// Decompresses and decodes the chunk whose `total` bytes start at `pos`.
    fn decode(&mut self, h: &ChunkHeader, total: usize) -> Result<Vec<Event>, String> {
        let payload = &self.s.buf[self.s.pos + CHUNK_HEADER_LEN..self.s.pos + total];
        let dec = match &mut self.decompressor {
            Some(d) => d,
            None => self
                .decompressor
                .insert(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?),
        };
        let raw = dec
            .decompress(payload, h.raw_len as usize)
            .map_err(|e| format!("payload does not decompress ({e})"))?;
        if raw.len() != h.raw_len as usize {
            return Err(format!(
                "payload decompresses to {} bytes, the header says {}",
                raw.len(),
                h.raw_len
            ));
        }
        codec::decode_events(&raw, h.first_ts, h.count)
            .map_err(|e| format!("payload does not decode ({})", e.0))
    }

    /// Skips from `at` (the current position) to the next chunk header that checks out, or to
    /// the end, and records the damage. `cut` says the problem is the end of the file coming
    /// inside a chunk; it makes the tail truncated if no good chunk follows.
    fn skip_damage(&mut self, at: u64, reason: String, cut: bool) -> std::io::Result<Step> {
        let found = self.s.resync()?;
        let skipped = self.s.offset() - at;
        self.damage.skipped_chunks += 1;
        self.damage.skipped_bytes += skipped;
        let what = if found {
            format!("chunk at byte {at}: {reason}, {skipped} bytes skipped")
        } else if cut {
            self.damage.truncated_tail = true;
            format!(
                "chunk at byte {at}: {reason}: the recording was cut short (recorder killed, or \
                 disk full); {skipped} bytes skipped"
            )
        } else {
            format!("chunk at byte {at}: {reason}, {skipped} bytes skipped up to the end")
        };
        self.damage.messages.push(what);
        Ok(if found { Step::Skipped } else { Step::End })
    }
}

impl Stream {
    /// Reads and checks the file header; leaves `pos` at the first chunk.
    fn read_file_header(&mut self, path: &Path) -> Result<Header, RecordError> {
        let read_err = |source| RecordError::Read {
            path: path.to_path_buf(),
            source,
        };
        let damaged = |reason: String| RecordError::DamagedHeader {
            path: path.to_path_buf(),
            reason,
        };
        let n = self.fill(FILE_PREFIX_LEN).map_err(read_err)?;
        let b = &self.buf[self.pos..];
        if n == 0 {
            return Err(RecordError::Empty {
                path: path.to_path_buf(),
            });
        }
        let m = n.min(FILE_MAGIC.len());
        if b[..m] != FILE_MAGIC[..m] {
            return Err(RecordError::NotARecording {
                path: path.to_path_buf(),
            });
        }
        if n < FILE_PREFIX_LEN {
            return Err(damaged(format!(
                "the file ends after {n} bytes, inside the header"
            )));
        }
        let version = codec::le_u32(b, 8);
        if version > FORMAT_VERSION {
            return Err(RecordError::NewerVersion {
                path: path.to_path_buf(),
                version,
            });
        }
        if version == 0 {
            return Err(damaged("format version 0 does not exist".into()));
        }
        let hlen = codec::le_u32(b, 12);
        if hlen > MAX_HEADER_BYTES {
            return Err(damaged(format!(
                "header length {hlen} exceeds the {MAX_HEADER_BYTES} bytes a header can take"
            )));
        }
        let total = FILE_PREFIX_LEN + hlen as usize + 4;
        let n = self.fill(total).map_err(read_err)?;
        if n < total {
            return Err(damaged(format!(
                "the file ends after {n} of the header's {total} bytes"
            )));
        }
        let json = &self.buf[self.pos + FILE_PREFIX_LEN..self.pos + total - 4];
        if crc32fast::hash(json) != codec::le_u32(&self.buf, self.pos + total - 4) {
            return Err(damaged("header checksum mismatch".into()));
        }
        let header: Header = serde_json::from_slice(json)
            .map_err(|e| damaged(format!("header is not valid: {e}")))?;
        if header.format_version != version {
            return Err(damaged(format!(
                "header says format v{} but the file says v{version}",
                header.format_version
            )));
        }
        self.pos += total;
        Ok(header)
    }

    /// File offset of the next unread byte.
    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Makes at least `n` bytes available from `pos` unless the stream ends first; returns
    /// how many are available.
    fn fill(&mut self, n: usize) -> std::io::Result<usize> {
        let avail = self.buf.len() - self.pos;
        if avail >= n || self.eof {
            return Ok(avail);
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.base += self.pos as u64;
            self.pos = 0;
        }
        while self.buf.len() < n && !self.eof {
            let len = self.buf.len();
            let want = (n - len).max(READ_BLOCK);
            self.buf.resize(len + want, 0);
            let got = loop {
                match self.src.read(&mut self.buf[len..]) {
                    Ok(g) => break Ok(g),
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => break Err(e),
                }
            };
            match got {
                Ok(g) => {
                    self.buf.truncate(len + g);
                    self.eof = g == 0;
                }
                Err(e) => {
                    self.buf.truncate(len);
                    return Err(e);
                }
            }
        }
        Ok(self.buf.len())
    }

    /// Moves past the current position to the next valid chunk header (true) or to the end
    /// of the stream (false).
    fn resync(&mut self) -> std::io::Result<bool> {
        self.pos += 1;
        loop {
            let avail = self.fill(CHUNK_HEADER_LEN)?;
            if avail < CHUNK_HEADER_LEN {
                // No header fits in what is left: it is all skipped.
                self.pos = self.buf.len();
                return Ok(false);
            }
            let window = &self.buf[self.pos..];
            match window
                .windows(CHUNK_MAGIC.len())
                .position(|w| w == CHUNK_MAGIC)
            {
                Some(k) => {
                    self.pos += k;
                    if self.buf.len() - self.pos < CHUNK_HEADER_LEN {
                        continue;
                    }
                    let cand = &self.buf[self.pos..self.pos + CHUNK_HEADER_LEN];
                    if ChunkHeader::parse(cand).is_ok() {
                        return Ok(true);
                    }
                    self.pos += 1;
                }
                // Keep the last bytes: a magic may straddle the next read.
                None => self.pos = self.buf.len() - (CHUNK_MAGIC.len() - 1),
            }
        }
    }
}
