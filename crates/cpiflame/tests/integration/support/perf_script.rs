//! `perf script` as an oracle: running it and parsing its call-chain output.
//!
//! # Command
//!
//! ```text
//! perf script -f -i DATA -F comm,pid,tid,time,event,ip,sym,dso --ns [--inline | --no-inline]
//! ```
//!
//! prints, for each sample, a header line and then (because the recording
//! has call chains) one line per frame, leaf first, and a blank line:
//!
//! ```text
//! recurse  5264/5268    525.971482594:  cpu-clock:
//! \t            145f recurse_leaf (/tmp/fx/threads)
//! \t            148f recurse (/tmp/fx/threads)
//! \t           891f4 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)
//! \t          1098eb clone3 (/usr/lib/x86_64-linux-gnu/libc.so.6)
//!
//! ```
//!
//! Facts found by experiment with Debian's linux-perf 6.1 (6.1.187, built
//! with libunwind and libdw, without libbfd) on the reference VM:
//!
//! * Header: `COMM PID/TID SECONDS.NANOS: EVENT: ` (comm unpadded when a
//!   call chain is printed, event name right-aligned with a trailing colon
//!   and space). `--ns` gives 9 decimals (6 without it). The comm is the
//!   thread's name at that time (`pthread_setname_np`, Rust's named threads).
//! * Frame line: a tab, the address right-aligned in 16 columns of lower-case
//!   hex without `0x`, a space, the symbol, a space, and the DSO in
//!   parentheses: the full path, `[kernel.kallsyms]`, `[vdso]`, or
//!   `[unknown]`.
//! * Addresses: kernel frames print the absolute kernel address
//!   (`ffffffff8158c6ae`). User frames print the address relative to the
//!   DSO's file: `ip - mapping start + mapping file offset`. That is the ELF
//!   virtual address only where a segment's `p_vaddr == p_offset` (gcc/ld
//!   output, libc); rustc 1.95 links with lld and its text segment has
//!   `p_vaddr = p_offset + 0x1000`, so perf prints `vaddr - 0x1000` there.
//!   The leaf prints the sampled ip; every caller frame prints its return
//!   address minus one (`call` ends at 0x1490 in `recurse`, perf prints
//!   `148f`). (Without a call chain the ip on the header line is instead
//!   the absolute runtime address.)
//! * Unknown symbols print `[unknown]`; when unwinding stops early (e.g. the
//!   stack dump was too short) the last frame is
//!   `ffffffffffffffff [unknown] ([unknown])`.
//! * `symoff` appends `+0x1f` to the symbol; for inlined frames it prints
//!   the offset into the enclosing real function, so it is useless there.
//!   We do not request it, but strip it if present.
//! * Inlining: `perf script` resolves inlined frames BY DEFAULT (`--inline`
//!   is on), and `--no-inline` exists and turns it off. An inlined frame
//!   repeats the address of the real frame it belongs to and prints
//!   `(inlined)` in place of the DSO:
//!   ```text
//!   \t            151f inline_helper (inlined)
//!   \t            151f inline_caller (/tmp/fx/threads)
//!   ```
//!   Inline chains come from binutils' `addr2line -i -f`, run as a
//!   long-lived child process per DSO and found on PATH (perf tries
//!   `/usr/lib/perf-core/addr2line` first; a different `addr2line` earlier
//!   on PATH would change the output).
//! * Quirk: when the outermost DWARF function name differs from the ELF
//!   symbol name (glibc aliases: DWARF `__libc_start_main_impl` vs symbol
//!   `__libc_start_main@@GLIBC_2.34`, `__GI___clock_gettime` vs
//!   `clock_gettime@@GLIBC_2.17`), perf prints that frame only once, with the
//!   DWARF name and marked `(inlined)`. So with `--inline` a physical frame
//!   can appear only as "inlined"; compare physical stacks against
//!   `--no-inline` output. (libc6-dbg is installed on the reference machines,
//!   which is where libc's DWARF comes from.)
//! * With `--no-inline`, symbols come from the ELF symbol tables; symbols
//!   from libc's `.dynsym` keep their version: `clock_gettime@@GLIBC_2.17`.
//! * Demangling is on by default (`--no-demangle` turns it off): C++ names
//!   are printed without parameters or return type
//!   (`cpiflame::fixtures::spin<int>`,
//!   `main::{lambda(unsigned long)#1}::operator()`,
//!   `(anonymous namespace)::hidden_spin`); Rust legacy names lose their
//!   hash (`rust_workload::worker_light`, generic parameters are not in
//!   legacy symbols); Rust v0 names are demangled too, with generic
//!   arguments (`rust_workload::generic_spin::<u32>`). Inlined Rust frames
//!   are named from DWARF linkage names, so they follow the mangling the
//!   code was compiled with (`rust_workload::main::{{closure}}::{{closure}}`
//!   in a legacy build, `...::{closure#0}::{closure#0}` in a v0 build; the
//!   prebuilt std is v0).
//! * Kernel frames: as root (kptr_restrict 0) samples taken in the kernel
//!   show the kernel chain first (`[kernel.kallsyms]`), then the user chain.
//! * Speed: fast on this machine. For 1.2-2.6 s runs recorded at 4000 Hz x 2
//!   events (90-210 MB perf.data, 11 000-25 000 samples, up to 480 000
//!   output lines): 0.22-0.62 s with inline resolution (the Rust workload is
//!   the slowest), 0.15-0.33 s with `--no-inline`.
//! * Warnings ("Processed N events and lost M chunks!") go to stderr.

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};

