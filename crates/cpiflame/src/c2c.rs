//! `c2c`: perf c2c's report of a recording with memory samples (trace summary, shared cache
//! lines, who touches each line), as text or JSON. The counting is `cpiflame-memaccess`'s.

use anyhow::Result;
use cpiflame_cli::c2c::C2cArgs;
use cpiflame_pipeline::options::Environment;
use cpiflame_pipeline::Recording;

use crate::{warned, write_out, Outcome};

pub fn c2c(args: C2cArgs, env: &Environment) -> Result<Outcome> {
    let options = args.read.options(args.file, env);
    let sort = args.sort.hitm_sort();
    let report = warned(|w| Recording::open(&options)?.c2c_report(sort, w))?;
    write_out(&args.output, |out| Ok(report.write(args.json, out)?))?;
    Ok(Outcome::Done)
}
