//! What `cpiflame record`'s flags ask for, as plain values, turned into the events to open
//! ([`EventPlan`]) and the [`RecordOptions`] of the recording: the target, the call graph
//! and the sampling rate decided the way the flags document.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use cpiflame_events::memory::MemOptions;

use crate::plan::{EventPlan, EventRequest, PlanError};
use crate::rotate::SwitchOutput;
use crate::runtimes::{find_jdk, jit_env, JitVars};
use crate::{cgroup, clock, offcpu, system, tracefs};
use crate::{CallGraph, Rate, RecordOptions, Target};

/// `record`'s flags, as values.
#[derive(Clone, Debug, Default)]
pub struct RecordRequest {
    pub output: PathBuf,
    /// `-e`, `--stalls`, `--cycles`, `--with-instructions`, `--leader-sampling`.
    pub events: EventRequest,
    /// `--mem` (with `--ldlat`, `--phys-data`): memory sampling instead of `events`.
    pub mem: Option<MemOptions>,
    /// `-c PERIOD` (wins over `freq`).
    pub period: Option<u64>,
    /// `-F FREQ`.
    pub freq: Option<u64>,
    /// `--call-graph MODE`.
    pub call_graph: String,
    /// `-p PID[,PID...]`: these processes, all their threads.
    pub pid: Option<String>,
    /// `-t TID[,TID...]`: these threads only.
    pub tid: Option<String>,
    /// `-a`: every process on every online CPU.
    pub all_cpus: bool,
    /// `-C LIST`: every process on these CPUs (perf's list syntax, `0,2-3`).
    pub cpu_list: Option<String>,
    /// The command to run and record.
    pub command: Vec<OsString>,
    /// `--duration SECS`.
    pub duration: Option<f64>,
    /// `-m PAGES`.
    pub mmap_pages: usize,
    /// perf's build-id cache to copy the kernel's symbols into; `None` for `-N`.
    pub buildid_cache: Option<PathBuf>,
    /// The command line to keep in the file (its CMDLINE feature).
    pub cmdline: Vec<String>,
    /// `--off-cpu`: also record context switches and wakeups ([`crate::offcpu`]).
    pub off_cpu: bool,
    /// `--switch-output[=MODE]`: `signal`, `SIZE[BKMG]` or `TIME[smhd]` ([`crate::rotate`]).
    pub switch_output: Option<String>,
    /// `--switch-max-files N` (`--max-files N`).
    pub max_files: Option<usize>,
    /// `--cgroup NAME` (`-G`): only the tasks of this cgroup (with `-a`/`-C`).
    pub cgroup: Option<String>,
    /// `-k CLOCK` ([`crate::clock::parse`]); `None`: CLOCK_MONOTONIC.
    pub clockid: Option<String>,
    /// `--jit`: the recorder's values of the variables it reads ([`crate::runtimes`]).
    pub jit: Option<JitVars>,
}

/// The command's environment with `CPIFLAME_MARKERS_DIR`, the recording's folder, where the
/// region-marker library (`crates/markers`) writes each thread's regions for `--region`:
/// only when the samples' clock is CLOCK_MONOTONIC, the markers' clock.
fn markers_env(
    mut vars: Vec<(OsString, OsString)>,
    output: &std::path::Path,
    clockid: Option<i32>,
) -> Vec<(OsString, OsString)> {
    if clockid != Some(clock::MONOTONIC) {
        return vars;
    }
    let folder = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if let Ok(folder) = std::path::absolute(folder) {
        vars.push(("CPIFLAME_MARKERS_DIR".into(), folder.into_os_string()));
    }
    vars
}

