//! The one way in for a recording: [`Recording::open`] opens the input once (a file or `-`,
//! decompressed if it was compressed as a whole, its kind told by
//! [`InputKind::detect`](cpiflame_perf_data::InputKind::detect)) with the options every
//! command builds the same way ([`LoadOptions`]: roles, resolver, roots), and hands the
//! command a typed value that reads it as the command needs: a profile with roles
//! ([`Recording::load`]), the load profile of a memory recording ([`Recording::loads`]), or
//! perf c2c's report of a memory recording ([`Recording::c2c_report`]), or the perf.data
//! file itself with the resolver to name it ([`Recording::perf_data`]).

use cpiflame_memaccess::c2c::{report, C2cError, HitmSort, Report};
use cpiflame_perf_data::{Input, InputKind, PerfData};

use crate::load::{load_input, Loaded};
use crate::load_options::{LoadError, LoadOptions};
use crate::memory::{load_profile, LoadProfile, MemoryError};
use crate::walker::Walker;

/// A recording opened, not yet read.
pub struct Recording<'a> {
    options: &'a LoadOptions,
    input: Input,
}

impl<'a> Recording<'a> {
    /// Opens `options.file` (standard input for `-`: it can be read once, so only here).
    pub fn open(options: &'a LoadOptions) -> Result<Recording<'a>, LoadError> {
        let input = cpiflame_perf_data::open_input(&options.file)?;
        Ok(Recording { options, input })
    }

    /// How the recording was opened.
    pub fn options(&self) -> &'a LoadOptions {
        self.options
    }

    /// What the input is (after decompression).
    pub fn kind(&self) -> InputKind {
        self.input.kind()
    }

    /// True for perf.data in any of its forms (file or pipe mode, or one the reader refuses
    /// by name: big-endian, version 1), false for text.
    pub fn is_perf_data(&self) -> bool {
        matches!(
            self.kind(),
            InputKind::PerfData
                | InputKind::PerfDataPipe
                | InputKind::PerfDataBigEndian
                | InputKind::PerfDataVersion1
        )
    }

    /// The input's bytes (decompressed).
    pub fn bytes(&self) -> &[u8] {
        self.input.bytes()
    }

    /// The profile with its roles chosen (perf.data, `perf script` text or folded text):
    /// see [`load_any`](crate::load_any). Warnings are pushed as they arise.
    pub fn load(self, warnings: &mut Vec<String>) -> Result<Loaded, LoadError> {
        load_input(self.options, self.input, warnings)
    }

    /// The load samples' profile of a memory recording: see
    /// [`load_loads`](crate::load_loads).
    pub fn loads(self, warnings: &mut Vec<String>) -> Result<LoadProfile, MemoryError> {
        let file = PerfData::from_input(self.input)?;
        load_profile(&file, self.options, warnings)
    }

    /// perf c2c's report of the memory samples, cache lines ordered by `sort`. The file's
    /// warnings are pushed to `warnings`.
    pub fn c2c_report(
        self,
        sort: HitmSort,
        warnings: &mut Vec<String>,
    ) -> Result<Report, C2cReportError> {
        let options = self.options;
        if options.region.is_some() {
            return Err(
                LoadError::Region(Box::new(crate::region::RegionError::NotHere {
                    command: "c2c",
                }))
                .into(),
            );
        }
        let file = self.perf_data()?;
        let Walker {
            mut resolver,
            times,
            ..
        } = Walker::new(&file, options, warnings)?;
        let keep = |ns| times.as_ref().is_none_or(|t| t.contains(ns));
        Ok(report(&file, &mut resolver, sort, keep)?)
    }

    /// The perf.data file itself (what no reader recognises gets the perf.data reader's
    /// error, naming the magic found); a [`Walker`](crate::Walker) names its frames.
    pub fn perf_data(self) -> Result<PerfData, LoadError> {
        let kind = match self.kind() {
            InputKind::Folded => Some("folded"),
            InputKind::PerfScript => Some("perf script"),
            _ => None,
        };
        if let Some(kind) = kind {
            return Err(LoadError::NeedsPerfData {
                file: self.options.file.clone(),
                kind,
            });
        }
        Ok(PerfData::from_input(self.input)?)
    }
}

/// Why a recording has no c2c report.
#[derive(Debug, thiserror::Error)]
pub enum C2cReportError {
    /// The file could not be read, or the `--kallsyms` file named.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The file has no memory samples, or they do not parse.
    #[error(transparent)]
    C2c(#[from] C2cError),
}
