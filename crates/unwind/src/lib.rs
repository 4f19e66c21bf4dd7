//! Unwinding and symbolization: from a sample's registers, stack copy and kernel call chain
//! to a list of named frames.
//!
//! It must never write anything, never name a frame it cannot name honestly (a wrong name is
//! worse than none: such a frame is `module+0xOFFSET`), and never name a file recorded on
//! another machine from this one's kernel, vDSO or JIT maps.
//!
//! - User stacks are unwound with framehop from DWARF CFI (`.eh_frame`, `.eh_frame_hdr`,
//!   `.debug_frame`), falling back to frame pointers where there is none; a user call chain
//!   recorded with `-g` (frame pointers, by the kernel) is used as it is.
//! - Names come from addr2line (inlined functions as their own frames) and the ELF symbol
//!   table (the function's own name, as `perf script` shows it), demangled.
//! - Kernel frames come from the sample's kernel call chain, named from `/proc/kallsyms` when
//!   the file was recorded on this machine.
//!
//! Everything read from outside the recording (binaries, debug files, kernel symbols, JIT
//! maps, the vDSO, the machine's identity), and the debug-section cache's entries read and
//! written, go through one [`Source`]; [`HostSource`] reads (and writes) the host. The addresses involved live in three spaces, typed apart in [`address`].
//!
//! Unwinding is apart from naming: an [`Unwinder`] keeps the processes' mappings and images
//! and unwinds user stacks into typed addresses ([`address::StackFrame`]), names nothing, and
//! serves alone where only stacks are needed (the recorder's stack-copy trimming, the
//! pipeline's unwinding thread); a [`Namer`] names addresses (ELF symbols, PLT stubs, DWARF,
//! kernel symbols, JIT maps, the vDSO's image; thread names) from the unwinder's images and
//! the [`Source`], and changes nothing of the unwinder's; a [`Resolver`] is the two and the
//! per-sample glue: the call chain split into kernel and user parts, the user part unwound
//! (or stitched from an LBR call stack), both named. Each frame of a resolved stack keeps its
//! typed address ([`address::EntryAddress`]), so callers that look it up again (source lines,
//! mappings) look up the address naming used.
//!
//! Modules: `resolver` (the per-sample glue, with its `unwinder` (process state and
//! user-stack unwinding, in `stack`), its `namer` and `locations`), `process` (one process's
//! mappings), `frames` (the frame table), `image` (one ELF file), `plt` (its PLT stubs'
//! names), `locate` (which files to try), `kernel` and `perfmap` (kernel symbols and JIT
//! maps), `source` (the outside world), `in_root` (a container's files opened as it sees them,
//! resolved inside its root), `address` (typed addresses), `demangle`, `shared`
//! (byte ranges shared with framehop and gimli), `options`.

pub mod address;
mod demangle;
mod dwarf;
mod frames;
mod image;
mod in_root;
mod jit;
pub mod jitdump;
mod kernel;
mod locate;
mod notes;
mod options;
mod perfmap;
mod plt;
mod process;
mod resolver;
mod sections;
mod shared;
mod source;

pub use demangle::{demangle, strip_signature};
pub use frames::{CodeSite, FrameInfo, FrameKind, FrameRef, StackEntry};
pub use image::{check_symbol_cache_entry, DwarfFrame, Image, ImageError, NamedFrame};
pub use in_root::{open_in_root, under_process_root, NO_OPENAT2};
pub use jit::JitCodeRef;
pub use kernel::{Kallsyms, KallsymsError, KernelSymbolFiles};
pub use locate::Locator;
pub use notes::gnu_build_id_note;
pub use options::Options;
pub use perfmap::PerfMap;
pub use resolver::locations::{CodeAddress, CodeFile, MappingInfo, SourceFrame, SourceLine};
pub use resolver::{Namer, Resolver, Stats, TwinRecipe, Unnamed, Unwinder};
pub use shared::SharedBytes;
pub use source::{foreign_root, open_regular, HostSource, Machine, Source};
