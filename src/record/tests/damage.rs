//! Damaged input: bad file headers are errors with their own message; damaged chunks are
//! skipped and accounted for; nothing panics.

use super::golden::{golden_batches, golden_path};
use super::{chunk_offsets, read_chunks};
use crate::event::Event;
use crate::record::{
    ChunkHeader, Reader, RecordError, CHUNK_HEADER_LEN, MAX_CHUNK_BYTES, MAX_HEADER_BYTES,
};

fn golden_bytes() -> Vec<u8> {
    std::fs::read(golden_path()).unwrap()
}

fn open_err(bytes: Vec<u8>) -> RecordError {
    match Reader::from_bytes(bytes) {
        Ok(_) => panic!("opened"),
        Err(e) => e,
    }
}

/// A file-header's end (the first chunk's offset).
fn header_end(bytes: &[u8]) -> usize {
    chunk_offsets(bytes)[0]
}

#[test]
fn wrong_magic_is_not_a_recording() {
    let e = open_err(b"not a recording at all, just text\n".to_vec());
    assert!(matches!(e, RecordError::NotARecording { .. }), "{e}");
    assert!(e.to_string().contains("not an lbscope recording"), "{e}");
    let e = open_err(b"LBS".to_vec());
    assert!(matches!(e, RecordError::DamagedHeader { .. }), "{e}");
    let e = open_err(b"X".to_vec());
    assert!(matches!(e, RecordError::NotARecording { .. }), "{e}");
}

#[test]
fn newer_version_says_upgrade() {
    let mut b = golden_bytes();
    b[8] = 2;
    let e = open_err(b);
    assert!(
        matches!(e, RecordError::NewerVersion { version: 2, .. }),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("recording format v2 is newer than this lbscope (v1): upgrade lbscope"),
        "{e}"
    );
}

#[test]
fn damaged_headers_are_refused() {
    let good = golden_bytes();
    let end = header_end(&good);
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("truncated in JSON", good[..end / 2].to_vec()),
        ("truncated prefix", good[..12].to_vec()),
        ("truncated crc", good[..end - 2].to_vec()),
    ];
    let mut v0 = good.clone();
    v0[8] = 0;
    cases.push(("version 0", v0));
    let mut crc = good.clone();
    crc[end - 1] ^= 1;
    cases.push(("header crc", crc));
    let mut json = good.clone();
    json[20] ^= 0x20;
    cases.push(("json byte", json));
    let mut huge = good.clone();
    huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    cases.push(("huge length", huge));
    let mut big = good.clone();
    big[12..16].copy_from_slice(&MAX_HEADER_BYTES.to_le_bytes());
    cases.push(("length past the file", big));
    // A header that checks out but is not a Header.
    let mut bad_json = good[..16].to_vec();
    let j = br#"{"format_version":1}"#;
    bad_json[12..16].copy_from_slice(&(j.len() as u32).to_le_bytes());
    bad_json.extend_from_slice(j);
    bad_json.extend_from_slice(&crc32fast::hash(j).to_le_bytes());
    cases.push(("incomplete JSON", bad_json));
    for (what, b) in cases {
        let e = open_err(b);
        assert!(
            matches!(e, RecordError::DamagedHeader { .. }),
            "{what}: {e}"
        );
        assert!(e.to_string().contains("header is damaged"), "{what}: {e}");
    }
}

#[test]
fn empty_input_is_empty() {
    let e = open_err(Vec::new());
    assert!(matches!(e, RecordError::Empty { .. }), "{e}");
    assert!(e.to_string().contains("empty"), "{e}");
}

#[test]
fn truncated_last_chunk_keeps_the_others() {
    let good = golden_bytes();
    let want = golden_batches();
    let offs = chunk_offsets(&good);
    let last = *offs.last().unwrap();
    // Cut inside the payload, inside the chunk header, and just after its magic.
    for cut in [good.len() - 7, last + 20, last + 4, last + 1] {
        let (chunks, d) = read_chunks(good[..cut].to_vec());
        assert_eq!(chunks, want[..want.len() - 1].to_vec(), "cut at {cut}");
        assert!(d.truncated_tail, "cut at {cut}: {d:?}");
        assert_eq!(d.skipped_chunks, 1);
        assert_eq!(d.skipped_bytes, (cut - last) as u64);
        assert!(!d.is_clean());
        assert!(d.messages[0].contains("cut short"), "{:?}", d.messages);
    }
    // Cut exactly between chunks: clean, just shorter.
    let (chunks, d) = read_chunks(good[..last].to_vec());
    assert!(d.is_clean());
    assert_eq!(chunks.len(), want.len() - 1);
}

