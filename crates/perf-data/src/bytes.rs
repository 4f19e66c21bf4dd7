//! Bounds-checked reads of integers from byte slices, in the file's byte order.

/// The byte order of the file (perf.data keeps the recording machine's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

impl Endian {
    /// The byte order of this machine: that of records drained from its ring buffers.
    pub const NATIVE: Endian = if cfg!(target_endian = "little") {
        Endian::Little
    } else {
        Endian::Big
    };

    pub fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }
    pub fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }
    pub fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        }
    }
}

/// The u64 at `offset` of `data`, or `None` past the end.
pub fn u64_at(data: &[u8], offset: usize, e: Endian) -> Option<u64> {
    let b = data.get(offset..offset.checked_add(8)?)?;
    Some(e.u64(b.try_into().ok()?))
}

/// The u32 at `offset` of `data`, or `None` past the end.
pub fn u32_at(data: &[u8], offset: usize, e: Endian) -> Option<u32> {
    let b = data.get(offset..offset.checked_add(4)?)?;
    Some(e.u32(b.try_into().ok()?))
}

/// The u16 at `offset` of `data`, or `None` past the end.
pub fn u16_at(data: &[u8], offset: usize, e: Endian) -> Option<u16> {
    let b = data.get(offset..offset.checked_add(2)?)?;
    Some(e.u16(b.try_into().ok()?))
}

/// A forward cursor over a record body; every read fails cleanly at the end.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    endian: Endian,
}

impl<'a> Cursor<'a> {
    pub fn new(data: &'a [u8], endian: Endian) -> Self {
        Cursor {
            data,
            pos: 0,
            endian,
        }
    }
    pub fn u64(&mut self) -> Option<u64> {
        let v = u64_at(self.data, self.pos, self.endian)?;
        self.pos += 8;
        Some(v)
    }
    pub fn u32(&mut self) -> Option<u32> {
        let v = u32_at(self.data, self.pos, self.endian)?;
        self.pos += 4;
        Some(v)
    }
    /// The next `n` bytes.
    pub fn bytes(&mut self, n: u64) -> Option<&'a [u8]> {
        let n = usize::try_from(n).ok()?;
        let end = self.pos.checked_add(n)?;
        let b = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(b)
    }
    /// The next `n` u64 values, as raw bytes.
    pub fn u64s(&mut self, n: u64) -> Option<&'a [u8]> {
        self.bytes(n.checked_mul(8)?)
    }
    pub fn skip(&mut self, n: u64) -> Option<()> {
        self.bytes(n).map(|_| ())
    }
    pub fn endian(&self) -> Endian {
        self.endian
    }
    pub fn remaining(&self) -> &'a [u8] {
        &self.data[self.pos.min(self.data.len())..]
    }
}

/// The bytes up to the first NUL (or all of them).
pub fn c_str(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(n) => &b[..n],
        None => b,
    }
}