impl RecordRequest {
    /// The options to record with, and the plan's notes for the user (what was chosen and
    /// why). `marks` gives the words added to the kept command line for the plan chosen
    /// (what readers of the file should know of it).
    pub fn plan(
        self,
        marks: impl FnOnce(&EventPlan) -> Vec<String>,
    ) -> Result<(RecordOptions, Vec<String>), PlanError> {
        let (switch_output, max_files) = self.rotation()?;
        let cpus = self.system_wide_cpus(crate::online_cpus(), || {
            system::check_permission(cpiflame_counters::sys::paranoid(), system::effective_caps())
        })?;
        let mountinfo = std::fs::read_to_string(cgroup::MOUNTINFO).ok();
        let cgroup_dir = match (&self.cgroup, &cpus) {
            (Some(name), None) => {
                return Err(PlanError::Usage(format!(
                    "--cgroup {name}: only with -a or -C (as in perf, a cgroup is recorded system-wide)"
                )))
            }
            (Some(name), Some(_)) => {
                Some(cgroup::resolve(name, mountinfo.as_deref()).map_err(PlanError::Usage)?)
            }
            (None, _) => None,
        };
        let attach = match (&self.pid, &self.tid) {
            (Some(list), None) => Some(Target::Pids(id_list("-p", list)?)),
            (None, Some(list)) => Some(Target::Tids(id_list("-t", list)?)),
            (Some(_), Some(_)) => {
                return Err(PlanError::Usage("-p and -t exclude each other".into()))
            }
            (None, None) => None,
        };
        if self.jit.is_some() && self.command.is_empty() {
            return Err(PlanError::Usage(
                "--jit sets the runtimes' variables for the command it starts: give a command \
                 (a process already running, -p/-t/-a, keeps its own)"
                    .into(),
            ));
        }
        let has_command = !self.command.is_empty();
        let env = self.jit.as_ref().map(|vars| {
            let jdk = find_jdk(&self.command, vars);
            jit_env(vars, jdk.as_ref())
        });
        let target = match (attach, self.command.is_empty()) {
            (Some(_), _) if cpus.is_some() => {
                return Err(PlanError::Usage(
                    "-p/-t and -a/-C exclude each other (-a records every process already)".into(),
                ))
            }
            (None, true) if cpus.is_some() => Target::Everything,
            (Some(target), true) => target,
            (None, false) => Target::Command(self.command),
            (Some(_), false) => {
                return Err(PlanError::Usage(
                    "-p and a command exclude each other".into(),
                ))
            }
            (None, true) => {
                return Err(PlanError::Usage(
                    "nothing to record: give a command (cpiflame record ./app), -p PID, -t TID, \
                     or -a (every CPU) / -C LIST (these CPUs) to record the whole system"
                        .into(),
                ))
            }
        };
        let call_graph: CallGraph = self.call_graph.parse().map_err(PlanError::Usage)?;
        let clockid = match &self.clockid {
            Some(text) => clock::parse(text).map_err(PlanError::Usage)?,
            None => Some(clock::MONOTONIC),
        };
        let mut plan = match self.mem {
            Some(mem) => EventPlan::memory(mem)?,
            None => EventPlan::choose(&self.events)?,
        };
        let sampling = match (self.period, self.freq) {
            // The kernel would take either and sample nothing (perf refuses them too).
            (Some(0), _) => {
                return Err(PlanError::Usage(
                    "-c 0: a period of 0 events samples nothing; give 1 or more".into(),
                ))
            }
            (None, Some(0)) => {
                return Err(PlanError::Usage(
                    "-F 0: a frequency of 0 samples nothing; give 1 or more (Hz)".into(),
                ))
            }
            (Some(p), _) => Rate::Period(p),
            (None, Some(f)) => Rate::Frequency(f),
            (None, None) => plan.default_rate(),
        };
        let mut cmdline = self.cmdline;
        cmdline.extend(marks(&plan));
        // After the default rate is chosen: the off-CPU events set their own.
        let off_cpu = self.off_cpu.then(|| {
            let found = tracefs::find_or_mount().and_then(|root| offcpu::find_waking(&root));
            let waking = offcpu::decide_waking(found, offcpu::probe_waking)
                .map_err(|line| plan.notes.push(line))
                .ok()
                .map(|w| {
                    let (scope, line) = offcpu::decide_every_process(
                        w.id,
                        cpus.is_some(),
                        offcpu::probe_waking_every_process,
                    );
                    plan.notes.extend(line);
                    (w, scope)
                });
            plan.notes
                .extend(offcpu::user_only_line(crate::kernel_allowed()));
            cmdline.push(offcpu::OFF_CPU_MARK.to_string());
            offcpu::add_events(&mut plan.events, &mut plan.groups, waking)
        });
        let mut child_env = env.as_ref().map(|e| e.vars.clone()).unwrap_or_default();
        if has_command {
            child_env = markers_env(child_env, &self.output, clockid);
        }
        let options = RecordOptions {
            events: plan.events,
            groups: plan.groups,
            sampling,
            call_graph,
            target,
            output: self.output,
            duration: self.duration.map(Duration::from_secs_f64),
            buffer_pages: self.mmap_pages,
            cmdline,
            memory: plan.memory,
            buildid_cache: self.buildid_cache,
            off_cpu,
            namespaces: cpus.is_some(),
            cpus,
            switch_output,
            max_files,
            cgroup: cgroup_dir,
            cgroup_mount: mountinfo
                .as_deref()
                .and_then(cgroup::find_mount)
                .map(|m| m.path),
            clockid,
            env: child_env,
        };
        let mut notes = plan.notes;
        notes.extend(env.map(|e| e.line));
        Ok((options, notes))
    }

