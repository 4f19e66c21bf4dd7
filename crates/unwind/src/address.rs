//! The three address spaces a sampled address passes through on its way to a name, as types
//! so that one cannot be used where another is meant:
//!
//! - [`Avma`], "actual virtual memory address": where a byte was in the sampled process
//!   (instruction pointers, return addresses, mmap ranges).
//! - [`Svma`], "stated virtual memory address": an address as the ELF file states it (symbol
//!   values, DWARF ranges, `p_vaddr`, section addresses); what symbol tables and addr2line
//!   are asked about.
//! - [`FileOffset`]: a byte position in the file (an mmap's `pgoff`, `p_offset`); what
//!   `module+0xOFFSET` names show, because it is the same in every run of the program.
//!
//! A mapping of a file relates them: `AVMA = SVMA + base`, where `base` (framehop's
//! `base_avma`: the AVMA at which SVMA 0 lies) is computed per mapping from the segment it
//! holds, and `file offset = AVMA - mapping start + pgoff`.
//!
//! All arithmetic wraps: the addresses come from recordings, which may be corrupt or hostile,
//! and a nonsense address must give a nonsense lookup (that finds nothing), never a panic.

/// An address in the sampled process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Avma(pub u64);

/// An address as stated in an ELF file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Svma(pub u64);

/// A byte position in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileOffset(pub u64);

impl Avma {
    /// The stated address of this one in an image mapped with `base` (the AVMA of SVMA 0).
    pub fn to_svma(self, base: Avma) -> Svma {
        Svma(self.0.wrapping_sub(base.0))
    }

    /// This address minus `bytes`.
    pub fn minus(self, bytes: u64) -> Avma {
        Avma(self.0.wrapping_sub(bytes))
    }
}

impl Svma {
    /// Where this stated address lies in a process that mapped the image at `base`.
    pub fn to_avma(self, base: Avma) -> Avma {
        Avma(self.0.wrapping_add(base.0))
    }
}

/// One frame of an unwound user stack, innermost first, as unwinding hands it to naming: the
/// address in the process and what kind of address it is, which decides the address to look
/// up ([`StackFrame::lookup`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StackFrame {
    /// The instruction itself: the leaf's instruction pointer, or a branch's source or target
    /// from an LBR call stack. Looked up as it is.
    Instruction(Avma),
    /// A return address: it points after the call, possibly into the next function or line,
    /// so the byte before it is looked up.
    ReturnAddress(Avma),
}

impl StackFrame {
    /// The address in the process (for a return address, the return address itself).
    pub fn address(self) -> Avma {
        match self {
            StackFrame::Instruction(a) | StackFrame::ReturnAddress(a) => a,
        }
    }

    /// The address to name: the instruction's, or the byte before a return address.
    pub fn lookup(self) -> Avma {
        match self {
            StackFrame::Instruction(a) => a,
            StackFrame::ReturnAddress(a) => a.minus(1),
        }
    }
}

/// The address of a frame of a resolved stack ([`StackEntry`](crate::StackEntry)), with what
/// kind of address it is, which says the address its frames were named by
/// ([`EntryAddress::lookup`]): callers that look the address up again (source lines, the
/// mapping) ask for the same one naming used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryAddress {
    /// A kernel address. Named as it is, return addresses too, as perf names the kernel's
    /// call chain: a return address at a function's first byte (the chain of a tail call) is
    /// that function's, not the padding before it.
    Kernel(Avma),
    /// A user frame, as unwinding (or the recorded call chain, or an LBR call stack) gave it.
    User(StackFrame),
}

impl EntryAddress {
    /// The address in the process (for a return address, the return address itself).
    pub fn address(self) -> Avma {
        match self {
            EntryAddress::Kernel(a) => a,
            EntryAddress::User(frame) => frame.address(),
        }
    }

    /// The address the frames were named by.
    pub fn lookup(self) -> Avma {
        match self {
            EntryAddress::Kernel(a) => a,
            EntryAddress::User(frame) => frame.lookup(),
        }
    }
}

/// Where a range of a file was mapped: `len` bytes from file offset `pgoff` at process
/// address `start`. The one place that converts between file offsets and process addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMapping {
    pub start: Avma,
    pub pgoff: FileOffset,
    pub len: u64,
}

impl FileMapping {
    /// The first process address after the mapping (saturated, as a corrupt length may be
    /// anything).
    pub fn end(&self) -> Avma {
        Avma(self.start.0.saturating_add(self.len))
    }

    /// Whether the file bytes at `offset .. offset + size` overlap the mapped ones.
    pub fn holds_any_of(&self, offset: FileOffset, size: u64) -> bool {
        offset.0 < self.pgoff.0.saturating_add(self.len)
            && offset.0.saturating_add(size) > self.pgoff.0
    }

    /// The process address at which the file byte at `offset` is (or would be) mapped.
    pub fn avma_of(&self, offset: FileOffset) -> Avma {
        Avma(
            self.start
                .0
                .wrapping_sub(self.pgoff.0)
                .wrapping_add(offset.0),
        )
    }

    /// The file offset of the byte mapped at `avma`.
    pub fn file_offset_of(&self, avma: Avma) -> FileOffset {
        FileOffset(avma.0.wrapping_sub(self.start.0).wrapping_add(self.pgoff.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_between_the_three_spaces() {
        // A library's code segment (p_offset 0x1000, p_vaddr 0x1000) mapped from page 0x1000.
        let m = FileMapping {
            start: Avma(0x7f00_0000_1000),
            pgoff: FileOffset(0x1000),
            len: 0x2000,
        };
        let base = m.avma_of(FileOffset(0x1000)).minus(0x1000);
        assert_eq!(base, Avma(0x7f00_0000_0000));
        assert_eq!(Avma(0x7f00_0000_1234).to_svma(base), Svma(0x1234));
        assert_eq!(Svma(0x1234).to_avma(base), Avma(0x7f00_0000_1234));
        assert_eq!(m.file_offset_of(Avma(0x7f00_0000_1234)), FileOffset(0x1234));
        assert_eq!(m.end(), Avma(0x7f00_0000_3000));
        assert!(m.holds_any_of(FileOffset(0), 0x1001));
        assert!(!m.holds_any_of(FileOffset(0), 0x1000));
        assert!(!m.holds_any_of(FileOffset(0x3000), 0x10));
        // Nonsense wraps instead of panicking.
        assert_eq!(Avma(0).to_svma(Avma(1)), Svma(u64::MAX));
        assert_eq!(StackFrame::ReturnAddress(Avma(0)).lookup(), Avma(u64::MAX));
        assert_eq!(StackFrame::ReturnAddress(Avma(8)).lookup(), Avma(7));
        assert_eq!(StackFrame::Instruction(Avma(8)).lookup(), Avma(8));
        let user = EntryAddress::User(StackFrame::ReturnAddress(Avma(8)));
        assert_eq!((user.address(), user.lookup()), (Avma(8), Avma(7)));
        let kernel = EntryAddress::Kernel(Avma(8));
        assert_eq!((kernel.address(), kernel.lookup()), (Avma(8), Avma(8)));
    }
}
