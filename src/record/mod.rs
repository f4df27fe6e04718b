//! Recordings: the on-disk format, its [`Writer`] and its recovering [`Reader`].
//!
//! This module owns the format; `codec.rs` the event encoding inside a chunk, `writer.rs` and
//! `reader.rs` the two directions. Invariants: a recording read back yields exactly the
//! events written, in order and bit for bit; a damaged or truncated file yields every chunk
//! that checks out and says what it skipped ([`Damage`]); no input makes the reader panic or
//! allocate more than [`MAX_CHUNK_BYTES`] for one chunk; files are created mode 0600.
//!
//! # Format v1
//!
//! All integers are little-endian. Offsets are in bytes.
//!
//! ```text
//! file   := file-header chunk*
//!
//! file-header (16 + H + 4 bytes):
//!   0   8  magic            "LBSCOPE\0"
//!   8   4  u32 version      1 (a reader refuses a higher one: "upgrade lbscope")
//!   12  4  u32 H            header length, at most MAX_HEADER_BYTES
//!   16  H  header           JSON of `Header` (its `format_version` equals `version`)
//!   16+H 4 u32 crc32        CRC-32 (IEEE) of the H header bytes
//!
//! chunk-header (32 bytes):
//!   0   4  magic            "LBSC"
//!   4   4  u32 C            compressed payload length, 1..=MAX_CHUNK_BYTES
//!   8   4  u32 R            raw (decompressed) payload length, at most MAX_CHUNK_BYTES
//!   12  4  u32 N            event count, 1..=R/3
//!   16  8  u64 first_ts     timestamp (CLOCK_MONOTONIC ns) of the chunk's first event
//!   24  4  u32 payload_crc  CRC-32 of the C compressed bytes
//!   28  4  u32 header_crc   CRC-32 of bytes 0..28 of this chunk header
//! chunk-payload (C bytes):  zstd frame (level 3) of the R raw bytes
//!
//! raw payload := event{N}
//! event := kind:u8  ts_delta:zvarint  cpu:varint  fields
//!   varint   unsigned LEB128 (at most 10 bytes); u32 fields must fit 32 bits
//!   zvarint  zig-zag signed varint
//!   ts_delta ts - previous event's ts in the chunk (the first: ts - first_ts), as a wrapping
//!            64-bit difference read as signed: ring-buffer order is not monotonic
//!   string   varint byte length, then UTF-8 bytes
//!   cpuset   varint word count (<= MAX_CPUS/64), then each 64-bit word as varint,
//!            word 0 = CPUs 0-63, trailing zero words omitted
//!   fields by kind:
//!    1 Switch          prev_pid prev_state next_pid                     (varints)
//!    2 Waking          pid prev_cpu
//!    3 Wakeup          pid target_cpu
//!    4 WakeupNew       pid tgid target_cpu
//!    5 Migrate         pid src_cpu dst_cpu reason:u8 source:u8 (0 stack, 1 context, 2 task state)
//!                      stack_id:varint (0 = none, else id+1) ctx_flags:u8 policy
//!                      ctx_flags: bit0 in_stopper, 1 in_hardirq, 2 in_sched_softirq,
//!                                 3 in_execve, 4 current_idle, 5 waking (TASK_WAKING)
//!    6 Stack           id reason:u8 frame_count frames:string*
//!    7 NrRunning       rq_cpu nr_running
//!    8 Pelt            rq_cpu load_avg runnable_avg util_avg
//!    9 Capacity        rq_cpu capacity
//!   10 BalanceSoftirq  flags:u8 (bit0 entry, bit1 idle)
//!   11 Numa            op:u8 (0 move, 1 swap, 2 stick) pid src_cpu:zvarint dst_pid
//!                      dst_cpu:zvarint
//!   12 Task            pid tgid comm:string exec:u8 (0/1)
//!   13 Affinity        pid cpus:cpuset
//!   14 Exit            pid tgid
//!   15 Lost            count
//!   16 Clock           (nothing)
//!   17 Balance         level sd_weight idle:u8 migration_type:u8 (kernel numbering)
//!                      imbalance flags:u8 (bit0 balanced, bit1 redo) dst_cpu src_cpu
//!                      pid (0 = a busiest-group search, else the detached task's pid+1)
//!   18 Pelt + util_est rq_cpu load_avg runnable_avg util_avg util_est (kind 8 without it)
//!   19 Cgroup          pid id:varint path:str (empty: not named)
//!   20 Fold            (folded latency histograms, see codec)
//!   21 BalanceCall     level sd_weight idle:u8 (kernel numbering) this_cpu moved
//!                      flags:u8 (bit0 failed, bits1-2 origin: 0 unknown, 1 own, 2 nohz,
//!                      3 stopper) len_ns
//!   22 Schedstat       end:u8 (0 start, 1 end) read_ns:varint text:string
//!   23 RtCall          func:u8 (0 push_rt_task, 1 pull_rt_task, 2 rto_push_irq_work_func)
//!                      rq_cpu len_ns (the event's time is the call's entry)
//!   24 NrRunning + cfs_rq  rq_cpu nr_running fields:u8 (bit0 util_est, bit1 cfs_h_nr_running)
//!                      then util_est, cfs_h_nr_running as the bits say (kind 7 without both)
//!   reason codes: 0 wakeup, 1 fork, 2 exec, 3 periodic_balance, 4 nohz_idle_balance,
//!   5 newidle_balance, 6 active_balance, 7 numa_balancing, 8 affinity, 9 hotplug,
//!   10 rt_push_pull, 11 dl_push_pull, 12 sched_ext, 13 unknown
//! ```
//!
//! The writer seals a chunk when its raw size reaches [`CHUNK_RAW_TARGET`] or on
//! [`Writer::flush`] (the recorder flushes at least once a second), and writes each chunk with
//! one `write_all`, so a killed recorder leaves at most one incomplete chunk at the end. The
//! chunk header's own checksum lets the reader trust a chunk's length, and resynchronise after
//! damage by scanning for the next `"LBSC"` whose header checks out.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