    /// `--switch-output` and `--max-files`, checked.
    fn rotation(&self) -> Result<(Option<SwitchOutput>, Option<usize>), PlanError> {
        let switch = self.switch_output.as_deref().map(str::parse).transpose();
        let switch = switch.map_err(PlanError::Usage)?;
        match (switch, self.max_files) {
            (_, Some(0)) => Err(PlanError::Usage(
                "--max-files 0: keep at least 1 file".into(),
            )),
            (None, Some(n)) => Err(PlanError::Usage(format!(
                "--max-files {n}: only with --switch-output, whose files it limits"
            ))),
            (switch, n) => Ok((switch, n)),
        }
    }

    /// The CPUs of a system-wide recording (`-a`: every online one; `-C LIST`: those, with
    /// or without `-a`, as in perf), once `permitted` says this user may record them;
    /// `None` without either flag.
    fn system_wide_cpus(
        &self,
        online: Vec<i32>,
        permitted: impl FnOnce() -> Result<(), String>,
    ) -> Result<Option<Vec<i32>>, PlanError> {
        let cpus = match (&self.cpu_list, self.all_cpus) {
            (Some(list), _) => system::parse_cpus(list, &online).map_err(PlanError::Usage)?,
            (None, true) => online,
            (None, false) => return Ok(None),
        };
        permitted().map_err(PlanError::Usage)?;
        Ok(Some(cpus))
    }
}

/// The ids of `-p`/`-t` (`flag`): a comma list of positive numbers, each once, in order.
fn id_list(flag: &str, list: &str) -> Result<Vec<i32>, PlanError> {
    let mut ids = Vec::new();
    for word in list.split(',') {
        let id = word
            .trim()
            .parse::<i32>()
            .ok()
            .filter(|&id| id > 0)
            .ok_or_else(|| {
                PlanError::Usage(format!(
                    "{flag} {list}: expected a comma list of ids (e.g. 1234,1240)"
                ))
            })?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_lists() {
        assert_eq!(id_list("-p", "12").unwrap(), [12]);
        assert_eq!(id_list("-p", "12,7,12").unwrap(), [12, 7]);
        for bad in ["", "x", "1,,2", "-3", "0", "1-2"] {
            let e = id_list("-t", bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("-t {bad}: ")), "{e}");
        }
    }

    /// `-C` wins over `-a`'s every CPU; the permission is asked only for a system-wide
    /// recording, and its refusal is the error.
    #[test]
    fn system_wide_cpus_and_permission() {
        let request = |all_cpus, cpu_list: Option<&str>| RecordRequest {
            all_cpus,
            cpu_list: cpu_list.map(String::from),
            ..RecordRequest::default()
        };
        let online = || vec![0, 1, 2];
        let never = || -> Result<(), String> { panic!("asked") };
        assert_eq!(
            request(false, None)
                .system_wide_cpus(online(), never)
                .unwrap(),
            None
        );
        let yes = || Ok(());
        let got = request(true, None).system_wide_cpus(online(), yes).unwrap();
        assert_eq!(got, Some(vec![0, 1, 2]));
        let got = request(true, Some("2"))
            .system_wide_cpus(online(), yes)
            .unwrap();
        assert_eq!(got, Some(vec![2]));
        let got = request(false, Some("0-1"))
            .system_wide_cpus(online(), yes)
            .unwrap();
        assert_eq!(got, Some(vec![0, 1]));
        let no = || Err("refused".to_string());
        let e = request(true, None)
            .system_wide_cpus(online(), no)
            .unwrap_err();
        assert_eq!(e.to_string(), "refused");
    }
}
