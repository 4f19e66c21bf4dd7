//! Where the `offcpu` fixture's threads spent their wall time: the truth the program measures
//! itself (`fixtures/workloads/offcpu.c`), and two perf oracles of the same split read from
//! perf's text: `perf sched timehist --state` and `perf script --show-switch-events`.
//!
//! Times are nanoseconds. A thread's life is split three ways, as cpiflame's wall-time
//! columns split it (`crates/profile/src/wall.rs`): on a CPU, runnable (waiting for one) and
//! blocked (waiting to be woken).

use std::collections::HashMap;

/// The fixture's roles, one thread each; the thread's comm is its role.
pub const ROLES: [&str; 6] = ["compute", "sleeper", "locker", "reader", "preempted", "hog"];

/// How long each thread lingers in a nanosleep after its phase (blocked; its wake-up delay
/// after that is runnable).
pub const LINGER_SLEEP_NS: u64 = 1_000_000;

/// One thread's line, `offcpu thread=ROLE tid=TID start_ns=S wall_ns=W cpu_ns=C woken_ns=K
/// linger_ns=L`: S from just before `pthread_create` to the thread's first clock read
/// (runnable, mostly), W and C over its phase (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID), K
/// when the wait of a waiter was ended, from the phase's start (0 for the busy threads), L the
/// wall time of its linger after the phase ([`LINGER_SLEEP_NS`] blocked, then its wake-up
/// delay).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Truth {
    pub role: String,
    pub tid: u32,
    pub start_ns: u64,
    pub wall_ns: u64,
    pub cpu_ns: u64,
    pub woken_ns: u64,
    pub linger_ns: u64,
}

/// A split of wall time, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Split {
    pub on_cpu: f64,
    pub runnable: f64,
    pub blocked: f64,
}

impl Split {
    /// Off the CPU: runnable and blocked.
    pub fn off_cpu(&self) -> f64 {
        self.runnable + self.blocked
    }
}

/// One of the three parts of a [`Split`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    OnCpu,
    Runnable,
    Blocked,
}

impl Part {
    pub const ALL: [Part; 3] = [Part::OnCpu, Part::Runnable, Part::Blocked];

    pub fn of(self, split: &Split) -> f64 {
        match self {
            Part::OnCpu => split.on_cpu,
            Part::Runnable => split.runnable,
            Part::Blocked => split.blocked,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Part::OnCpu => "on-CPU",
            Part::Runnable => "runnable",
            Part::Blocked => "blocked",
        }
    }
}

/// What part of a thread's life an oracle sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The wait between the thread's creation and its first run (runnable): seen with
    /// `sched_wakeup_new` (`perf sched record`), not from switch records alone (they start at
    /// the first switch-in); `None` when the oracle may count it or not (the bounds on the
    /// runnable part then widen by it).
    pub start: Option<bool>,
    /// The 1 ms linger after the phase (its end is printed on the exit's switch, which
    /// `perf sched timehist` lists under `:-1`, not the thread).
    pub linger: bool,
    /// Wake-ups (`sched_waking`, `sched_wakeup`): with them a woken thread's wait for a CPU
    /// is runnable; from switch records alone it is part of the blocked interval. `None` when
    /// only some are seen (a per-thread recording of `sched_waking` sees the wake-ups its
    /// threads make, not a timer's in another task's interrupt): the bounds on the runnable
    /// and blocked parts then widen by half the wake-up delays.
    pub wakeups: Option<bool>,
}

impl Truth {
    /// Whether the thread's phase is spent blocked (sleeper, locker, reader) rather than
    /// busy (compute, preempted, hog: they never block, so all their off-CPU time in the
    /// phase is runnable).
    pub fn blocks(&self) -> bool {
        matches!(self.role.as_str(), "sleeper" | "locker" | "reader")
    }

    /// The part the thread is about: on-CPU for compute, runnable for the pinned pair,
    /// blocked for the waiters.
    pub fn headline(&self) -> Part {
        match self.role.as_str() {
            "compute" => Part::OnCpu,
            "preempted" | "hog" => Part::Runnable,
            _ => Part::Blocked,
        }
    }

    /// The split an oracle that sees `seen` of the thread's life should find: a waiter is
    /// blocked until it was woken (K) and runnable from then to the end of its phase (less
    /// its microseconds on a CPU), a busy thread runnable whenever it was not on a CPU; the
    /// linger is blocked for [`LINGER_SLEEP_NS`] and runnable the rest. An oracle without
    /// wake-ups counts the wake-up delays as blocked.
    pub fn expected(&self, seen: Seen) -> Split {
        let off = self.wall_ns.saturating_sub(self.cpu_ns) as f64;
        let mut runnable = match seen.start {
            Some(true) => self.start_ns as f64,
            Some(false) => 0.0,
            None => self.start_ns as f64 / 2.0,
        };
        let mut blocked = 0.0;
        if self.blocks() {
            blocked += (self.woken_ns as f64).min(off);
        } else {
            runnable += off;
        }
        if seen.linger {
            blocked += self.linger_ns.min(LINGER_SLEEP_NS) as f64;
        }
        let delays = self.wake_delays(seen);
        match seen.wakeups {
            Some(true) => runnable += delays,
            Some(false) => blocked += delays,
            None => {
                runnable += delays / 2.0;
                blocked += delays / 2.0;
            }
        }
        Split {
            on_cpu: self.cpu_ns as f64,
            runnable,
            blocked,
        }
    }