#[test]
fn flipped_payload_byte_skips_only_that_chunk() {
    let good = golden_bytes();
    let want = golden_batches();
    let offs = chunk_offsets(&good);
    let k = offs.len() / 2;
    let mut b = good.clone();
    b[offs[k] + CHUNK_HEADER_LEN + 5] ^= 0x55;
    let (chunks, d) = read_chunks(b);
    let mut expect: Vec<Vec<Event>> = want.clone();
    expect.remove(k);
    assert_eq!(chunks, expect);
    assert_eq!(d.skipped_chunks, 1);
    assert_eq!(d.skipped_bytes, (offs[k + 1] - offs[k]) as u64);
    assert!(!d.truncated_tail);
    let m = &d.messages[0];
    assert!(
        m.starts_with(&format!("chunk at byte {}: checksum mismatch", offs[k])),
        "{m}"
    );
    assert!(
        m.ends_with(&format!("{} bytes skipped", offs[k + 1] - offs[k])),
        "{m}"
    );
}

#[test]
fn flipped_length_field_skips_only_that_chunk() {
    let good = golden_bytes();
    let want = golden_batches();
    let offs = chunk_offsets(&good);
    for field in [4, 5, 7, 8, 12, 16, 24, 28, 0] {
        let k = 2;
        let mut b = good.clone();
        b[offs[k] + field] ^= 0x01;
        let (chunks, d) = read_chunks(b);
        let mut expect = want.clone();
        expect.remove(k);
        assert_eq!(chunks, expect, "byte {field} of the chunk header");
        assert_eq!(d.skipped_chunks, 1);
        assert_eq!(d.skipped_bytes, (offs[k + 1] - offs[k]) as u64);
    }
}

#[test]
fn garbage_between_and_after_chunks_is_skipped() {
    let good = golden_bytes();
    let want = golden_batches();
    let offs = chunk_offsets(&good);
    let junk = b"LBSC\xff\xff\xff\xffLBSCLBSjunk junk junk junk junk junk junk".to_vec();
    let mut b = good[..offs[3]].to_vec();
    b.extend_from_slice(&junk);
    b.extend_from_slice(&good[offs[3]..]);
    b.extend_from_slice(&junk);
    let (chunks, d) = read_chunks(b);
    assert_eq!(chunks, want);
    assert_eq!(d.skipped_bytes, 2 * junk.len() as u64);
    assert_eq!(d.skipped_chunks, 2);
    assert!(!d.truncated_tail);
    // Bytes lost inside a chunk: that chunk goes, the next is found by its magic.
    let mut b = good[..offs[3] + 40].to_vec();
    b.extend_from_slice(&good[offs[3] + 45..]);
    let (chunks, d) = read_chunks(b);
    let mut expect = want.clone();
    expect.remove(3);
    assert_eq!(chunks, expect);
    assert_eq!(d.skipped_chunks, 1);
}

/// A chunk whose checksums are right but whose content is not.
fn forged_chunk(raw: &[u8], raw_len: u32, count: u32) -> Vec<u8> {
    let comp = zstd::bulk::compress(raw, 3).unwrap();
    let h = ChunkHeader {
        comp_len: comp.len() as u32,
        raw_len,
        count,
        first_ts: 0,
        payload_crc: crc32fast::hash(&comp),
    };
    let mut out = h.encode().to_vec();
    out.extend_from_slice(&comp);
    out
}

