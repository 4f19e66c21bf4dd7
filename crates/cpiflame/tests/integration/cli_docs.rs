//! docs/cli.md and README.md against the binary's own command tree (each subcommand's
//! `--help`, which clap prints from the tree the binary parses with): every flag a subcommand
//! takes is in docs/cli.md, every flag the docs give a `cpiflame SUB` command (in the
//! synopsis, code blocks and inline code) exists for SUB, and every command example of the two
//! pages parses (run with `--help` after it: clap checks each argument before it prints help;
//! an unknown flag or a bad value exits 2).

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use support::repo_root;

/// A subcommand's flags from its `--help`: long and short names (aliases too), and whether
/// each takes a value (`Some(true)`: always, `Some(false)`: an optional one, `None`: none).
#[derive(Debug, Default)]
struct Flags {
    takes: BTreeMap<String, Option<bool>>,
    /// Its positionals end in a command with its own arguments (`record`, `stat`).
    runs_a_command: bool,
}

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "cpiflame {args:?} --help");
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands `cpiflame --help` lists (without `help`).
fn subcommands() -> Vec<String> {
    let text = help(&[]);
    let list = text
        .split_once("Commands:\n")
        .expect("cpiflame --help lists commands")
        .1;
    list.lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

fn flags_of(sub: &str) -> Flags {
    let text = help(&[sub]);
    let mut flags = Flags {
        runs_a_command: text
            .lines()
            .any(|l| l.starts_with("Usage:") && l.contains("COMMAND") && l.ends_with("...")),
        ..Flags::default()
    };
    // What the option being described takes (its aliases take the same).
    let mut current = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        // An option's own line: `-o, --output <FILE>`, `--mem`, `--switch-output [<X>]`.
        if trimmed.starts_with('-') && line.len() - trimmed.len() <= 6 {
            let head = trimmed.split("  ").next().unwrap_or("");
            current = if head.contains(" [<") {
                Some(false)
            } else if head.contains(" <") {
                Some(true)
            } else {
                None
            };
            for name in head.split([',', ' ']).filter(|w| w.starts_with('-')) {
                flags.takes.insert(name.to_string(), current);
            }
        }
        // `[alias: --max-files]`, `[aliases: --a, --b]`
        for part in line.split("[alias").skip(1) {
            let list = part.split(']').next().unwrap_or("");
            for name in list.split([',', ' ', ':']).filter(|w| w.starts_with('-')) {
                flags.takes.insert(name.to_string(), current);
            }
        }
    }
    flags
}

/// The `--flags` a text names (a `--` followed by a lower-case letter, up to the name's end).
fn long_flags(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("--") {
        let start = i + at;
        let before_ok =
            start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'-');
        let mut end = start + 2;
        while end < bytes.len()
            && (bytes[end].is_ascii_lowercase()
                || bytes[end].is_ascii_digit()
                || bytes[end] == b'-')
        {
            end += 1;
        }
        if before_ok && end > start + 2 && bytes[start + 2].is_ascii_lowercase() {
            out.insert(text[start..end].trim_end_matches('-').to_string());
        }
        i = end.max(start + 2);
    }
    out
}

/// Each `cpiflame SUB ...` command the page gives: in fenced code blocks (a line, with the
/// indented lines after it that continue it, as the synopsis writes them) and in inline code
/// spans; shell pipes and redirections end a command. `(page, SUB, words)`.
fn documented_commands(page: &str, text: &str) -> Vec<(String, String, Vec<String>)> {
    let mut pieces: Vec<String> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            let continues = line.starts_with("    ") || line.starts_with('\t');
            match pieces.last_mut() {
                Some(last) if continues && last.starts_with("cpiflame ") => {
                    last.push(' ');
                    last.push_str(line.trim());
                }
                _ => pieces.push(line.trim().to_string()),
            }
            continue;
        }
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 1 {
                pieces.push(span.to_string());
            }
        }
    }
    let mut out = Vec::new();
    for piece in pieces {
        let piece = piece.split(" #").next().unwrap_or("").replace("\\ ", " ");
        for segment in piece.split(['|', ';', '>', '<', '&']) {
            let words: Vec<String> = segment.split_whitespace().map(str::to_string).collect();
            if words.first().map(String::as_str) == Some("cpiflame") && words.len() >= 2 {
                out.push((page.to_string(), words[1].clone(), words[2..].to_vec()));
            }
        }
    }
    out
}