    /// The thread's wake-up delays that `seen` covers: a waiter's from when its wait was ended
    /// to the end of its phase (less its microseconds on a CPU), and the linger's beyond its
    /// sleep.
    pub fn wake_delays(&self, seen: Seen) -> f64 {
        let mut delays = 0.0;
        if self.blocks() {
            let off = self.wall_ns.saturating_sub(self.cpu_ns);
            delays += off.saturating_sub(self.woken_ns) as f64;
        }
        if seen.linger {
            delays += self.linger_ns.saturating_sub(LINGER_SLEEP_NS) as f64;
        }
        delays
    }

    /// Checks `parts` of `got` against [`Truth::expected`]: each within `tolerance` (a
    /// fraction) of the thread's life as seen, and the headline part also within `tolerance`
    /// of its own expected value; the bounds widen by half of what the oracle may or may not
    /// count (the start wait, the wake-up delays). Returns one line per part out of bounds (or
    /// not a number).
    pub fn check(&self, got: &Split, seen: Seen, parts: &[Part], tolerance: f64) -> Vec<String> {
        let want = self.expected(seen);
        let life = want.on_cpu + want.off_cpu();
        let mut failures = Vec::new();
        for &part in parts {
            let (w, g) = (part.of(&want), part.of(got));
            let mut bound = tolerance * life;
            if part == self.headline() {
                bound = bound.min(tolerance * w);
            }
            if part == Part::Runnable && seen.start.is_none() {
                bound += self.start_ns as f64 / 2.0;
            }
            if part != Part::OnCpu && seen.wakeups.is_none() {
                bound += self.wake_delays(seen) / 2.0;
            }
            let within = (g - w).abs() <= bound;
            if !within {
                failures.push(format!(
                    "{} (tid {}): {} {:.3} ms, want {:.3} ms ± {:.3} ms",
                    self.role,
                    self.tid,
                    part.name(),
                    g / 1e6,
                    w / 1e6,
                    bound / 1e6
                ));
            }
        }
        failures
    }
}

/// The fixture's stdout: one [`Truth`] per role, in [`ROLES`] order.
pub fn parse_truth(stdout: &str) -> Result<Vec<Truth>, String> {
    let mut found: Vec<Truth> = Vec::new();
    for line in stdout.lines() {
        let Some(rest) = line.strip_prefix("offcpu thread=") else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let role = fields.next().unwrap_or_default().to_string();
        let mut values: HashMap<&str, u64> = HashMap::new();
        for field in fields {
            let (key, value) = field
                .split_once('=')
                .ok_or_else(|| format!("no key=value in {field:?} of {line:?}"))?;
            let value = value
                .parse()
                .map_err(|e| format!("{key} of {line:?}: {e}"))?;
            values.insert(key, value);
        }
        let get = |key: &str| {
            values
                .get(key)
                .copied()
                .ok_or_else(|| format!("no {key} in {line:?}"))
        };
        found.push(Truth {
            tid: u32::try_from(get("tid")?).map_err(|e| format!("tid of {line:?}: {e}"))?,
            start_ns: get("start_ns")?,
            wall_ns: get("wall_ns")?,
            cpu_ns: get("cpu_ns")?,
            woken_ns: get("woken_ns")?,
            linger_ns: get("linger_ns")?,
            role,
        });
    }
    ROLES
        .iter()
        .map(|role| {
            let mut of_role = found.iter().filter(|t| t.role == *role);
            match (of_role.next(), of_role.next()) {
                (Some(t), None) => Ok(t.clone()),
                _ => Err(format!(
                    "want exactly one line for thread {role} in the fixture's output:\n{stdout}"
                )),
            }
        })
        .collect()
}

