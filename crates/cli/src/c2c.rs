//! `c2c`'s flags.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use cpiflame_memaccess::c2c::HitmSort;

use crate::read::ReadArgs;

#[derive(Clone, Copy, ValueEnum)]
pub enum SortBy {
    /// Local plus remote HITMs (perf c2c's default).
    Tot,
    /// Remote HITMs.
    Rmt,
    /// Local HITMs.
    Lcl,
}

#[derive(Args)]
pub struct C2cArgs {
    /// perf.data with memory samples (`cpiflame record --mem`, `perf c2c record`); `-` reads
    /// standard input.
    #[arg(default_value = "out.data")]
    pub file: PathBuf,
    /// Which HITMs select and order the cache lines.
    #[arg(long, value_enum, default_value = "tot")]
    pub sort: SortBy,
    /// Print the report as JSON (schema `cpiflame-c2c/1`, see docs/cli.md).
    #[arg(long)]
    pub json: bool,
    /// Write to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub read: ReadArgs,
}

impl SortBy {
    /// The order `cpiflame-memaccess` sorts by.
    pub fn hitm_sort(self) -> HitmSort {
        match self {
            SortBy::Tot => HitmSort::Total,
            SortBy::Rmt => HitmSort::Remote,
            SortBy::Lcl => HitmSort::Local,
        }
    }
}
