//! One line of `perf script` text read: a sample header (comm, ids, CPU, time, period,
//! event), a frame (address, symbol, DSO) and its name as stackcollapse-perf makes it, a
//! side-band line (`PERF_RECORD_*`), a scheduler tracepoint's arguments, a `# event :` line
//! of `--header`. Pure functions of the line: the reader in `mod.rs` keeps the state.

use super::model::{HeaderEvent, PerfScriptErrorKind, SchedArgs, ThreadEvent};
use crate::profile::{Frame, FrameKind};

/// A sample header line, parsed.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Header<'a> {
    pub(super) comm: &'a str,
    pub(super) pid: Option<&'a str>,
    /// The thread id (or, with `-F pid` alone, the process id: the text cannot tell).
    pub(super) tid: &'a str,
    /// The time in nanoseconds (`1234.567890:` is 1234567890000).
    pub(super) time: Option<u64>,
    /// The CPU (`[003]`), when shown.
    pub(super) cpu: Option<u32>,
    pub(super) period: Option<u64>,
    pub(super) event: &'a str,
    /// Text after the event, if any.
    pub(super) rest: Option<&'a str>,
}

/// Whitespace-separated tokens with their byte offsets. Any Unicode whitespace separates, as
/// the comm before the first token is trimmed of it: a comm is never blank.
pub(super) fn tokens(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = None;
    line.char_indices()
        .chain(std::iter::once((line.len(), ' ')))
        .filter_map(move |(i, c)| {
            if c.is_whitespace() {
                start.take().map(|s| (s, &line[s..i]))
            } else {
                start.get_or_insert(i);
                None
            }
        })
}

pub(super) fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `PID/TID`, `TID` or `PID` (perf prints -1 for an unknown one).
pub(super) fn pid_tid(tok: &str) -> Option<(Option<&str>, &str)> {
    let id = |s: &str| all_digits(s.strip_prefix('-').unwrap_or(s));
    match tok.split_once('/') {
        Some((p, t)) if id(p) && id(t) => Some((Some(p), t)),
        Some(_) => None,
        None if id(tok) => Some((None, tok)),
        None => None,
    }
}

pub(super) fn is_cpu(tok: &str) -> bool {
    tok.strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .is_some_and(all_digits)
}

pub(super) fn is_time(tok: &str) -> bool {
    tok.strip_suffix(':')
        .and_then(|t| t.split_once('.'))
        .is_some_and(|(s, f)| all_digits(s) && all_digits(f))
}

/// A time token (`1234.567890:`, see [`is_time`]) in nanoseconds; `None` when it does not
/// fit (more than 9 decimals, or too large).
pub(super) fn time_ns(tok: &str) -> Option<u64> {
    let (s, f) = tok.strip_suffix(':')?.split_once('.')?;
    if f.len() > 9 {
        return None;
    }
    let nanos: u64 = format!("{f:0<9}").parse().ok()?;
    s.parse::<u64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(nanos)
}

/// A side-band event line of `--show-task-events`, `--show-mmap-events`, ...:
/// `threads 25775  2389.785204: PERF_RECORD_COMM exec: threads:25775/25775`.
pub(super) fn is_side_band(line: &str) -> bool {
    tokens(line)
        .take(8)
        .any(|(_, t)| t.starts_with("PERF_RECORD_"))
}

/// The header of a side-band line, `COMM [PID/]TID [CPU] TIME: PERF_RECORD_...`, as far as a
/// root frame needs it (comm, pid, tid); `None` when it does not read so.
pub(super) fn side_band_header(line: &str) -> Option<Header<'_>> {
    let toks: Vec<(usize, &str)> = tokens(line).take(16).collect();
    let at = toks
        .iter()
        .position(|(_, t)| t.starts_with("PERF_RECORD_"))?;
    // The thread: the last `PID/TID` or number before the time.
    let before_time = &toks[..at.checked_sub(1)?];
    let i = before_time
        .iter()
        .rposition(|(_, t)| pid_tid(t).is_some())?;
    let (pid, tid) = pid_tid(before_time[i].1)?;
    let comm = line[..before_time[i].0].trim();
    (!comm.is_empty()).then_some(Header {
        comm,
        pid,
        tid,
        time: None,
        cpu: None,
        period: None,
        event: toks[at].1,
        rest: None,
    })
}

