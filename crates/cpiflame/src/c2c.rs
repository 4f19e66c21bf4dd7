//! `c2c`: perf c2c's report of a recording with memory samples (trace summary, shared cache
//! lines, who touches each line), as text or JSON. The counting is `cpiflame-memaccess`'s.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};
use cpiflame_memaccess::c2c::HitmSort;
use cpiflame_pipeline::options::Environment;
use cpiflame_pipeline::Recording;

use crate::{warned, write_out, Outcome};

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
    file: PathBuf,
    /// Which HITMs select and order the cache lines.
    #[arg(long, value_enum, default_value = "tot")]
    sort: SortBy,
    /// Print the report as JSON (schema `cpiflame-c2c/1`, see docs/cli.md).
    #[arg(long)]
    json: bool,
    /// Write to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    #[command(flatten)]
    read: crate::draw::ReadArgs,
}

pub fn c2c(args: C2cArgs, env: &Environment) -> Result<Outcome> {
    let options = args.read.options(args.file, env);
    let sort = match args.sort {
        SortBy::Tot => HitmSort::Total,
        SortBy::Rmt => HitmSort::Remote,
        SortBy::Lcl => HitmSort::Local,
    };
    let report = warned(|w| Recording::open(&options)?.c2c_report(sort, w))?;
    write_out(&args.output, |out| Ok(report.write(args.json, out)?))?;
    Ok(Outcome::Done)
}