/// Per thread (by tid), the split `perf sched timehist --state` gives: the run time of
/// every line is on-CPU; a line's wait time (since the thread last left a CPU) is runnable
/// when it left in state `R` (preempted), else blocked but for its sch delay (woken, waiting
/// for a CPU), which is runnable; the first line of a thread has no wait time, and its sch
/// delay is the wait of the new task for its first run.
///
/// Lines are `TIME [CPU] COMM[TID/PID] WAIT DELAY RUN STATE` (milliseconds, `COMM[TID]` for a
/// process's main thread; comms may hold spaces; `COMM` alone for tasks of pid 0, as the
/// idle task `<idle>`, which are skipped, as are lines whose name perf cut short). The switch
/// that takes an exiting thread
/// off the CPU is listed under `:-1[-1/PID]` (the thread has left its pid namespace by
/// then): its last interval is not the thread's, and is skipped with the other negative
/// ids.
pub fn timehist_split(text: &str) -> Result<HashMap<u32, Split>, String> {
    let mut splits: HashMap<u32, Split> = HashMap::new();
    let mut last_state: HashMap<u32, char> = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let is_event = tokens.len() >= 7
            && tokens[0].parse::<f64>().is_ok()
            && tokens[1].starts_with('[')
            && tokens[1].ends_with(']');
        if !is_event {
            continue;
        }
        let bad = |what: &str| format!("perf sched timehist line {}: {what}: {line:?}", n + 1);
        let k = tokens.len();
        let state = tokens[k - 1]
            .chars()
            .next()
            .ok_or_else(|| bad("no state"))?;
        let ms = |i: usize, what: &str| -> Result<f64, String> {
            tokens[i]
                .parse::<f64>()
                .map(|v| v * 1e6)
                .map_err(|e| bad(&format!("{what}: {e}")))
        };
        let wait = ms(k - 4, "wait time")?;
        let delay = ms(k - 3, "sch delay")?;
        let run = ms(k - 2, "run time")?;
        let task = tokens[2..k - 4].join(" ");
        let Some(ids) = task
            .strip_suffix(']')
            .and_then(|task| task.rsplit_once('['))
            .map(|(_, ids)| ids)
        else {
            // Tasks of pid 0 (`<idle>`, a thread perf never learnt the pid of) and names
            // cut at perf's 31 characters: none of them is a thread of a known process.
            continue;
        };
        let tid = ids
            .split('/')
            .next()
            .and_then(|tid| tid.parse::<i64>().ok())
            .ok_or_else(|| bad("no TID in COMM[TID/PID]"))?;
        let Ok(tid) = u32::try_from(tid) else {
            continue;
        };
        let split = splits.entry(tid).or_default();
        split.on_cpu += run;
        match last_state.insert(tid, state) {
            None => split.runnable += delay,
            Some('R') => split.runnable += wait + delay,
            Some(_) => {
                split.runnable += delay;
                split.blocked += wait - delay;
            }
        }
    }
    Ok(splits)
}

/// Per thread, the off-CPU intervals of switch records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SwitchOffCpu {
    /// Summed from switch-outs flagged `preempt` (the thread stayed runnable).
    pub preempted_ns: u64,
    /// Summed from the other switch-outs (the thread blocked; until its next switch-in, so
    /// its wake-up delay is in here too).
    pub blocked_ns: u64,
    /// Intervals summed.
    pub intervals: u64,
}

impl SwitchOffCpu {
    pub fn total_ns(&self) -> u64 {
        self.preempted_ns + self.blocked_ns
    }
}

/// Per thread (by tid), the sums of off-CPU intervals (a switch-out to the thread's next
/// switch-in) in `perf script --show-switch-events -F comm,pid,tid,time,event --ns` text:
/// lines `COMM PID/TID SECONDS.NANOS: PERF_RECORD_SWITCH[_CPU_WIDE] OUT|IN [preempt] ...`.
/// Other lines (samples) are skipped, and so are records of negative ids (an exiting
/// thread's last switch-out, in a CPU-wide recording). Needs perf's time order, which
/// `perf script` gives.
pub fn switch_offcpu(text: &str) -> Result<HashMap<u32, SwitchOffCpu>, String> {
    let mut sums: HashMap<u32, SwitchOffCpu> = HashMap::new();
    let mut out_since: HashMap<u32, (u64, bool)> = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = tokens
            .iter()
            .position(|t| t.starts_with("PERF_RECORD_SWITCH"))
        else {
            continue;
        };
        let bad = |what: &str| format!("perf script line {}: {what}: {line:?}", n + 1);
        if at < 2 {
            return Err(bad("no pid/tid and time before the record"));
        }
        let time = parse_time_ns(tokens[at - 1].trim_end_matches(':'))
            .ok_or_else(|| bad("time is not SECONDS.NANOS"))?;
        let tid = tokens[at - 2]
            .split_once('/')
            .and_then(|(_, tid)| tid.parse::<i64>().ok())
            .ok_or_else(|| bad("no PID/TID"))?;
        let Ok(tid) = u32::try_from(tid) else {
            continue;
        };
        let preempt = tokens.get(at + 2) == Some(&"preempt");
        match tokens.get(at + 1) {
            Some(&"OUT") => {
                out_since.insert(tid, (time, preempt));
            }
            Some(&"IN") => {
                if let Some((since, preempt)) = out_since.remove(&tid) {
                    let sum = sums.entry(tid).or_default();
                    let dt = time
                        .checked_sub(since)
                        .ok_or_else(|| bad("switch-in before the switch-out"))?;
                    if preempt {
                        sum.preempted_ns += dt;
                    } else {
                        sum.blocked_ns += dt;
                    }
                    sum.intervals += 1;
                }
            }
            _ => return Err(bad("neither OUT nor IN")),
        }
    }
    Ok(sums)
}

/// `SECONDS.NANOS` (perf script `--ns`) as nanoseconds, exactly.
fn parse_time_ns(text: &str) -> Option<u64> {
    let (secs, nanos) = text.split_once('.')?;
    if nanos.len() != 9 {
        return None;
    }
    Some(secs.parse::<u64>().ok()? * 1_000_000_000 + nanos.parse::<u64>().ok()?)
}
