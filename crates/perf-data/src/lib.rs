//! Reading perf.data files (as written by `perf record` and `cpiflame record`).
//!
//! The feature sections (event names, build ids, host and command) are parsed by
//! `linux-perf-data`, the reader samply uses. The header, the attrs and the records are walked
//! here, over a memory map, so that every error can name the byte offset at fault, a file cut
//! short by a killed recorder can still be read, section sizes are checked against the file
//! before anything is allocated, and PERF_SAMPLE_READ group values are parsed in the kernel's
//! layout.
//!
//! This crate must never panic or allocate more than the file could hold on hostile input.

pub mod abi;
mod bytes;
mod error;
mod file;
mod records;
mod sample;
pub mod write;

pub use abi::attr_flags;
pub use bytes::Endian;
pub use error::{ErrorKind, ReadError};
pub use file::{BuildIdEntry, EventAttr, Meta, PerfData};
pub use records::{parse_side_band, MmapRecord, Record, RecordKind, Records};
pub use sample::{
    parse_sample_record, trim_user_stack, trim_user_stack_to, ReadValues, Sample, U64s, UserRegs,
    UserStack,
};