#[test]
fn forged_chunks_are_damage_not_panics() {
    let good = golden_bytes();
    let want = golden_batches();
    let end = header_end(&good);
    let forged = [
        // Unknown kind.
        forged_chunk(&[99, 0, 0], 3, 1),
        // Raw length disagrees with the payload.
        forged_chunk(&[16, 0, 0], 30, 1),
        // Bytes left over after the counted events.
        forged_chunk(&[16, 0, 0, 16, 0, 0], 6, 1),
        // A u32 field past 32 bits.
        forged_chunk(&[16, 0, 0x80, 0x80, 0x80, 0x80, 0x10], 7, 1),
        // A varint past 64 bits.
        forged_chunk(
            &[
                16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0,
            ],
            12,
            1,
        ),
        // Bad flags, reason, NUMA op, CPU-set size, UTF-8.
        forged_chunk(&[10, 0, 0, 4], 4, 1),
        forged_chunk(&[6, 0, 0, 1, 14, 0], 6, 1),
        forged_chunk(&[11, 0, 0, 3, 0, 0, 0, 0], 8, 1),
        forged_chunk(&[13, 0, 0, 0, 17], 5, 1),
        forged_chunk(&[12, 0, 0, 0, 0, 1, 0xff, 0], 8, 1),
        forged_chunk(&[12, 0, 0, 0, 0, 0, 2], 7, 1),
        // A string longer than the payload.
        forged_chunk(&[12, 0, 0, 1, 1, 0xff, 0xff, 0x03], 8, 1),
        // Not zstd at all, with a right checksum.
        {
            let junk = b"not zstd".to_vec();
            let h = ChunkHeader {
                comp_len: junk.len() as u32,
                raw_len: 3,
                count: 1,
                first_ts: 0,
                payload_crc: crc32fast::hash(&junk),
            };
            let mut v = h.encode().to_vec();
            v.extend_from_slice(&junk);
            v
        },
    ];
    for (i, f) in forged.iter().enumerate() {
        let mut b = good[..end].to_vec();
        b.extend_from_slice(f);
        b.extend_from_slice(&good[end..]);
        let (chunks, d) = read_chunks(b);
        assert_eq!(chunks, want, "forged {i}");
        assert_eq!(d.skipped_chunks, 1, "forged {i}: {d:?}");
        assert_eq!(d.skipped_bytes, f.len() as u64, "forged {i}");
    }
    // Lengths past the caps, with a right header checksum: refused before any allocation.
    for (comp, raw, count) in [
        (MAX_CHUNK_BYTES + 1, 3, 1),
        (10, u32::MAX, 1),
        (0, 3, 1),
        (10, 3, 2),
        (10, 30, 0),
    ] {
        let h = ChunkHeader {
            comp_len: comp,
            raw_len: raw,
            count,
            first_ts: 0,
            payload_crc: 0,
        };
        assert!(ChunkHeader::parse(&h.encode()).is_err());
        let mut b = good[..end].to_vec();
        b.extend_from_slice(&h.encode());
        b.extend_from_slice(&good[end..]);
        let (chunks, d) = read_chunks(b);
        assert_eq!(chunks, want);
        assert_eq!(d.skipped_bytes, CHUNK_HEADER_LEN as u64);
    }
}

#[test]
fn every_truncation_and_every_flip_is_survived() {
    let good = golden_bytes();
    let total: usize = golden_batches().iter().map(Vec::len).sum();
    let end = header_end(&good);
    // Every cut inside the file header and the first chunk header, then a sample (each cut
    // parses the whole header again: keep the debug-build test quick).
    let cuts = (0..end + 40).chain((end + 40..good.len()).step_by(7));
    for cut in cuts {
        if let Ok(mut r) = Reader::from_bytes(good[..cut].to_vec()) {
            assert!(cut >= end);
            let mut n = 0;
            while let Some(c) = r.next_chunk() {
                n += c.len();
            }
            assert!(n < total || cut == good.len());
        }
    }
    for at in (end..good.len()).step_by(5) {
        let mut b = good.clone();
        b[at] ^= 0x80;
        let (chunks, d) = read_chunks(b);
        let n: usize = chunks.iter().map(Vec::len).sum();
        assert!(n < total, "flip at {at} lost a chunk");
        assert_eq!(d.skipped_chunks, 1, "flip at {at}: {d:?}");
    }
}

#[test]
fn read_errors_end_the_stream_as_damage() {
    struct Failing(std::io::Cursor<Vec<u8>>, usize);
    impl std::io::Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.position() as usize >= self.1 {
                return Err(std::io::Error::other("disk on fire"));
            }
            let n = buf.len().min(self.1 - self.0.position() as usize);
            self.0.read(&mut buf[..n])
        }
    }
    let good = golden_bytes();
    let end = header_end(&good);
    let offs = chunk_offsets(&good);
    let r = Failing(std::io::Cursor::new(good.clone()), offs[2] + 10);
    let mut r =
        crate::record::reader::Reader::start(Box::new(r), "failing".into()).expect("header reads");
    let mut n = 0;
    while r.next_chunk().is_some() {
        n += 1;
    }
    assert!(n <= 2 && end > 0);
    assert!(!r.damage().is_clean());
    assert!(r.damage().messages[0].contains("disk on fire"));
}
