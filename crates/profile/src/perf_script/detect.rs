//! Whether the first bytes of an input are `perf script` text: the half of
//! `cpiflame_perf_data::InputKind::detect` that knows the text, and the one layout the reader
//! does not take (no event field), told apart so the error can say so.

use super::line::{is_cpu, is_side_band, is_time, parse_frame, parse_header, pid_tid, tokens};

/// The first sample line of `perf script` text printed without the event field (`-F
/// comm,tid,ip,sym`: `sh  1456`, optionally with `[CPU]` and a time, then tab-indented
/// frames), which the reader does not take: without the event a sample line cannot be told
/// from a frame or a folded line (`sh 1456` reads as a stack with its count). `None` for
/// anything else, perf script text that has its event included.
pub fn perf_script_without_event(first_bytes: &[u8]) -> Option<&str> {
    let text = match std::str::from_utf8(first_bytes) {
        Ok(t) => t,
        Err(e) => std::str::from_utf8(&first_bytes[..e.valid_up_to()]).ok()?,
    };
    let mut lines = text
        .split('\n')
        .map(|l| l.trim_end_matches('\r'))
        .skip_while(|l| l.starts_with('#') || l.trim().is_empty());
    let (header, next) = (lines.next()?, lines.next()?);
    if !next.starts_with('\t') || parse_frame(next).is_none() || parse_header(header).is_ok() {
        return None;
    }
    // COMM (one or more words), then PID/TID or TID, [CPU] and a time if there, and no more.
    let toks: Vec<&str> = tokens(header).take(64).map(|(_, t)| t).collect();
    let fields = |rest: &[&str]| {
        let mut rest = rest.iter().peekable();
        let id = rest.next().is_some_and(|t| pid_tid(t).is_some());
        rest.next_if(|t| is_cpu(t));
        rest.next_if(|t| is_time(t));
        id && rest.next().is_none()
    };
    (1..toks.len())
        .any(|start| fields(&toks[start..]))
        .then_some(header.trim())
}

/// A cheap guess, from the first bytes of a file (a few KiB), whether it is `perf script`
/// text: the `perf script` half of `cpiflame_perf_data::InputKind::detect`, which decides an
/// input's kind (magic numbers first) and is what readers are chosen by.
///
/// True when the first line that is not blank or a comment is a complete sample header
/// (`COMM PID/TID TIME: EVENT:` in any of the layouts the reader takes), and the line after
/// it, when the bytes hold it, is a frame, a blank line or another header. When the bytes
/// hold only comments, true when they are `perf script --header`'s (`# ========`,
/// `# event : `); side-band lines (`PERF_RECORD_MMAP`, ...) are passed over, and fill the
/// bytes only in `perf script` text. False for empty input, binary data (perf.data's header
/// holds NUL bytes) and folded text.
pub fn looks_like_perf_script(first_bytes: &[u8]) -> bool {
    let text = match std::str::from_utf8(first_bytes) {
        Ok(t) => t,
        // A character cut off at the end is fine; a symbol with bad bytes is not worth
        // guessing over here.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&first_bytes[..e.valid_up_to()]).unwrap_or("")
        }
        Err(_) => return false,
    };
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return false;
    }
    let mut perf_comments = false;
    let mut side_band = false;
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        let complete = lines.peek().is_some();
        let line = line.trim_end_matches('\r');
        if line.starts_with('#') {
            perf_comments |= line.starts_with("# ========") || line.starts_with("# event : ");
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        if complete && is_side_band(line) {
            side_band = true;
            continue;
        }
        if !complete && side_band {
            // `--show-mmap-events` can print many side-band lines before the first sample.
            return true;
        }
        if !complete || parse_header(line).is_err() {
            return false;
        }
        let Some(next) = lines.next() else {
            return true;
        };
        let next = next.trim_end_matches('\r');
        // A sample without a call chain (a tracepoint's) may be followed by a side-band
        // line (`--show-task-events`' COMM of the exec that comes next).
        return lines.peek().is_none()
            || next.trim().is_empty()
            || next.starts_with('\t')
            || parse_frame(next).is_some()
            || parse_header(next).is_ok()
            || is_side_band(next);
    }
    perf_comments
}