/// The event a side-band line of `--show-switch-events` or `--show-task-events` stands for:
/// `COMM TID TIME: PERF_RECORD_SWITCH[_CPU_WIDE] IN|OUT [preempt] ...`,
/// `PERF_RECORD_FORK(PID:TID):(PPID:PTID)` (the new thread), `PERF_RECORD_EXIT(PID:TID):...`,
/// `PERF_RECORD_COMM[ exec]: COMM:PID/TID`; `None` for other lines, switch and exit lines
/// without a time and lines that do not read so. perf's synthesized FORK and COMM records of
/// threads that existed before it started are printed at time 0: they are kept at time 0
/// (the thread and its root are known from them; no start is taken from them, as perf.data's
/// plan takes none).
pub(super) fn parse_side_band(line: &str) -> Option<ThreadEvent> {
    let toks: Vec<&str> = tokens(line).map(|(_, t)| t).take(16).collect();
    let at = toks.iter().position(|t| t.starts_with("PERF_RECORD_"))?;
    let time = time_ns(toks.get(at.checked_sub(1)?)?)?;
    let tid_of = |t: &str| pid_tid(t).and_then(|(_, tid)| tid.parse::<i32>().ok());
    let tid = toks[..at - 1].iter().rev().find_map(|t| tid_of(t));
    let record = toks[at];
    let after = &toks[at + 1..];
    let id_pair = |s: &str| -> Option<i32> {
        // `(PID:TID)` right after the record's name.
        let inner = s.split_once('(')?.1.split_once(')')?.0;
        inner.split_once(':')?.1.parse().ok()
    };
    // A switch or exit at time 0 is no fact; FORK and COMM lines at 0 are kept (the wall
    // plan knows the thread and its root from them, as perf.data's records, but takes no
    // start from them).
    if time == 0
        && !(record.starts_with("PERF_RECORD_FORK(") || record.starts_with("PERF_RECORD_COMM"))
    {
        return None;
    }
    match record {
        "PERF_RECORD_SWITCH" | "PERF_RECORD_SWITCH_CPU_WIDE" => {
            let out = match after.first() {
                Some(&"OUT") => true,
                Some(&"IN") => false,
                _ => return None,
            };
            Some(ThreadEvent::Switch {
                time,
                tid: tid?,
                out,
                preempt: out && after.get(1) == Some(&"preempt"),
                root: None,
            })
        }
        r if r.starts_with("PERF_RECORD_FORK(") => Some(ThreadEvent::Start {
            time,
            tid: id_pair(r)?,
            fork: true,
            root: None,
        }),
        r if r.starts_with("PERF_RECORD_EXIT(") => Some(ThreadEvent::Exit {
            time,
            tid: id_pair(r)?,
        }),
        "PERF_RECORD_COMM" | "PERF_RECORD_COMM:" => {
            // `COMM:PID/TID`, the last token (a comm may hold spaces and colons).
            let last = after.last()?;
            let ids = last.rsplit_once(':')?.1;
            Some(ThreadEvent::Start {
                time,
                tid: tid_of(ids)?,
                fork: false,
                root: None,
            })
        }
        _ => None,
    }
}