/// The `-F` field list [`perf_script_args`] passes.
pub const SCRIPT_FIELDS: &str = "comm,pid,tid,time,event,ip,sym,dso";

/// The DSO perf prints for kernel frames.
pub const KERNEL_DSO: &str = "[kernel.kallsyms]";

/// One frame of a sample's call chain, as `perf script` printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptFrame {
    /// The printed address: absolute for kernel frames; for user frames the
    /// address relative to the DSO file (see the module docs); for callers
    /// the return address minus one.
    pub addr: u64,
    /// The (demangled) symbol without any `+0xOFFSET`, or `[unknown]`.
    pub symbol: String,
    /// The DSO as printed in parentheses (a path, `[kernel.kallsyms]`,
    /// `[vdso]`, `[unknown]`); empty for inlined frames, which print
    /// `(inlined)` instead.
    pub dso: String,
    /// The frame was printed with `(inlined)`.
    pub inlined: bool,
}

impl ScriptFrame {
    /// A kernel frame (`[kernel.kallsyms]` or another `[kernel.*]` DSO).
    pub fn is_kernel(&self) -> bool {
        self.dso.starts_with("[kernel.")
    }

    /// perf could not name the symbol.
    pub fn is_unknown(&self) -> bool {
        self.symbol == "[unknown]"
    }
}

/// One sample as `perf script` printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptSample {
    /// The thread's name.
    pub comm: String,
    pub pid: u32,
    pub tid: u32,
    /// The timestamp in nanoseconds (from `SECONDS.NANOS`).
    pub time_ns: u64,
    /// The event name without the trailing colon (`cpu-clock`).
    pub event: String,
    /// The call chain, leaf first, as printed (kernel frames, then user
    /// frames; inlined frames before the real frame they belong to).
    pub frames: Vec<ScriptFrame>,
}

impl ScriptSample {
    /// Frames that are not kernel frames.
    pub fn user_frames(&self) -> impl Iterator<Item = &ScriptFrame> {
        self.frames.iter().filter(|f| !f.is_kernel())
    }

    /// Frames that were not printed as `(inlined)`.
    pub fn physical_frames(&self) -> impl Iterator<Item = &ScriptFrame> {
        self.frames.iter().filter(|f| !f.inlined)
    }

    /// The symbols of all frames, leaf first.
    pub fn symbols(&self) -> Vec<&str> {
        self.frames.iter().map(|f| f.symbol.as_str()).collect()
    }

    /// The first user-space frame (the user leaf), if any.
    pub fn user_leaf(&self) -> Option<&ScriptFrame> {
        self.user_frames().next()
    }

    /// True if the chain ends in `[unknown]` (unwinding stopped early).
    pub fn ends_unknown(&self) -> bool {
        self.frames.last().is_some_and(ScriptFrame::is_unknown)
    }
}

