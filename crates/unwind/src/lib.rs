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
//! pipeline's unwinding thread); a [`Resolver`] names, with an unwinder of its own inside.
//!
//! Modules: `resolver` (thread names and the per-sample path, with its `unwinder` (process
//! state and user-stack unwinding, in `stack`) and frame naming), `process` (one process's mappings), `frames` (the frame
//! table), `image` (one ELF file), `plt` (its PLT stubs' names), `locate` (which files to
//! try), `kernel` and `perfmap` (kernel symbols and JIT maps), `source` (the outside world),
//! `demangle`, `shared` (byte ranges shared with framehop and gimli), `options`.

pub mod address;
mod demangle;
mod dwarf;
mod frames;
mod image;
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
pub use frames::{FrameInfo, FrameKind, FrameRef, StackEntry};
pub use image::{Image, ImageError, NamedFrame};
pub use kernel::{Kallsyms, KernelSymbolFiles};
pub use locate::Locator;
pub use notes::gnu_build_id_note;
pub use options::Options;
pub use perfmap::PerfMap;
pub use resolver::locations::{MappingInfo, SourceLine};
pub use resolver::{Resolver, Stats, TwinRecipe, Unnamed, Unwinder};
pub use shared::SharedBytes;
pub use source::{HostSource, Machine, Source};
