//! Export to the profile viewers people already use: the Firefox Profiler ([`firefox`]) and
//! speedscope ([`speedscope`]).
//!
//! Both start from one reading of the recording ([`read`]): every sample the profile counts,
//! with its time, thread, stack and weight in each of the profile's columns, and its frames
//! with what cpiflame knows of them (name, module, kind, source file and line, and for
//! user code the library and the address in it). A perf.data file is read once, by the
//! loader's own walk ([`cpiflame_pipeline::load_walked`] with a [`SampleVisitor`]), so the
//! roles, the wall-time columns and the weights are the ones `report` and `render` use;
//! `perf script` text keeps the time of each of its samples; folded text has no times and
//! one "sample" per stack.
//!
//! Nothing here prints or exits: the writers return bytes or typed errors, and never panic
//! on a recording, however odd (a test feeds them hostile profiles).
//!
//! [`SampleVisitor`]: cpiflame_pipeline::SampleVisitor

pub mod firefox;
mod read;
pub mod speedscope;

use std::path::PathBuf;

use cpiflame_pipeline::Roles;
use cpiflame_profile::{FrameKind, WallColumns};

pub use read::read;

/// A recording read for a viewer: its samples in time order with their threads and stacks.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    pub file: PathBuf,
    /// The profile's column names (events, then the wall-time columns).
    pub columns: Vec<String>,
    /// Which column is which role, as `report` chose them.
    pub roles: Roles,
    /// The wall-time columns, when the recording has off-CPU data.
    pub wall: Option<WallColumns>,
    pub threads: Vec<Thread>,
    pub frames: Vec<Frame>,
    pub libs: Vec<Lib>,
    /// Each stack's frames, outermost first (indexes into `frames`).
    pub stacks: Vec<Vec<u32>>,
    /// In time order (samples without a time keep the order they were read in).
    pub samples: Vec<Sample>,
    /// Whether the samples carry times (not for folded text).
    pub timed: bool,
    /// The `--time` ranges the recording was cut to, in the samples' clock's nanoseconds
    /// (an open end is the first or last sample's time).
    pub time_ranges: Vec<(u64, u64)>,
    /// What the reader of the profile should know (the graph's subtitle lines).
    pub notes: Vec<String>,
}

/// A thread as the samples name it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Thread {
    pub pid: i32,
    pub tid: i32,
    /// The thread's name (comm).
    pub name: String,
    /// Its process's name (the main thread's comm).
    pub process: String,
    /// The first and last sample's time.
    pub first: u64,
    pub last: u64,
}

/// A frame: one function at one place of one stack.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    pub name: String,
    /// Short module name (`libc.so.6`, `[kernel.kallsyms]`), empty when unknown.
    pub module: String,
    pub kind: FrameKind,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// Where in a library the frame's code is, for user frames of a file-backed mapping.
    pub address: Option<Address>,
}

/// A frame's place in a library.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Address {
    /// Index into [`Recorded::libs`].
    pub lib: u32,
    /// The address the frame was named by (for a caller, the byte before its return
    /// address), relative to the library: its file offset, as samply and the Firefox
    /// Profiler count them.
    pub relative: u64,
    /// A caller's frame (its address is a return address), not the sampled instruction.
    pub return_address: bool,
    /// 0 for the function the code belongs to; 1, 2, ... for the functions inlined into it
    /// at that address, outermost first.
    pub inline_depth: u16,
}

/// A library (executable, shared object, JIT image) that sampled code was in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Lib {
    /// The file's name.
    pub name: String,
    /// The path the recording gives.
    pub path: String,
    pub build_id: Option<Vec<u8>>,
}

/// One sample's weight in one column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// Nanoseconds of the samples' clock (0 without times).
    pub time: u64,
    /// Index into [`Recorded::threads`].
    pub thread: u32,
    /// Index into [`Recorded::stacks`].
    pub stack: u32,
    /// The profile's column.
    pub column: u32,
    /// The sample's period in that column (nanoseconds for the wall-time columns).
    pub weight: u64,
}

impl Recorded {
    /// The columns a viewer weighs its samples by: the wall-time columns of a recording with
    /// off-CPU data (on-CPU, runnable, blocked nanoseconds), else the cycles role's.
    pub fn width_columns(&self) -> Vec<u32> {
        match (self.wall, self.roles.cycles) {
            (Some(w), _) => w.all().iter().map(|&c| c.index() as u32).collect(),
            (None, Some(c)) => vec![c as u32],
            (None, None) => Vec::new(),
        }
    }

