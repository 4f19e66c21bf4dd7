//! What a file being written holds, kept as its records are drained, for its feature
//! sections at the end: the files it maps executable (for their build ids), its containers'
//! files, its samples' time range and the clock they are on.
//!
//! It must never read a file twice for its build id while it is unchanged: `--switch-output`
//! lists every file again in each new file, and `record -a` maps large libraries.

use std::collections::{BTreeSet, HashMap};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::SystemTime;

use cpiflame_perf_data::abi::misc;
use cpiflame_perf_data::write::{Features, GroupDesc, HOST_PID};
use cpiflame_perf_data::{BuildIdEntry, ClockData, RecordKind};

use crate::container::Containers;
use crate::proc;
use crate::RecordOptions;

/// What the file being written holds so far.
#[derive(Default)]
pub(crate) struct FileFacts {
    /// Host files mapped executable (for their build ids at the end).
    mapped: BTreeSet<Vec<u8>>,
    /// The build ids of files read so far (across files).
    build_ids: KnownBuildIds,
    /// Containers' processes' files, held open for their build ids (and the build-id cache)
    /// at the end.
    pub(crate) containers: Containers,
    first_time: Option<u64>,
    last_time: u64,
    /// The clock's resolution and reference instant (every file's CLOCKID and CLOCK_DATA);
    /// `None` on the perf clock.
    pub(crate) clock: Option<(Option<u64>, ClockData)>,
}

impl FileFacts {
    /// Notes an executable mapping of a file, for its build id at the end: a host file's
    /// path is kept; a container's own file is held open by `containers`, and its build id
    /// returned, to be written into the record (none when the record has one already, as a
    /// `--switch-output` file's replayed records do). An exec or a new process has its
    /// namespace asked again.
    pub(crate) fn note_mapped(&mut self, kind: &RecordKind<'_>) -> Option<Vec<u8>> {
        match kind {
            RecordKind::Mmap(m) if m.executable && m.path.starts_with(b"/") => {
                if m.build_id.is_some() {
                    return None;
                }
                match self.containers.mapped(m.pid, m.path) {
                    None => {
                        self.mapped.insert(m.path.to_vec());
                        None
                    }
                    Some(id) => id.map(<[u8]>::to_vec),
                }
            }
            RecordKind::Comm {
                pid, exec: true, ..
            }
            | RecordKind::Fork { pid, .. } => {
                self.containers.forget(*pid);
                None
            }
            _ => None,
        }
    }

    /// A sample's time. The earliest is kept, not the first drained: rings drained in one
    /// pass are sorted, but a later pass may hold a sample older than the first pass's first.
    pub(crate) fn note_time(&mut self, time: u64) {
        self.first_time = Some(self.first_time.map_or(time, |f| f.min(time)));
        self.last_time = self.last_time.max(time);
    }

    /// A new file begins (`--switch-output`): it maps nothing and has no sample yet.
    pub(crate) fn next_file(&mut self) {
        self.first_time = None;
        self.last_time = 0;
        self.mapped.clear();
    }

    /// The feature sections of the file: the host, the command line with cpiflame's notes,
    /// build ids of the files it maps, groups, the wakeup tracepoint's format and, when
    /// every sample drained is in it (`whole`), their time range.
    pub(crate) fn features(&mut self, options: &RecordOptions, whole: bool) -> Features {
        let mut features = Features::from_host(options.cmdline.clone());
        features.perf_version = Some(format!("cpiflame {}", env!("CARGO_PKG_VERSION")));
        features.build_ids = build_ids(&self.mapped, &mut self.build_ids);
        features
            .build_ids
            .extend(self.containers.finish(None, &self.mapped));
        features.groups = group_descs(options);
        // The wakeup tracepoint's format, so perf script can print its fields.
        features.tracing_data = options
            .off_cpu
            .as_ref()
            .and_then(|off| off.waking.as_ref())
            .and_then(|w| w.tracing.encode().ok());
        if let Some((res_ns, data)) = self.clock {
            features.clockid_res_ns = res_ns;
            features.clock_data = Some(data);
        }
        if let (Some(first), true) = (self.first_time, whole) {
            // (After a write error the file ends earlier than the last sample drained.)
            features.sample_time = Some((first, self.last_time));
        }
        features
    }

    /// At the very end: containers' files kept in perf's build-id cache `cache`, once; the
    /// line saying why they could not be, if so.
    pub(crate) fn finish_containers(&mut self, cache: Option<&Path>) -> Option<String> {
        if let Some(cache) = cache {
            self.containers.finish(Some(cache), &self.mapped);
        }
        self.containers.refused().map(str::to_string)
    }
}

/// The GROUP_DESC entries of the groups the user asked for.
pub(crate) fn group_descs(options: &RecordOptions) -> Vec<GroupDesc> {
    let mut start = 0;
    let mut descs = Vec::new();
    for g in &options.groups {
        if g.described && g.len > 1 {
            descs.push(GroupDesc {
                name: None,
                leader: start as u32,
                members: g.len as u32,
            });
        }
        start += g.len;
    }
    descs
}

/// The build ids of files read so far, by path, modification time and size (`None`: the
/// file has none).
pub(crate) type KnownBuildIds = HashMap<(Vec<u8>, Option<SystemTime>, u64), Option<Vec<u8>>>;

/// Build ids of the files that were mapped executable, and of the running kernel. `known`
/// keeps each file's (read once per recording unless it changes: with `--switch-output`
/// every file lists them again, and a system-wide recording maps large libraries).
pub(crate) fn build_ids(
    mapped: &BTreeSet<Vec<u8>>,
    known: &mut KnownBuildIds,
) -> Vec<BuildIdEntry> {
    use object::Object;
    let mut entries = Vec::new();
    for path in mapped {
        let p = Path::new(std::ffi::OsStr::from_bytes(path));
        let Ok(meta) = std::fs::metadata(p) else {
            continue;
        };
        let key = (path.clone(), meta.modified().ok(), meta.len());
        let id = known.entry(key).or_insert_with(|| {
            // The headers and notes only (object's ReadCache reads what parsing asks for),
            // not the whole file: `record -a` lists every file any process maps (rustc's
            // 150 MB librustc_driver, ...), and reading them whole cost 0.5 s and 200 MB.
            let data = object::ReadCache::new(std::fs::File::open(p).ok()?);
            let file = object::File::parse(&data).ok()?;
            file.build_id().ok().flatten().map(<[u8]>::to_vec)
        });
        if let Some(id) = id {
            entries.push(BuildIdEntry {
                pid: HOST_PID,
                misc: misc::USER,
                build_id: id.clone(),
                path: path.clone(),
            });
        }
    }
    if let Some(id) = proc::kernel_build_id() {
        entries.push(BuildIdEntry {
            pid: HOST_PID,
            misc: misc::KERNEL,
            build_id: id,
            path: b"[kernel.kallsyms]".to_vec(),
        });
    }
    entries
}
