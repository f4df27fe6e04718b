//! A small protobuf encoder, just what the Perfetto exporter writes: varints, tags,
//! length-delimited fields (strings, nested messages, packed repeated varints).
//!
//! Everything appends to a `Vec<u8>` through the [`Proto`] extension trait. A nested message
//! is written in place and its length prefix inserted once its size is known, so no message
//! needs a buffer of its own; the shift this costs is one copy of the message, which is small
//! (a packet, or one CPU's batch of compact sched events).

/// Wire type of varint fields (int32, int64, uint32, uint64, bool, enum).
const WIRE_VARINT: u32 = 0;
/// Wire type of length-delimited fields (string, bytes, messages, packed repeated).
const WIRE_LEN: u32 = 2;

/// Appends `v` as a base-128 varint.
pub fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Protobuf encoding onto a byte vector.
pub trait Proto {
    /// A field key: `field << 3 | wire type`.
    fn tag(&mut self, field: u32, wire: u32);
    /// An unsigned varint field (uint32, uint64, enum, bool).
    fn uint(&mut self, field: u32, v: u64);
    /// A signed varint field (int32, int64): negative values take ten bytes, as protobuf
    /// sign-extends int32 to 64 bits.
    fn int(&mut self, field: u32, v: i64);
    /// A string field.
    fn string(&mut self, field: u32, s: &str);
    /// A nested message field whose content `body` appends.
    fn message(&mut self, field: u32, body: impl FnOnce(&mut Self));
    /// A packed repeated varint field; nothing when `values` is empty. Signed values are
    /// passed as their two's complement (`v as u64`), which is how int32/int64 encode.
    fn packed(&mut self, field: u32, values: &[u64]);
}

impl Proto for Vec<u8> {
    fn tag(&mut self, field: u32, wire: u32) {
        put_varint(self, u64::from(field << 3 | wire));
    }

    fn uint(&mut self, field: u32, v: u64) {
        self.tag(field, WIRE_VARINT);
        put_varint(self, v);
    }

    fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }

    fn string(&mut self, field: u32, s: &str) {
        self.tag(field, WIRE_LEN);
        put_varint(self, s.len() as u64);
        self.extend_from_slice(s.as_bytes());
    }

    fn message(&mut self, field: u32, body: impl FnOnce(&mut Self)) {
        self.tag(field, WIRE_LEN);
        let start = self.len();
        body(self);
        let mut len = Vec::with_capacity(5);
        put_varint(&mut len, (self.len() - start) as u64);
        self.splice(start..start, len);
    }

    fn packed(&mut self, field: u32, values: &[u64]) {
        if values.is_empty() {
            return;
        }
        self.message(field, |b| {
            for &v in values {
                put_varint(b, v);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        let enc = |v| {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            b
        };
        assert_eq!(enc(0), [0]);
        assert_eq!(enc(127), [0x7f]);
        assert_eq!(enc(300), [0xac, 0x02]);
        assert_eq!(enc(u64::MAX).len(), 10);
    }

    #[test]
    fn fields() {
        let mut b = Vec::new();
        b.uint(1, 150);
        assert_eq!(b, [0x08, 0x96, 0x01]);
        b.clear();
        b.string(2, "testing");
        assert_eq!(b, b"\x12\x07testing");
        b.clear();
        b.int(58, -1);
        assert_eq!(b[..2], [0xd0, 0x03]);
        assert_eq!(b.len(), 2 + 10);
    }

    #[test]
    fn nested_and_packed() {
        let mut b = Vec::new();
        b.message(3, |m| m.uint(1, 150));
        assert_eq!(b, [0x1a, 0x03, 0x08, 0x96, 0x01]);
        b.clear();
        b.packed(4, &[3, 270, 86942]);
        assert_eq!(b, [0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05]);
        b.clear();
        b.packed(4, &[]);
        assert!(b.is_empty());
        // A body past 127 bytes takes a two-byte length.
        b.message(1, |m| m.string(2, &"x".repeat(200)));
        assert_eq!(b[..3], [0x0a, 0xcb, 0x01]);
        assert_eq!(b.len(), 3 + 203);
    }
}