    /// Each stack's stall share: its stall cycles over its cycles (0 to 1), the ratio the
    /// CPI graph colours its frames by; `None` without a stall event.
    pub fn stall_shares(&self) -> Option<Vec<f64>> {
        let (stalls, cycles) = (self.roles.stalls? as u32, self.roles.cycles? as u32);
        let mut sums = vec![(0u64, 0u64); self.stacks.len()];
        for s in &self.samples {
            let Some(sum) = sums.get_mut(s.stack as usize) else {
                continue;
            };
            if s.column == stalls {
                sum.0 = sum.0.saturating_add(s.weight);
            }
            if s.column == cycles {
                sum.1 = sum.1.saturating_add(s.weight);
            }
        }
        Some(
            sums.into_iter()
                .map(|(stalls, cycles)| match cycles {
                    0 => 0.0,
                    c => (stalls as f64 / c as f64).clamp(0.0, 1.0),
                })
                .collect(),
        )
    }

    /// A thread's label: `name (pid/tid)`, or `name (tid)` for a process's main thread and
    /// where the pid is not known (`perf script` text prints none by default).
    pub fn thread_label(&self, thread: &Thread) -> String {
        if thread.pid == thread.tid || thread.pid < 0 {
            format!("{} ({})", thread.name, thread.tid)
        } else {
            format!("{} ({}/{})", thread.name, thread.pid, thread.tid)
        }
    }
}

