//! Feeds arbitrary bytes to the recording reader and drains every chunk: no input may panic,
//! hang or allocate without bound. The corpus seed `corpus/reader/golden` is the golden
//! fixture, so mutations start from a valid file with a header and many chunks.
#![no_main]

use lbscope::record::Reader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(mut r) = Reader::from_bytes(data.to_vec()) {
        let mut events = 0usize;
        while let Some(chunk) = r.next_chunk() {
            events += chunk.len();
        }
        let d = r.damage();
        // Whatever was skipped is accounted for: a clean read leaves nothing out.
        assert!(d.is_clean() || !d.messages.is_empty());
        assert!(d.skipped_bytes as usize <= data.len());
        std::hint::black_box(events);
    }
});
