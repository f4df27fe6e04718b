//! [`Writer`]: appends events to a new recording.
//!
//! Invariants: the file is opened without following a symlink, is a regular file and has mode
//! 0600 before any byte is written; the file header is written at creation; every chunk goes
//! to the file with one `write_all` straight on the `File` (no user-space buffer holds sealed
//! data back), so what [`Writer::flush`] returned from is in the kernel and survives a kill of
//! the recorder. Events not yet sealed live only in `raw`; dropping the writer seals them on a
//! best-effort basis.

use super::codec;
use super::{
    ChunkHeader, Header, RecordError, WriteStats, CHUNK_RAW_TARGET, FILE_MAGIC, FORMAT_VERSION,
    MAX_EVENT_BYTES, MAX_HEADER_BYTES,
};
use crate::event::Event;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Writes a recording: a header, then chunks of events.
pub struct Writer {
    file: File,
    path: PathBuf,
    compressor: zstd::bulk::Compressor<'static>,
    /// The pending chunk's raw payload.
    raw: Vec<u8>,
    /// Events in `raw`.
    count: u32,
    first_ts: u64,
    prev_ts: u64,
    /// Scratch for one sealed chunk (header + compressed payload).
    out: Vec<u8>,
    stats: WriteStats,
}

/// zstd level: 3 is zstd's default, fast enough to keep up with the ring buffer on one core.
const ZSTD_LEVEL: i32 = 3;

impl Writer {
    /// Creates the recording at `path` (mode 0600, truncating an existing regular file) and
    /// writes its header. Refuses a symbolic link at `path` and anything not a regular file.
    /// `header.format_version` is written as [`FORMAT_VERSION`] whatever it holds.
    pub fn create(path: &Path, header: &Header) -> Result<Writer, RecordError> {
        let file = open_output(path)?;
        let mut header = header.clone();
        header.format_version = FORMAT_VERSION;
        let json = serde_json::to_vec(&header).map_err(RecordError::HeaderEncode)?;
        if json.len() > MAX_HEADER_BYTES as usize {
            return Err(RecordError::HeaderTooLarge { bytes: json.len() });
        }
        let mut prefix = Vec::with_capacity(json.len() + 20);
        prefix.extend_from_slice(&FILE_MAGIC);
        prefix.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        prefix.extend_from_slice(&(json.len() as u32).to_le_bytes());
        prefix.extend_from_slice(&json);
        prefix.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
        let compressor =
            zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(|source| RecordError::Create {
                path: path.to_path_buf(),
                source,
            })?;
        let mut w = Writer {
            file,
            path: path.to_path_buf(),
            compressor,
            raw: Vec::with_capacity(CHUNK_RAW_TARGET + 4096),
            count: 0,
            first_ts: 0,
            prev_ts: 0,
            out: Vec::new(),
            stats: WriteStats::default(),
        };
        w.write_through(&prefix)?;
        Ok(w)
    }

    /// Buffers `events`; seals and writes a chunk whenever the buffered raw size reaches
    /// [`CHUNK_RAW_TARGET`]. Call [`Writer::flush`] at least once a second so that a killed
    /// recorder loses at most a second.
    pub fn write_events(&mut self, events: &[Event]) -> Result<(), RecordError> {
        for e in events {
            if self.count == 0 {
                self.first_ts = e.ts_ns;
                self.prev_ts = e.ts_ns;
            }
            let before = self.raw.len();
            codec::encode_event(&mut self.raw, self.prev_ts, e);
            let bytes = self.raw.len() - before;
            if bytes > MAX_EVENT_BYTES {
                self.raw.truncate(before);
                return Err(RecordError::EventTooLarge { bytes });
            }
            self.prev_ts = e.ts_ns;
            self.count += 1;
            if self.raw.len() >= CHUNK_RAW_TARGET || self.count == u32::MAX {
                self.seal()?;
            }
        }
        Ok(())
    }