mod codec;
mod reader;
#[cfg(test)]
mod tests;
mod writer;

pub use reader::Reader;
pub use writer::Writer;

/// The format version this build writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;

/// The first bytes of every recording.
pub const FILE_MAGIC: [u8; 8] = *b"LBSCOPE\0";

/// The first bytes of every chunk.
pub const CHUNK_MAGIC: [u8; 4] = *b"LBSC";

/// Largest JSON header a reader accepts (a 1024-CPU topology takes well under 1 MiB).
pub const MAX_HEADER_BYTES: u32 = 16 << 20;

/// Largest compressed or raw chunk payload a reader accepts; larger lengths are damage.
pub const MAX_CHUNK_BYTES: u32 = 64 << 20;

/// Raw payload size at which the writer seals a chunk.
pub const CHUNK_RAW_TARGET: usize = 256 << 10;

/// Largest encoded single event the writer accepts (keeps every chunk under
/// [`MAX_CHUNK_BYTES`] even compressed, whatever the data).
pub const MAX_EVENT_BYTES: usize = 16 << 20;

const FILE_PREFIX_LEN: usize = 16;
const CHUNK_HEADER_LEN: usize = 32;

/// What a recording says about the machine and run it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The format version ([`FORMAT_VERSION`] when written by this build).
    pub format_version: u32,
    /// The lbscope version that wrote the file.
    pub tool_version: String,
    /// `uname -r` of the recorded machine.
    pub kernel_release: String,
    /// Host name of the recorded machine.
    pub hostname: String,
    /// Unix-epoch nanoseconds minus CLOCK_MONOTONIC nanoseconds when recording started: add it
    /// to an event's `ts_ns` for wall-clock time.
    pub clock_base_ns: i64,
    /// When the recording was created, Unix seconds.
    pub created_unix_s: u64,
    /// The recorded machine's CPUs and sched-domain levels.
    pub topology: crate::topology::Topology,
    /// Each tracepoint and how it was attached: "tp_btf", "raw_tp" or "missing".
    pub probes: Vec<(String, String)>,
    /// The command line that made the recording.
    pub command_line: Vec<String>,
}

/// What a [`Writer`] has put in its file so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Events in sealed (written) chunks; events still buffered are not counted.
    pub events: u64,
    /// Chunks written.
    pub chunks: u64,
    /// Bytes written, header included: the file's size.
    pub bytes: u64,
}

/// What a [`Reader`] had to skip. Events of skipped chunks are lost; everything else was read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Damage {
    /// Chunks (or damaged regions, each counted once) that could not be read.
    pub skipped_chunks: u64,
    /// Bytes not read as part of a good chunk.
    pub skipped_bytes: u64,
    /// The file ends inside a chunk (the recorder was killed, or the disk filled).
    pub truncated_tail: bool,
    /// One line per problem, for the user: "chunk at byte 123456: checksum mismatch, 4096
    /// bytes skipped".
    pub messages: Vec<String>,
}

impl Damage {
    /// Whether the whole file was read.
    pub fn is_clean(&self) -> bool {
        self.skipped_chunks == 0
            && self.skipped_bytes == 0
            && !self.truncated_tail
            && self.messages.is_empty()
    }
}