/// How to run `perf script`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptOptions {
    /// Resolve inlined frames (`--inline`, perf's default) or not
    /// (`--no-inline`).
    pub inline: bool,
    /// Demangle symbols (perf's default) or print raw names
    /// (`--no-demangle`).
    pub demangle: bool,
    /// More arguments, appended last (e.g. `--tid`, `--time`).
    pub extra: Vec<String>,
}

impl Default for ScriptOptions {
    fn default() -> Self {
        ScriptOptions {
            inline: true,
            demangle: true,
            extra: Vec::new(),
        }
    }
}

/// The arguments after `perf`:
/// `script -f -i DATA -F comm,pid,tid,time,event,ip,sym,dso --ns --inline`
/// (or `--no-inline`), plus `--no-demangle` and `extra` if asked for. `-f`
/// keeps perf from refusing files owned by another user.
pub fn perf_script_args(data: &Path, opts: &ScriptOptions) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["script".into(), "-f".into(), "-i".into()];
    args.push(data.as_os_str().to_owned());
    args.push("-F".into());
    args.push(SCRIPT_FIELDS.into());
    args.push("--ns".into());
    args.push(
        if opts.inline {
            "--inline"
        } else {
            "--no-inline"
        }
        .into(),
    );
    if !opts.demangle {
        args.push("--no-demangle".into());
    }
    args.extend(opts.extra.iter().map(OsString::from));
    args
}

