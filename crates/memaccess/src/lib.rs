//! Memory-access samples (`perf mem`, `perf c2c`): what the kernel's `perf_mem_data_src`
//! says about each access ([`DataSource`]), where a load was served from on one scale from
//! near to far ([`ServedFrom`]), perf c2c's per-sample counters ([`C2cStats`], the facts of
//! perf's `c2c_decode_stats`), and the c2c report itself: trace summary, shared cache lines
//! and who touches each offset of them ([`c2c`]).

pub mod c2c;
mod c2c_text;
mod data_source;
mod stats;

pub use data_source::{bits, DataSource, ServedFrom};
pub use stats::C2cStats;
