//! pprof export: a recording as pprof's `profile.proto`, gzip-compressed, as `go tool
//! pprof`, Grafana Pyroscope, Parca and other fleet profilers read it.
//!
//! Every event of the recording is two sample types, named as Google's
//! perf_data_converter names them: `EVENT_sample` (unit `count`: samples) and `EVENT_event`
//! (unit `count`: the summed sample periods, i.e. events counted). The values are the ones
//! `cpiflame fold --event EVENT` counts (samples) and the CPI graph weighs by (periods),
//! computed by the same code (`cpiflame_pipeline::SampleWeights`): a backend can divide
//! stall or instruction counts by cycles per stack exactly.
//!
//! The wall-time columns of a recording with off-CPU data (`on-cpu-time`, `runnable-time`,
//! `blocked-time`: `cpiflame_profile::wall`), whose periods are nanoseconds, are instead
//! `EVENT_sample` (unit `count`: the samples or off-CPU intervals that added to the column)
//! and `EVENT` with unit `nanoseconds` (`on-cpu-time/nanoseconds`, as pprof shows it): the
//! time itself, what `cpiflame fold --event EVENT` writes for them.
//!
//! - [`from_perf_data`]: a perf.data file, read once with real addresses: locations per
//!   address with their inlined frames and source lines, mappings per module, kernel frames
//!   under `[kernel.kallsyms]`, labels `thread`, `pid`, `tid` (`cgroup` where samples carry
//!   one, `region` with `--region`).
//! - [`from_loaded`]: text input (perf script, folded), which has no addresses: one
//!   location per distinct frame name, label `thread`.
//! - [`from_recording`]: either, as the opened recording's kind says.
//! - [`encode`] / [`decode`]: gzip-compressed protobuf and back.
//!
//! The messages ([`proto`]) are declared by hand with prost's derive from the .proto's
//! field numbers: no `protoc` at build time.

mod builder;
mod perf;
pub mod proto;
mod text;

use std::io::{Read, Write};

use cpiflame_pipeline::Recording;

pub use builder::{hex, Builder, FrameSpec, LabelValue, MappingSpec};
pub use perf::{from_perf_data, PerfSource};
pub use text::from_loaded;

use prost::Message;

/// The sample type of event `name`'s sample counts.
pub fn samples_type(name: &str) -> String {
    format!("{name}_sample")
}

/// The sample type of event `name`'s summed periods: `EVENT_event` (events counted), or
/// the name itself for a wall-time column (its periods are nanoseconds, [`period_unit`]).
pub fn events_type(name: &str) -> String {
    if is_wall_column(name) {
        name.to_string()
    } else {
        format!("{name}_event")
    }
}

/// The unit of event `name`'s summed periods: `nanoseconds` for the wall-time columns,
/// `count` (events) for every other event.
pub fn period_unit(name: &str) -> &'static str {
    if is_wall_column(name) {
        "nanoseconds"
    } else {
        "count"
    }
}

/// Whether `name` is one of the wall-time columns, whose periods are nanoseconds.
fn is_wall_column(name: &str) -> bool {
    use cpiflame_profile::wall::{BLOCKED, ON_CPU, RUNNABLE};
    [ON_CPU, RUNNABLE, BLOCKED].contains(&name)
}

/// The profile of a recording opened by the pipeline: perf.data with its addresses
/// ([`from_perf_data`], after the loader has chosen its roles), text through the loader
/// ([`from_loaded`]). Warnings are pushed to `warnings` as they arise, so they are there even
/// when making the profile then fails.
pub fn from_recording(
    recording: Recording<'_>,
    warnings: &mut Vec<String>,
) -> Result<proto::Profile, PprofError> {
    let options = recording.options();
    if !recording.is_perf_data() {
        return Ok(from_loaded(&recording.load(warnings)?));
    }
    let file = recording.perf_data()?;
    // When the recording ended, for `time_nanos`: the file's last change.
    let ended = std::fs::metadata(&options.file)
        .and_then(|m| m.modified())
        .ok();
    let source = PerfSource {
        file: &file,
        options,
        ended,
    };
    from_perf_data(&source, warnings)
}

/// Why a profile could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum PprofError {
    #[error(transparent)]
    PerfData(#[from] cpiflame_perf_data::ReadError),
    /// The recording's resolver could not be built (a `--kallsyms` file that cannot be read).
    #[error(transparent)]
    Load(#[from] cpiflame_pipeline::LoadError),
    #[error("not a pprof profile: {0}")]
    Decode(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// `profile` as pprof stores it: protobuf, gzip-compressed.
pub fn encode(profile: &proto::Profile) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = gz.write_all(&profile.encode_to_vec());
    gz.finish().unwrap_or_default()
}

/// A profile from `bytes`: protobuf, gzip-compressed or not.
pub fn decode(bytes: &[u8]) -> Result<proto::Profile, PprofError> {
    let raw;
    let gzip = cpiflame_perf_data::Compression::detect(bytes)
        == Some(cpiflame_perf_data::Compression::Gzip);
    let bytes = if gzip {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .map_err(|e| PprofError::Decode(format!("gzip: {e}")))?;
        raw = out;
        &raw[..]
    } else {
        bytes
    };
    proto::Profile::decode(bytes).map_err(|e| PprofError::Decode(e.to_string()))
}

/// Saturating conversion for values: periods are u64, pprof's values i64.
fn value(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_columns_are_nanoseconds_and_other_events_keep_their_names() {
        for name in [
            "cycles",
            "cpu-clock",
            "cpu_core/cycles/",
            "sched:sched_switch",
            "on-cpu",
        ] {
            assert_eq!(samples_type(name), format!("{name}_sample"));
            assert_eq!(events_type(name), format!("{name}_event"));
            assert_eq!(period_unit(name), "count");
        }
        for name in ["on-cpu-time", "runnable-time", "blocked-time"] {
            assert_eq!(samples_type(name), format!("{name}_sample"));
            assert_eq!(events_type(name), name);
            assert_eq!(period_unit(name), "nanoseconds");
        }
    }
}
