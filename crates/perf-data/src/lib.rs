//! Reading perf.data files (as written by `perf record` and `cpiflame record`).
//!
//! The header, the attrs, the feature sections cpiflame uses and the records are walked here,
//! over a memory map, so that every error can name the byte offset at fault, a file cut short
//! by a killed recorder can still be read, every size and count a file claims is checked
//! against the bytes that hold it before anything is allocated, and PERF_SAMPLE_READ group
//! values are parsed in the kernel's layout. (`linux-perf-data` remains the writer's test
//! oracle; as a reader it trusts claimed counts, which fuzzing turned into a 133 GB request.)
//!
//! This crate must never panic or allocate more than the file could hold on hostile input.
//!
//! Writing: [`write`](mod@write) (the recorder's output, and tests' files); behind the
//! `synth` feature, which only tests enable, `synth` wraps it for tests' synthetic recordings.

pub mod abi;
mod attr;
mod bytes;
mod error;
mod features;
mod file;
mod flatten;
pub mod host;
pub mod input;
mod meta;
mod records;
mod sample;
#[cfg(feature = "synth")]
pub mod synth;
pub mod tracing;
pub use tracing::{TraceEvent, TraceField};
pub mod write;

pub use abi::attr_flags;
pub use attr::{EventAttr, ATTR_SIZE};
pub use bytes::Endian;
pub use error::{ErrorKind, ReadError};
pub use file::PerfData;
pub use flatten::DEFAULT_CHUNK_LIMIT;
pub use input::{open_input, Compression, Input, InputKind};
pub use meta::{BuildIdEntry, ClockData, CompressionInfo, Meta};
pub use records::{
    parse_side_band, MmapRecord, NamespacesRecord, ReadRecord, Record, RecordKind, RecordView,
    Records,
};
pub use sample::{
    parse_sample_record, trim_user_stack, trim_user_stack_to, BranchEntry, BranchStack, ReadView,
    Sample, U64s, UserRegs, UserStack, Weight, BRANCH_SAMPLE_CALL_STACK,
};