/// Why a recording could not be exported.
#[derive(Debug, thiserror::Error)]
pub enum ViewerError {
    #[error(transparent)]
    Load(#[from] cpiflame_pipeline::LoadError),
    #[error(transparent)]
    Timed(#[from] cpiflame_pipeline::timeline::TimelineError),
    /// A format that places samples in time given a recording without times.
    #[error("{}: {why}", file.display())]
    NoTimes { file: PathBuf, why: String },
    /// Standard input that would have to be read twice.
    #[error("-: {0}")]
    Stdin(String),
    /// The writer's own output did not come out as it must (a bug, said rather than hidden).
    #[error("{0}")]
    Internal(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// `bytes` gzip-compressed.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = gz.write_all(bytes);
    gz.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recording whose indexes point nowhere, with weights past 32 bits, times out of
    /// order and threads without samples: the writers neither panic nor lose weight.
    fn hostile() -> Recorded {
        let frame = |name: &str, address: Option<Address>| Frame {
            name: name.into(),
            module: String::new(),
            kind: FrameKind::User,
            file: Some("a.c".into()),
            line: Some(3),
            address,
        };
        let at = |relative, inline_depth| Address {
            lib: 0,
            relative,
            return_address: false,
            inline_depth,
        };
        Recorded {
            file: "x.data".into(),
            columns: vec!["cycles".into(), "stalls".into()],
            roles: Roles {
                cycles: Some(0),
                stalls: Some(1),
                instructions: Some(7),
            },
            threads: vec![
                Thread {
                    pid: -1,
                    tid: -1,
                    last: 5,
                    ..Thread::default()
                },
                Thread::default(),
            ],
            frames: vec![
                frame("f", Some(at(1 << 40, 0))),
                frame("g", Some(at(16, 0))),
                frame("g", Some(at(17, 1))),
                frame("h", Some(Address { lib: 9, ..at(4, 0) })),
            ],
            libs: vec![Lib::default()],
            stacks: vec![vec![0, 1, 2, 3, 99], vec![], vec![1, 1, 1]],
            samples: vec![
                Sample {
                    time: 9,
                    thread: 0,
                    stack: 0,
                    column: 0,
                    weight: u64::MAX,
                },
                Sample {
                    time: 3,
                    thread: 0,
                    stack: 2,
                    column: 0,
                    weight: 5_000_000_000,
                },
                Sample {
                    time: 1,
                    thread: 0,
                    stack: 1,
                    column: 1,
                    weight: 1,
                },
                Sample {
                    time: 1,
                    thread: 7,
                    stack: 0,
                    column: 0,
                    weight: 1,
                },
                Sample {
                    time: 1,
                    thread: 0,
                    stack: 42,
                    column: 0,
                    weight: 1,
                },
                Sample {
                    time: 2,
                    thread: 0,
                    stack: 2,
                    column: 9,
                    weight: 1,
                },
            ],
            timed: true,
            time_ranges: vec![(0, 100), (50, 10)],
            ..Recorded::default()
        }
    }

    #[test]
    fn odd_recordings_write_without_panicking() {
        let mut recorded = hostile();
        let json: serde_json::Value =
            serde_json::from_slice(&speedscope::write(&recorded)).unwrap();
        assert!(json["profiles"].as_array().is_some());
        let ff = firefox::write(&recorded, &firefox::Options::default()).unwrap();
        let ff: serde_json::Value = serde_json::from_slice(&ff).unwrap();
        // The 5e9 weight is three samples at one time, none lost.
        let weights: i64 = ff["threads"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| t["samples"]["weight"].as_array().unwrap().clone())
            .map(|w| w.as_i64().unwrap())
            .sum();
        assert!(weights >= 5_000_000_000, "{weights}");
        recorded.wall = Some(WallColumns {
            on_cpu: cpiflame_profile::Column(0),
            runnable: cpiflame_profile::Column(1),
            blocked: cpiflame_profile::Column(5),
        });
        recorded.roles = Roles::default();
        firefox::write(&recorded, &firefox::Options::default()).unwrap();
        speedscope::write(&recorded);
        // Without times: speedscope writes it, the Firefox Profiler's writer says why not.
        recorded.timed = false;
        speedscope::write(&recorded);
        assert!(matches!(
            firefox::write(&recorded, &firefox::Options::default()),
            Err(ViewerError::NoTimes { .. })
        ));
        let empty = Recorded {
            timed: true,
            ..Recorded::default()
        };
        firefox::write(&empty, &firefox::Options::default()).unwrap();
        speedscope::write(&empty);
    }

    /// Each stack's samples are marked Stalled in the share its stall and cycles columns give
    /// it (error diffusion, so to the sample), a share above 1 counting as 1: `f` has 8
    /// cycles samples and a quarter as many stalls (2 marked), `g` 4 and more stalls than
    /// cycles (all 4 marked).
    #[test]
    fn stalled_samples_follow_each_stacks_stall_share() {
        let frame = |name: &str| Frame {
            name: name.into(),
            module: String::new(),
            kind: cpiflame_profile::FrameKind::User,
            file: None,
            line: None,
            address: None,
        };
        let sample = |time: u64, stack: u32, column: u32, weight: u64| Sample {
            time,
            thread: 0,
            stack,
            column,
            weight,
        };
        let mut samples = Vec::new();
        for i in 0..8 {
            samples.push(sample(10 * i, 0, 0, 100));
        }
        samples.push(sample(85, 0, 1, 200));
        for i in 0..4 {
            samples.push(sample(100 + 10 * i, 1, 0, 100));
        }
        samples.push(sample(145, 1, 1, 600));
        let recorded = Recorded {
            file: "x.data".into(),
            columns: vec!["cycles".into(), "stalls".into()],
            roles: Roles {
                cycles: Some(0),
                stalls: Some(1),
                instructions: None,
            },
            threads: vec![Thread {
                pid: 1,
                tid: 1,
                name: "t".into(),
                ..Thread::default()
            }],
            frames: vec![frame("f"), frame("g")],
            stacks: vec![vec![0], vec![1]],
            samples,
            timed: true,
            ..Recorded::default()
        };
        let ff = firefox::write(&recorded, &firefox::Options::default()).unwrap();
        let p: serde_json::Value = serde_json::from_slice(&ff).unwrap();
        let categories: Vec<&str> = p["meta"]["categories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        let t = &p["threads"][0];
        let mut marked: std::collections::BTreeMap<String, (u32, u32)> = Default::default();
        for stack in t["samples"]["stack"].as_array().unwrap() {
            let frame = t["stackTable"]["frame"][stack.as_u64().unwrap() as usize]
                .as_u64()
                .unwrap() as usize;
            let func = t["frameTable"]["func"][frame].as_u64().unwrap() as usize;
            let name = t["stringArray"][t["funcTable"]["name"][func].as_u64().unwrap() as usize]
                .as_str()
                .unwrap()
                .to_string();
            let category = t["frameTable"]["category"][frame].as_u64().unwrap() as usize;
            let e = marked.entry(name).or_default();
            e.1 += 1;
            e.0 += u32::from(categories[category] == "Stalled");
        }
        assert_eq!(marked["f"], (2, 8));
        assert_eq!(marked["g"], (4, 4));
    }
}
