//! Reading perf.data files (as written by `perf record` and `cpiflame record`).
//!
//! The header, the event attrs and the feature sections are parsed by `linux-perf-data`, the
//! reader samply uses. Records are walked here, over a memory map, so that every error can
//! name the byte offset at fault, a file cut short by a killed recorder can still be read,
//! and PERF_SAMPLE_READ group values are parsed in the kernel's layout (the
//! `linux-perf-event-reader` 0.10 sample parser swaps the group and non-group layouts).
//!
//! This crate must never panic or allocate more than the file could hold on hostile input.

pub mod abi;
pub mod write;