/// The pages whose commands are checked.
fn pages() -> Vec<(String, String)> {
    ["README.md", "docs/cli.md"]
        .iter()
        .map(|p| {
            (
                p.to_string(),
                std::fs::read_to_string(repo_root().join(p)).unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_flag_of_every_subcommand_is_in_cli_md() {
    let cli = std::fs::read_to_string(repo_root().join("docs/cli.md")).unwrap();
    let named = long_flags(&cli);
    let mut missing = Vec::new();
    for sub in subcommands() {
        for flag in flags_of(&sub).takes.keys() {
            let clap_s_own = flag == "--help" || flag == "--version";
            if flag.starts_with("--") && !clap_s_own && !named.contains(flag) {
                missing.push(format!("{sub} {flag}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "flags in --help that docs/cli.md never names:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_flag_the_docs_give_a_command_exists() {
    let subs: BTreeMap<String, Flags> = subcommands()
        .into_iter()
        .map(|s| (s.clone(), flags_of(&s)))
        .collect();
    let mut wrong = BTreeSet::new();
    for (page, text) in pages() {
        for (_, sub, words) in documented_commands(&page, &text) {
            let Some(flags) = subs.get(&sub) else {
                if sub.chars().all(|c| c.is_ascii_lowercase()) {
                    wrong.insert(format!("{page}: cpiflame {sub}: no such subcommand"));
                }
                continue;
            };
            for word in &words {
                // Grammar and placeholders: `[--json]`, `(-p PID | ...)`, `--x|--y`.
                for part in word.split('|') {
                    let part = part.trim_matches(|c| "[]().,".contains(c));
                    let name = part.split('=').next().unwrap_or("");
                    if name == "--" || !name.starts_with('-') || name.len() < 2 {
                        continue;
                    }
                    let looks_like_flag = name[1..]
                        .trim_start_matches('-')
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphabetic());
                    if looks_like_flag && name != "--help" && !flags.takes.contains_key(name) {
                        wrong.insert(format!("{page}: cpiflame {sub} {name}"));
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "flags the docs give that the binary does not take:\n{}",
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The words of a documented command up to where the recorded command starts (`--`, or
/// a command's first positional, for `record` and `stat`), when it is an example rather than grammar (no `[`, `(`,
/// `...`, `|` in it).
fn example_words(words: &[String], flags: &Flags) -> Option<Vec<String>> {
    let grammar = words
        .iter()
        .any(|w| w.contains('[') || w.contains('(') || w.contains("...") || w.contains('|'));
    if grammar {
        return None;
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if w == "--" {
            break;
        }
        let name = w.split('=').next().unwrap();
        match flags.takes.get(name) {
            Some(Some(true)) if !w.contains('=') => {
                out.push(w.clone());
                if let Some(v) = words.get(i + 1) {
                    out.push(v.clone());
                }
                i += 2;
                continue;
            }
            Some(Some(false)) if !w.contains('=') => {
                out.push(w.clone());
                if let Some(v) = words.get(i + 1).filter(|v| !v.starts_with('-')) {
                    out.push(v.clone());
                    i += 1;
                }
            }
            None if !w.starts_with('-') && flags.runs_a_command => break,
            _ => out.push(w.clone()),
        }
        i += 1;
    }
    Some(out)
}

#[test]
fn every_command_example_parses() {
    let subs: BTreeMap<String, Flags> = subcommands()
        .into_iter()
        .map(|s| (s.clone(), flags_of(&s)))
        .collect();
    let (mut tried, mut refused) = (0, Vec::new());
    for (page, text) in pages() {
        for (_, sub, words) in documented_commands(&page, &text) {
            let Some(flags) = subs.get(&sub) else {
                continue;
            };
            let Some(args) = example_words(&words, flags) else {
                continue;
            };
            tried += 1;
            let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
                .arg(&sub)
                .args(&args)
                .arg("--help")
                .output()
                .unwrap();
            if !out.status.success() {
                refused.push(format!(
                    "{page}: cpiflame {sub} {}: {}",
                    words.join(" "),
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .next()
                        .unwrap_or("")
                ));
            }
        }
    }
    assert!(tried >= 20, "only {tried} examples found");
    assert!(
        refused.is_empty(),
        "examples the binary refuses:\n{}",
        refused.join("\n")
    );
}

#[test]
fn the_readers_find_what_they_should() {
    let text = "x\n```\ncpiflame render [FILE] [-o OUT.svg]\n    [--inverted]\n```\nsay `cpiflame fold a.data | cpiflame report` and `perf --x`\n";
    let found = documented_commands("p", text);
    let subs: Vec<&str> = found.iter().map(|(_, s, _)| s.as_str()).collect();
    assert_eq!(subs, ["render", "fold", "report"]);
    assert_eq!(found[0].2, ["[FILE]", "[-o", "OUT.svg]", "[--inverted]"]);
    assert_eq!(
        long_flags("`--json`, --max-files N, x--y, --Z, ---"),
        BTreeSet::from(["--json".to_string(), "--max-files".to_string()])
    );
}

/// The backticked spans of a text.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// docs/cli.md's table "Flags of the reading commands": for every row, the reading commands
/// its second column names take each of its flags, and the reading commands it does not name
/// refuse them (issue 41, item 15: `script`, `c2c` and `annotate` took fewer than it said).
/// The reading commands are the page's list, which must be the subcommands that take `--time`.
#[test]
fn the_reading_flags_table_says_which_commands_take_each_flag() {
    let cli = std::fs::read_to_string(repo_root().join("docs/cli.md")).unwrap();
    let section = cli
        .split_once("### Flags of the reading commands\n")
        .expect("docs/cli.md has the section")
        .1;
    let section = section.split("\n###").next().unwrap();
    let list = section
        .split_once("The reading commands are ")
        .expect("the section lists the reading commands")
        .1;
    let reading: BTreeSet<&str> = code_spans(list.split_once('.').unwrap().0)
        .into_iter()
        .collect();
    let subs: BTreeMap<String, Flags> = subcommands()
        .into_iter()
        .map(|s| (s.clone(), flags_of(&s)))
        .collect();
    let with_time: BTreeSet<&str> = subs
        .iter()
        .filter(|(_, f)| f.takes.contains_key("--time"))
        .map(|(s, _)| s.as_str())
        .collect();
    assert_eq!(reading, with_time, "the reading commands the page lists");

    let (mut rows, mut wrong) = (0, Vec::new());
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line[2..].splitn(3, " | ").collect();
        let claimed: BTreeSet<&str> = match cells[1] {
            "every reading command" => reading.clone(),
            named => code_spans(named).into_iter().collect(),
        };
        assert!(
            !claimed.is_empty() && claimed.is_subset(&reading),
            "row {:?}: its commands {claimed:?} are not reading commands",
            cells[0]
        );
        rows += 1;
        let flags = code_spans(cells[0])
            .into_iter()
            .filter(|s| s.starts_with('-'));
        for flag in flags.map(|s| s.split(' ').next().unwrap()) {
            for sub in &reading {
                let takes = subs[*sub].takes.contains_key(flag);
                if takes != claimed.contains(sub) {
                    let what = if takes { "takes" } else { "refuses" };
                    wrong.push(format!("{sub} {what} {flag}"));
                }
            }
        }
    }
    assert!(rows >= 10, "only {rows} rows found");
    assert!(
        wrong.is_empty(),
        "the table says otherwise:\n{}",
        wrong.join("\n")
    );
}

/// The options of a `--help` that have no help text (clap prints the flag alone).
fn options_without_help(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if !trimmed.starts_with('-') || indent(line) > 6 {
            continue;
        }
        let said_here = trimmed
            .split_once("  ")
            .is_some_and(|(_, r)| !r.trim().is_empty());
        let said_below = lines.get(i + 1).is_some_and(|n| indent(n) > 6);
        if !said_here && !said_below {
            out.push(trimmed.to_string());
        }
    }
    out
}

/// Issue 41, items 12, 16, 17 and 18: what `--help` says of timeline's input, --title,
/// --time and --group-sampling, and --width's minimum, is what the binary does.
#[test]
fn help_says_what_the_binary_does() {
    let mut bare = Vec::new();
    for sub in subcommands() {
        let text = help(&[&sub]);
        bare.extend(
            options_without_help(&text)
                .into_iter()
                .map(|o| format!("{sub} {o}")),
        );
        let time = text.lines().find(|l| l.trim_start().starts_with("--time"));
        if let Some(time) = time {
            // Only diff's ranges come in two sides.
            assert_eq!(
                time.contains("BEFORE:AFTER"),
                sub == "diff",
                "{sub}: {time}"
            );
        }
    }
    assert!(
        bare.is_empty(),
        "options without help:\n{}",
        bare.join("\n")
    );
    assert_eq!(
        options_without_help("  -x, --y <Z>\n      --w  has help\n"),
        ["-x, --y <Z>"]
    );

    let timeline = help(&["timeline"]);
    let input = timeline
        .lines()
        .find(|l| l.contains("[default: out.data]"))
        .unwrap();
    assert!(input.contains("one recording"), "{input}");
    assert!(!timeline.contains("folded"), "{timeline}");
    assert!(help(&["record"]).contains("--group-sampling"));

    // A width under 200 is refused as the command line is parsed: no file is read.
    for sub in ["render", "timeline", "diff"] {
        let mut args = vec![sub, "/nonexistent/a.data", "--width", "199"];
        if sub == "diff" {
            args.push("/nonexistent/b.data");
        }
        let out = Command::new(env!("CARGO_BIN_EXE_cpiflame"))
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("--width") && err.contains("200"),
            "{args:?}: {err}"
        );
    }
}