    /// Seals the pending chunk, if any, and writes it to the file.
    pub fn flush(&mut self) -> Result<(), RecordError> {
        self.seal()?;
        self.file.flush().map_err(|e| self.write_error(e))
    }

    /// Flushes and fsyncs the file; returns what was written.
    pub fn finish(mut self) -> Result<WriteStats, RecordError> {
        self.flush()?;
        self.file.sync_all().map_err(|e| self.write_error(e))?;
        Ok(self.stats)
    }

    /// What has been written so far.
    pub fn stats(&self) -> WriteStats {
        self.stats
    }

    fn seal(&mut self) -> Result<(), RecordError> {
        if self.count == 0 {
            return Ok(());
        }
        let count = self.count;
        // The pending events leave the buffer whatever happens next: a failed write must not
        // make the next flush write them again after a partial chunk.
        self.count = 0;
        let compressed = self.compressor.compress(&self.raw);
        let raw_len = self.raw.len() as u32;
        self.raw.clear();
        let compressed = compressed.map_err(|e| self.write_error(e))?;
        let h = ChunkHeader {
            comp_len: compressed.len() as u32,
            raw_len,
            count,
            first_ts: self.first_ts,
            payload_crc: crc32fast::hash(&compressed),
        };
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        out.extend_from_slice(&h.encode());
        out.extend_from_slice(&compressed);
        let r = self.write_through(&out);
        self.out = out;
        r?;
        self.stats.chunks += 1;
        self.stats.events += u64::from(count);
        Ok(())
    }

    fn write_through(&mut self, bytes: &[u8]) -> Result<(), RecordError> {
        self.file
            .write_all(bytes)
            .map_err(|e| self.write_error(e))?;
        self.stats.bytes += bytes.len() as u64;
        Ok(())
    }

    fn write_error(&self, source: std::io::Error) -> RecordError {
        RecordError::Write {
            path: self.path.clone(),
            source,
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Best effort: an error path that drops the writer still keeps its last events.
        let _ = self.seal();
    }
}

/// Opens `path` for writing: never through a symlink, only a regular file, mode 0600.
fn open_output(path: &Path) -> Result<File, RecordError> {
    let p = || path.to_path_buf();
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        // O_NONBLOCK: opening a FIFO must fail or return at once, not hang; it is then refused
        // as not a regular file. It changes nothing for regular files.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|source| match source.raw_os_error() {
            Some(libc::ELOOP) => RecordError::Symlink { path: p() },
            Some(libc::EISDIR) | Some(libc::ENXIO) => RecordError::NotRegularFile { path: p() },
            _ => RecordError::Create { path: p(), source },
        })?;
    let meta = file
        .metadata()
        .map_err(|source| RecordError::Create { path: p(), source })?;
    if !meta.is_file() {
        return Err(RecordError::NotRegularFile { path: p() });
    }
    // An existing file keeps its mode through O_TRUNC: recordings hold command lines and task
    // names, so make it private either way.
    if meta.permissions().mode() & 0o7777 != 0o600 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|source| RecordError::Create { path: p(), source })?;
    }
    if let Some((uid, gid)) = invoking_user() {
        std::os::unix::fs::fchown(&file, Some(uid), Some(gid))
            .map_err(|source| RecordError::Create { path: p(), source })?;
    }
    Ok(file)
}

/// Under `sudo`, the user who ran it (`SUDO_UID`, `SUDO_GID`): the recording is theirs to
/// copy away and delete, not root's. `None` when not root or not under sudo.
fn invoking_user() -> Option<(u32, u32)> {
    let id = |k: &str| std::env::var(k).ok()?.parse::<u32>().ok();
    // The effective uid, from /proc: keeps this module free of `unsafe`.
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse::<u32>()
        .ok()?;
    if euid != 0 {
        return None;
    }
    Some((id("SUDO_UID")?, id("SUDO_GID")?))
}