/// The arguments of a scheduler tracepoint sample that the wall-time plan reads, from the
/// text after its event name: perf's `key=value` form (`prev_comm=a prev_pid=1 prev_prio=120
/// prev_state=S ==> next_comm=b next_pid=2 next_prio=120`; `comm=a pid=1 prio=120
/// target_cpu=000`), and libtraceevent's sched plugin form of `sched_switch`
/// (`a:1 [120] S ==> b:2 [120]`).
pub(super) fn sched_args(event: &str, rest: &str) -> Option<SchedArgs> {
    let field = |key: &str| {
        rest.split_whitespace()
            .find_map(|t| t.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
    };
    let int = |v: Option<&str>| v.and_then(|v| v.parse::<i32>().ok());
    // R, and R+ (old kernels: preempted, still on the run queue) are runnable.
    let runnable = |state: &str| state == "R" || state == "R+";
    match event {
        "sched:sched_switch" => {
            if field("prev_pid").is_some() || field("next_pid").is_some() {
                return Some(SchedArgs::Switch {
                    prev_pid: int(field("prev_pid")),
                    next_pid: int(field("next_pid")),
                    runnable: field("prev_state").map(runnable),
                });
            }
            let (prev, next) = rest.split_once("==>")?;
            let prev: Vec<&str> = prev.split_whitespace().collect();
            let id = |t: &str| t.rsplit_once(':').and_then(|(_, p)| p.parse::<i32>().ok());
            let [.., who, _prio, state] = prev[..] else {
                return None;
            };
            let next_pid = next.split_whitespace().next().and_then(id);
            Some(SchedArgs::Switch {
                prev_pid: id(who),
                next_pid,
                runnable: Some(runnable(state)),
            })
        }
        "sched:sched_wakeup" | "sched:sched_waking" => Some(SchedArgs::Wakeup {
            pid: int(field("pid")),
        }),
        _ => None,
    }
}

/// Parses a sample header; see the module docs for the fields.
pub(super) fn parse_header(line: &str) -> Result<Header<'_>, PerfScriptErrorKind> {
    let toks: Vec<(usize, &str)> = tokens(line).take(64).collect();
    // The comm may hold spaces and numbers: try each place it could end, first first.
    for start in 1..toks.len() {
        if let Some(h) = fields_from(line, &toks, start)? {
            return Ok(h);
        }
    }
    if !toks.is_empty() && fields_from(line, &toks, 0)?.is_some() {
        return Err(PerfScriptErrorKind::NoCommand);
    }
    Err(PerfScriptErrorKind::NotAHeader)
}

/// The fields after a comm made of `toks[..start]`, if they read as a header.
pub(super) fn fields_from<'a>(
    line: &'a str,
    toks: &[(usize, &'a str)],
    start: usize,
) -> Result<Option<Header<'a>>, PerfScriptErrorKind> {
    let mut i = start;
    let mut pid = None;
    let mut tid = "?";
    if let Some((p, t)) = toks.get(i).and_then(|&(_, t)| pid_tid(t)) {
        // A lone number right before the event is the period, not a pid, when a time
        // stands between: handled by trying the next shape below.
        pid = p;
        tid = t;
        i += 1;
    }
    let mut cpu = None;
    if let Some(&(_, t)) = toks.get(i).filter(|&&(_, t)| is_cpu(t)) {
        cpu = t[1..t.len() - 1].parse().ok();
        i += 1;
    }
    let mut time = None;
    if let Some(&(_, t)) = toks.get(i).filter(|&&(_, t)| is_time(t)) {
        time = time_ns(t);
        i += 1;
    }
    let mut period = None;
    if let Some(&(_, t)) = toks.get(i) {
        if all_digits(t) {
            period = Some(
                t.parse::<u64>()
                    .map_err(|_| PerfScriptErrorKind::PeriodTooLarge {
                        found: t.to_string(),
                    })?,
            );
            i += 1;
        }
    }
    let Some(&(at, event)) = toks.get(i) else {
        return Ok(None);
    };
    // A time belongs after the comm: a comm holding one means the fields were misread.
    if toks[..start].iter().any(|&(_, t)| is_time(t)) {
        return Ok(None);
    }
    let Some(event) = event.strip_suffix(':') else {
        return Ok(None);
    };
    // An event name is a word: not empty, not a time, not something else's field.
    if event.is_empty()
        || event.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        || event.contains(['(', ')'])
    {
        return Ok(None);
    }
    // Empty only for start 0 (the caller refuses it): every token is non-blank.
    let comm = line[..toks[start].0].trim();
    let rest = line[at + event.len() + 1..].trim();
    Ok(Some(Header {
        comm,
        pid,
        tid,
        time,
        cpu,
        period,
        event,
        rest: (!rest.is_empty()).then_some(rest),
    }))
}

/// One frame as printed: `ADDR SYMBOL (DSO)`; `dso` is empty when the line has none.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ScriptFrame<'a> {
    pub(super) symbol: &'a str,
    pub(super) dso: &'a str,
}

