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