/// Why a recording could not be written or opened.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The output file could not be created.
    #[error(
        "cannot create recording {}: {source}; check that the directory exists and is writable",
        path.display()
    )]
    Create {
        /// The output path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The output path is a symbolic link.
    #[error(
        "{}: is a symbolic link; lbscope does not write recordings through links: name the \
         target file, or remove the link",
        path.display()
    )]
    Symlink {
        /// The output path.
        path: PathBuf,
    },
    /// The output path exists and is not a regular file.
    #[error("{}: is not a regular file: name a regular file for the recording", path.display())]
    NotRegularFile {
        /// The output path.
        path: PathBuf,
    },
    /// Writing failed.
    #[error("cannot write recording {}: {source}; check the free space on its disk", path.display())]
    Write {
        /// The output path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The header could not be serialized (a bug).
    #[error("cannot encode the recording header: {0}; this is a bug in lbscope: please report it")]
    HeaderEncode(#[source] serde_json::Error),
    /// The header is implausibly large.
    #[error(
        "the recording header takes {bytes} bytes, more than the {max} a reader accepts; \
         this is a bug in lbscope: please report it",
        max = MAX_HEADER_BYTES
    )]
    HeaderTooLarge {
        /// Its size.
        bytes: usize,
    },
    /// One event is implausibly large.
    #[error(
        "an event takes {bytes} bytes encoded, more than the {max} a recording holds; \
         this is a bug in lbscope: please report it",
        max = MAX_EVENT_BYTES
    )]
    EventTooLarge {
        /// Its encoded size.
        bytes: usize,
    },
    /// The recording could not be opened.
    #[error("cannot open recording {}: {source}", path.display())]
    Open {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Reading the file header failed.
    #[error("cannot read recording {}: {source}", path.display())]
    Read {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The path names a directory.
    #[error("{}: is a directory, not a recording: name a file written by `lbscope record`", path.display())]
    IsDirectory {
        /// The path.
        path: PathBuf,
    },
    /// The file holds no byte.
    #[error(
        "{}: is empty: the recorder stopped before writing anything; record again",
        path.display()
    )]
    Empty {
        /// The path.
        path: PathBuf,
    },
    /// The file does not start with the magic.
    #[error(
        "{}: is not an lbscope recording (it does not start with \"LBSCOPE\"): name a file \
         written by `lbscope record` or `lbscope report -o`",
        path.display()
    )]
    NotARecording {
        /// The path.
        path: PathBuf,
    },
    /// The file was written by a newer lbscope.
    #[error(
        "{}: recording format v{version} is newer than this lbscope (v{FORMAT_VERSION}): \
         upgrade lbscope",
        path.display()
    )]
    NewerVersion {
        /// The path.
        path: PathBuf,
        /// The file's format version.
        version: u32,
    },
    /// The file header is unreadable; without it no event can be interpreted.
    #[error(
        "{}: the recording header is damaged ({reason}); nothing can be read without it: \
         record again or restore the file from a copy",
        path.display()
    )]
    DamagedHeader {
        /// The path.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// A parsed, checked chunk header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ChunkHeader {
    comp_len: u32,
    raw_len: u32,
    count: u32,
    first_ts: u64,
    payload_crc: u32,
}

impl ChunkHeader {
    fn encode(&self) -> [u8; CHUNK_HEADER_LEN] {
        let mut b = [0u8; CHUNK_HEADER_LEN];
        b[0..4].copy_from_slice(&CHUNK_MAGIC);
        b[4..8].copy_from_slice(&self.comp_len.to_le_bytes());
        b[8..12].copy_from_slice(&self.raw_len.to_le_bytes());
        b[12..16].copy_from_slice(&self.count.to_le_bytes());
        b[16..24].copy_from_slice(&self.first_ts.to_le_bytes());
        b[24..28].copy_from_slice(&self.payload_crc.to_le_bytes());
        let crc = crc32fast::hash(&b[0..28]);
        b[28..32].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Checks and parses a chunk header; `b` holds at least [`CHUNK_HEADER_LEN`] bytes. The
    /// error says why these bytes are not a chunk header.
    fn parse(b: &[u8]) -> Result<ChunkHeader, String> {
        if b.len() < CHUNK_HEADER_LEN || b[0..4] != CHUNK_MAGIC {
            return Err("no chunk header here".into());
        }
        if crc32fast::hash(&b[0..28]) != codec::le_u32(b, 28) {
            return Err("chunk header checksum mismatch".into());
        }
        let h = ChunkHeader {
            comp_len: codec::le_u32(b, 4),
            raw_len: codec::le_u32(b, 8),
            count: codec::le_u32(b, 12),
            first_ts: codec::le_u64(b, 16),
            payload_crc: codec::le_u32(b, 24),
        };
        if h.comp_len == 0 || h.comp_len > MAX_CHUNK_BYTES || h.raw_len > MAX_CHUNK_BYTES {
            return Err(format!(
                "implausible chunk lengths ({} compressed, {} raw)",
                h.comp_len, h.raw_len
            ));
        }
        if h.count == 0 || h.count as usize > h.raw_len as usize / codec::MIN_EVENT_BYTES {
            return Err(format!(
                "implausible event count {} for {} raw bytes",
                h.count, h.raw_len
            ));
        }
        Ok(h)
    }
}
