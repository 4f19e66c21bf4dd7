//! The bytes perf.data is made of: host-order integers, perf's padded strings, and the
//! checks every string and count goes through before it is written.
//!
//! Used by the writer, the record encoders and the feature encoders alike. It must never know
//! a record or feature layout: those are `records` and `features`.

use super::{Result, WriteError, NAME_ALIGN};

pub(super) fn u32_len(n: usize, what: &'static str) -> Result<u32> {
    u32::try_from(n).map_err(|_| WriteError::TooMany { what, count: n })
}

pub(super) fn check_no_nul(s: &str, what: &'static str) -> Result<()> {
    check_no_nul_bytes(s.as_bytes(), what)
}

pub(super) fn check_no_nul_bytes(s: &[u8], what: &'static str) -> Result<()> {
    if s.contains(&0) {
        return Err(WriteError::Nul {
            what,
            value: String::from_utf8_lossy(s).into_owned(),
        });
    }
    Ok(())
}

/// A little byte buffer writing host-order integers.
#[derive(Default)]
pub(super) struct Enc(pub(super) Vec<u8>);

impl Enc {
    pub(super) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub(super) fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }
    pub(super) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }
    pub(super) fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }
    pub(super) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }
    pub(super) fn bytes(&mut self, v: &[u8]) {
        self.0.extend_from_slice(v);
    }
    pub(super) fn zeros(&mut self, n: usize) {
        self.0.resize(self.0.len() + n, 0);
    }
    pub(super) fn pad_to(&mut self, align: usize) {
        let n = self.0.len().next_multiple_of(align) - self.0.len();
        self.zeros(n);
    }

    /// A NUL-terminated string padded to 8 bytes, as the kernel writes comm and filenames.
    pub(super) fn record_string(&mut self, s: &str, what: &'static str) -> Result<()> {
        check_no_nul(s, what)?;
        self.bytes(s.as_bytes());
        self.zeros((s.len() + 1).next_multiple_of(8) - s.len());
        Ok(())
    }

    /// perf's `do_write_string`: u32 length (including the NUL and padding), then the
    /// string NUL-padded to [`NAME_ALIGN`].
    pub(super) fn header_string(&mut self, s: &str, what: &'static str) -> Result<()> {
        check_no_nul(s, what)?;
        let len = (s.len() + 1).next_multiple_of(NAME_ALIGN);
        self.u32(u32_len(len, what)?);
        self.bytes(s.as_bytes());
        self.zeros(len - s.len());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_strings_pad_to_64_with_length_first() {
        let mut b = Enc::default();
        b.header_string("abc", "t").unwrap();
        assert_eq!(b.0.len(), 4 + 64);
        assert_eq!(u32::from_ne_bytes(b.0[..4].try_into().unwrap()), 64);
        assert_eq!(&b.0[4..8], b"abc\0");
        assert!(b.0[8..].iter().all(|&x| x == 0));
        let mut b = Enc::default();
        b.header_string(&"x".repeat(64), "t").unwrap();
        assert_eq!(u32::from_ne_bytes(b.0[..4].try_into().unwrap()), 128);
    }

    #[test]
    fn record_strings_pad_to_8_with_a_nul() {
        for (s, len) in [("", 8), ("1234567", 8), ("12345678", 16)] {
            let mut b = Enc::default();
            b.record_string(s, "t").unwrap();
            assert_eq!(b.0.len(), len, "{s:?}");
        }
    }
}