/// Runs `perf script` with [`perf_script_args`] and returns its stdout.
pub fn perf_script_text(data: &Path, opts: &ScriptOptions) -> Result<String, String> {
    let mut command = Command::new("perf");
    command
        .args(perf_script_args(data, opts))
        .stdin(Stdio::null());
    let shown = format!("{command:?}");
    let output = command
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{shown} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    // Lossy, as cpiflame shows names: node 20 writes some JIT names with stray bytes (its
    // code objects' file names), which perf prints as they are.
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `perf script` of DATA with perf's defaults (inline frames resolved,
/// names demangled), parsed.
pub fn perf_script_samples(data: &Path) -> Result<Vec<ScriptSample>, String> {
    perf_script_samples_with(data, &ScriptOptions::default())
}

/// `perf script` of DATA with the given options, parsed.
pub fn perf_script_samples_with(
    data: &Path,
    opts: &ScriptOptions,
) -> Result<Vec<ScriptSample>, String> {
    let text = perf_script_text(data, opts)?;
    parse_perf_script(&text).map_err(|e| format!("parsing perf script of {}: {e}", data.display()))
}

/// Parses the output of `perf script -F comm,pid,tid,time,event,ip,sym,dso`
/// (with or without `--ns`, `symoff`, `--inline`).
///
/// Lines starting with a tab are frames of the current sample; a blank line
/// ends a sample; any other line is a sample header. A header without a
/// call chain carries its single frame on the same line
/// (`comm pid/tid time: event:  ADDR SYM (DSO)`). Errors name the line.
pub fn parse_perf_script(text: &str) -> Result<Vec<ScriptSample>, String> {
    let mut samples = Vec::new();
    let mut current: Option<ScriptSample> = None;
    for (index, line) in text.lines().enumerate() {
        let lineno = index + 1;
        let context = |e: String| format!("line {lineno}: {e}: {line:?}");
        if line.trim().is_empty() {
            if let Some(sample) = current.take() {
                samples.push(sample);
            }
        } else if line.starts_with('\t') {
            let frame = parse_frame(line).map_err(context)?;
            match current.as_mut() {
                Some(sample) => sample.frames.push(frame),
                None => return Err(context("frame line outside a sample".to_string())),
            }
        } else {
            if let Some(sample) = current.take() {
                samples.push(sample);
            }
            current = Some(parse_header(line).map_err(context)?);
        }
    }
    if let Some(sample) = current.take() {
        samples.push(sample);
    }
    Ok(samples)
}

fn parse_header(line: &str) -> Result<ScriptSample, String> {
    // Find "PID/TID SECONDS.FRACTION:" followed by "EVENT:"; everything before
    // is the comm (which may contain spaces or digits).
    let tokens = token_spans(line);
    for i in 0..tokens.len() {
        let (start, tok) = tokens[i];
        let Some((pid, tid)) = parse_pid_tid(tok) else {
            continue;
        };
        let Some(&(_, time_tok)) = tokens.get(i + 1) else {
            continue;
        };
        let Some(time_ns) = time_tok.strip_suffix(':').and_then(parse_time_ns) else {
            continue;
        };
        let Some(&(event_start, event_tok)) = tokens.get(i + 2) else {
            return Err("header without an event name".to_string());
        };
        let Some(event) = event_tok.strip_suffix(':') else {
            return Err(format!("event name {event_tok:?} does not end with ':'"));
        };
        let comm = line[..start].trim().to_string();
        let rest = line[event_start + event_tok.len()..].trim();
        let mut frames = Vec::new();
        if !rest.is_empty() {
            frames.push(parse_frame_text(rest)?);
        }
        return Ok(ScriptSample {
            comm,
            pid,
            tid,
            time_ns,
            event: event.to_string(),
            frames,
        });
    }
    Err("not a sample header (expected COMM PID/TID TIME: EVENT:)".to_string())
}

/// Whitespace-separated tokens with their byte offsets.
fn token_spans(line: &str) -> Vec<(usize, &str)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        if c.is_whitespace() {
            if let Some(s) = start.take() {
                spans.push((s, &line[s..i]));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        spans.push((s, &line[s..]));
    }
    spans
}

fn parse_pid_tid(tok: &str) -> Option<(u32, u32)> {
    let (pid, tid) = tok.split_once('/')?;
    // perf prints -1 for unknown pids; those do not fit u32 and are rejected.
    Some((pid.parse().ok()?, tid.parse().ok()?))
}

fn parse_time_ns(tok: &str) -> Option<u64> {
    let (secs, frac) = tok.split_once('.')?;
    if secs.is_empty()
        || frac.is_empty()
        || frac.len() > 9
        || !secs.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let mut nanos: u64 = frac.parse().ok()?;
    for _ in frac.len()..9 {
        nanos *= 10;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

fn parse_frame(line: &str) -> Result<ScriptFrame, String> {
    parse_frame_text(line.trim())
}

/// Parses `ADDR SYMBOL (DSO)`; the symbol may contain spaces and
/// parentheses, the DSO is the last balanced parenthesised group.
fn parse_frame_text(text: &str) -> Result<ScriptFrame, String> {
    let (addr_tok, rest) = text
        .split_once(char::is_whitespace)
        .ok_or_else(|| "frame without symbol and DSO".to_string())?;
    let addr = u64::from_str_radix(addr_tok, 16)
        .map_err(|e| format!("bad frame address {addr_tok:?}: {e}"))?;
    let rest = rest.trim();
    let open =
        dso_group_start(rest).ok_or_else(|| "frame does not end with a (DSO) group".to_string())?;
    let dso = &rest[open + 1..rest.len() - 1];
    let symbol = strip_symoff(rest[..open].trim_end());
    if symbol.is_empty() {
        return Err("frame without a symbol".to_string());
    }
    let inlined = dso == "inlined";
    Ok(ScriptFrame {
        addr,
        symbol: symbol.to_string(),
        dso: if inlined {
            String::new()
        } else {
            dso.to_string()
        },
        inlined,
    })
}

/// Byte offset of the '(' opening the final parenthesised group of `s`
/// (which must end with ')'), matching parentheses so that a DSO such as
/// `(/tmp/x (deleted))` stays whole. The group must be preceded by a space.
fn dso_group_start(s: &str) -> Option<usize> {
    if !s.ends_with(')') {
        return None;
    }
    let bytes = s.as_bytes();
    let mut depth = 0usize;
    for i in (0..bytes.len()).rev() {
        match bytes[i] {
            b')' => depth += 1,
            b'(' => {
                depth -= 1;
                if depth == 0 {
                    return (i > 0 && bytes[i - 1] == b' ').then_some(i);
                }
            }
            _ => {}
        }
    }
    // Unbalanced: fall back to the last " (".
    s.rfind(" (").map(|i| i + 1)
}

/// Removes a trailing `+0xHEX` (perf's `symoff`).
fn strip_symoff(symbol: &str) -> &str {
    if let Some(pos) = symbol.rfind("+0x") {
        let hex = &symbol[pos + 3..];
        if pos > 0 && !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return &symbol[..pos];
        }
    }
    symbol
}