pub(super) fn parse_frame(line: &str) -> Option<ScriptFrame<'_>> {
    let text = line.trim();
    let (addr, rest) = match text.split_once([' ', '\t']) {
        Some((a, r)) => (a, r.trim()),
        None => (text, ""),
    };
    let hex = addr.strip_prefix("0x").unwrap_or(addr);
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    match dso_group_start(rest) {
        Some(open) => Some(ScriptFrame {
            symbol: rest[..open].trim_end(),
            dso: &rest[open + 1..rest.len() - 1],
        }),
        None => Some(ScriptFrame {
            symbol: rest,
            dso: "",
        }),
    }
}

/// Byte offset of the `(` opening the parenthesised group that ends `s`, matching nested
/// parentheses (`(/tmp/x (deleted))`); it must start `s` or follow a space.
pub(super) fn dso_group_start(s: &str) -> Option<usize> {
    if !s.ends_with(')') {
        return None;
    }
    let mut depth = 0usize;
    for (i, b) in s.bytes().enumerate().rev() {
        match b {
            b')' => depth += 1,
            b'(' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return (i == 0 || s.as_bytes()[i - 1] == b' ').then_some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// A kernel DSO, as stackcollapse-perf and inferno decide it.
pub(super) fn is_kernel_dso(dso: &str) -> bool {
    let vmlinux = dso.rfind("vmlinux").is_some_and(|i| {
        dso[i..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
    });
    (dso.starts_with('[') || dso.ends_with(".ko") || vmlinux) && dso != "[unknown]"
}

/// A DSO of code compiled at run time, as inferno's perf collapser decides it for `_[j]`: a
/// perf map (`/tmp/perf-PID.map`, which stackcollapse-perf.pl's `--jit` also takes) or an
/// image `perf inject --jit` wrote (`.../jitted-PID-N.so`).
pub(super) fn is_jit_dso(dso: &str) -> bool {
    (dso.starts_with("/tmp/perf-") && dso.ends_with(".map"))
        || (dso.contains("/jitted-") && dso.ends_with(".so"))
}

/// The named frame for a printed symbol and DSO (see the module docs for the rules).
pub(super) fn make_frame(symbol: &str, dso: &str, java: bool) -> Frame {
    let mut name = strip_offset(symbol).trim();
    if name.is_empty() {
        name = "[unknown]";
    }
    let base = dso.rsplit('/').next().unwrap_or(dso);
    let mut name = if name == "[unknown]" && !dso.is_empty() && dso != "[unknown]" {
        format!("[{base}]")
    } else {
        let fixed = fix_rust_symbol(name);
        tidy_generic(&fixed)
    };
    if java && name.starts_with('L') && name.contains('/') {
        name.remove(0);
    }
    if name.is_empty() {
        // `(int)` tidied to nothing: keep a name the folded text can hold.
        name = "[unknown]".to_string();
    }
    let kind = if dso == "inlined" {
        FrameKind::Inline
    } else if is_kernel_dso(dso) {
        FrameKind::Kernel
    } else if is_jit_dso(dso) {
        FrameKind::Jit
    } else {
        FrameKind::User
    };
    Frame {
        name,
        module: if kind == FrameKind::Inline {
            String::new()
        } else {
            base.to_string()
        },
        kind,
    }
}

/// Removes perf's `+0xOFFSET` (`symoff`).
pub(super) fn strip_offset(symbol: &str) -> &str {
    match symbol.rfind("+0x") {
        Some(at) if symbol[at + 3..].bytes().all(|b| b.is_ascii_hexdigit()) => &symbol[..at],
        _ => symbol,
    }
}

/// Removes an argument list (`foo(int, char)` → `foo`) and turns `;` (the folded separator)
/// into `:`, as inferno's collapsers do: only a top-level `(`, and not Go's `.(` or C++'s
/// `(anonymous namespace)`.
pub(super) fn tidy_generic(func: &str) -> String {
    let mut depth = 0i64;
    let mut last_dot = None;
    let mut end = func.len();
    for (i, c) in func.char_indices() {
        match c {
            '<' | '{' | '[' => depth += 1,
            '>' | '}' | ']' | ')' => depth -= 1,
            '(' => {
                if depth == 0
                    && last_dot != Some(i)
                    && !func[i..].starts_with("(anonymous namespace)")
                {
                    end = i;
                    break;
                }
                depth += 1;
            }
            '.' => last_dot = Some(i + 1),
            _ => {}
        }
    }
    func[..end].replace(';', ":")
}

/// A Rust legacy symbol perf left partly mangled (`foo..bar::h0123456789abcdef`): without
/// its hash, `..` as `::` and `$LT$`-style escapes decoded, as inferno does. Anything else
/// is returned as it is.
pub(super) fn fix_rust_symbol(symbol: &str) -> std::borrow::Cow<'_, str> {
    const HASH: usize = 17;
    let b = symbol.as_bytes();
    if b.len() < HASH
        || b[b.len() - HASH] != b'h'
        || !b[b.len() - HASH + 1..].iter().all(u8::is_ascii_hexdigit)
    {
        return symbol.into();
    }
    let mut rest = &symbol[..symbol.len() - HASH];
    rest = rest.strip_suffix("::").unwrap_or(rest);
    if rest.starts_with("_$") {
        rest = &rest[1..];
    }
    const ESCAPES: [(&str, &str); 19] = [
        ("$SP$", "@"),
        ("$BP$", "*"),
        ("$RF$", "&"),
        ("$LT$", "<"),
        ("$GT$", ">"),
        ("$LP$", "("),
        ("$RP$", ")"),
        ("$C$", ","),
        ("$u7e$", "~"),
        ("$u20$", " "),
        ("$u27$", "'"),
        ("$u3d$", "="),
        ("$u5b$", "["),
        ("$u5d$", "]"),
        ("$u7b$", "{"),
        ("$u7d$", "}"),
        ("$u3b$", ";"),
        ("$u2b$", "+"),
        ("$u21$", "!"),
    ];
    let mut out = String::with_capacity(rest.len());
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("..") {
            out.push_str("::");
            rest = r;
        } else if let Some(r) = rest.strip_prefix('.') {
            out.push('.');
            rest = r;
        } else if rest.starts_with('$') {
            let escape = ESCAPES
                .iter()
                .chain(&[("$u22$", "\"")])
                .find(|(from, _)| rest.starts_with(from));
            match escape {
                Some((from, to)) => {
                    out.push_str(to);
                    rest = &rest[from.len()..];
                }
                None => {
                    out.push_str(rest);
                    break;
                }
            }
        } else {
            let at = rest.find(['$', '.']).unwrap_or(rest.len());
            out.push_str(&rest[..at]);
            rest = &rest[at..];
        }
    }
    out.into()
}

/// Parses `# event : name = NAME, , id = { ... }, type = T (...), config = C, { sample_period,
/// sample_freq } = N, ..., freq = 1, ...`; `None` for other comment lines.
pub(super) fn parse_header_event(line: &str) -> Option<HeaderEvent> {
    let rest = line.strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("event")?.trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix("name = ")?;
    // The name may hold commas (`cpu/event=0x3c,umask=0/`): it ends where the next known
    // field starts.
    let end = [", id = ", ", , id = ", ", type = ", ", size = "]
        .iter()
        .filter_map(|m| rest.find(m))
        .min()
        .unwrap_or(rest.len());
    let name = rest[..end].trim().trim_end_matches(',').trim();
    if name.is_empty() {
        return None;
    }
    let mut event = HeaderEvent {
        name: name.to_string(),
        ..HeaderEvent::default()
    };
    let mut period = None;
    let mut freq = false;
    // The other fields, split at the commas outside braces (`id = { 1, 2 }`,
    // `{ sample_period, sample_freq } = 4000`).
    let mut depth = 0i32;
    let mut from = 0;
    let fields = &rest[end..];
    let mut items = Vec::new();
    for (i, c) in fields.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&fields[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    items.push(&fields[from..]);
    let number = |v: &str| -> Option<u64> {
        let v = v.split_whitespace().next()?;
        match v.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok(),
            None => v.parse().ok(),
        }
    };
    for item in items {
        let Some((key, value)) = item.split_once(" = ") else {
            continue;
        };
        match key.trim() {
            "type" => event.type_ = number(value).and_then(|v| u32::try_from(v).ok())?,
            "config" => event.config = number(value)?,
            "{ sample_period, sample_freq }" | "sample_period" => period = number(value),
            "freq" => freq = number(value).is_some_and(|v| v != 0),
            _ => {}
        }
    }
    event.fixed_period = if freq {
        None
    } else {
        period.filter(|&p| p > 0)
    };
    Some(event)
}
