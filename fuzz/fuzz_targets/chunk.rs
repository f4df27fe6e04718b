//! Fuzzes the event decoder behind the checksums: the input becomes the raw payload of one
//! chunk with correct lengths and checksums, appended to the golden fixture's file header, so
//! every mutation reaches decompression and decoding instead of stopping at a CRC. The first
//! four bytes (little-endian) are the chunk's event count.
#![no_main]

use lbscope::record::Reader;
use libfuzzer_sys::fuzz_target;

const GOLDEN: &[u8] = include_bytes!("../../tests/fixtures/recordings/golden-v1.lbs");

fn file_header() -> &'static [u8] {
    let hlen = u32::from_le_bytes([GOLDEN[12], GOLDEN[13], GOLDEN[14], GOLDEN[15]]) as usize;
    &GOLDEN[..16 + hlen + 4]
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let count = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
    let raw = &data[4..];
    let Ok(comp) = zstd::bulk::compress(raw, 1) else {
        return;
    };
    let mut h = Vec::with_capacity(32);
    h.extend_from_slice(b"LBSC");
    h.extend_from_slice(&(comp.len() as u32).to_le_bytes());
    h.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    h.extend_from_slice(&count.to_le_bytes());
    h.extend_from_slice(&123_456_789u64.to_le_bytes());
    h.extend_from_slice(&crc32fast::hash(&comp).to_le_bytes());
    let crc = crc32fast::hash(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    let mut file = file_header().to_vec();
    file.extend_from_slice(&h);
    file.extend_from_slice(&comp);
    let mut r = Reader::from_bytes(file).expect("the golden header reads");
    let mut n = 0usize;
    while let Some(c) = r.next_chunk() {
        n += c.len();
    }
    // Either the chunk decoded exactly as counted, or it was reported as damage.
    assert!(n == count as usize || !r.damage().is_clean());
});
