//! Tests of the recording format: round trips (`roundtrip.rs`), damage and recovery
//! (`damage.rs`), the file system side of creating and opening (`files.rs`) and the golden
//! fixture (`golden.rs`). Helpers shared by them live here.

use super::{Header, Reader, Writer};
use crate::event::Event;
use std::path::PathBuf;

mod damage;
mod files;
mod golden;
mod roundtrip;

/// A fresh path in a per-process scratch directory.
fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lbscope-record-unit-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

/// A small header (the golden one).
fn header() -> Header {
    golden::golden_header()
}

/// Writes `batches` to a file, one flush per batch, and returns its bytes.
fn write_bytes(name: &str, batches: &[Vec<Event>]) -> Vec<u8> {
    let p = tmp(name);
    let mut w = Writer::create(&p, &header()).unwrap();
    for b in batches {
        w.write_events(b).unwrap();
        w.flush().unwrap();
    }
    let s = w.finish().unwrap();
    let bytes = std::fs::read(&p).unwrap();
    assert_eq!(s.bytes, bytes.len() as u64);
    let _ = std::fs::remove_file(&p);
    bytes
}

/// Reads every chunk of `bytes`.
fn read_chunks(bytes: Vec<u8>) -> (Vec<Vec<Event>>, super::Damage) {
    let mut r = Reader::from_bytes(bytes).unwrap();
    let mut out = Vec::new();
    while let Some(c) = r.next_chunk() {
        out.push(c);
    }
    (out, r.damage().clone())
}

/// Byte offsets of each chunk in a file written by this build.
fn chunk_offsets(bytes: &[u8]) -> Vec<usize> {
    let hlen = super::codec::le_u32(bytes, 12) as usize;
    let mut at = super::FILE_PREFIX_LEN + hlen + 4;
    let mut out = Vec::new();
    while at < bytes.len() {
        out.push(at);
        let h = super::ChunkHeader::parse(&bytes[at..]).unwrap();
        at += super::CHUNK_HEADER_LEN + h.comp_len as usize;
    }
    out
}
