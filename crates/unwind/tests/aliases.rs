//! Several names at one address (aliases): the frame takes the main one as perf's
//! `choose_best_symbol` does: one with a size, then global over local over weak, then the
//! fewest leading underscores, then the longest. A program with aliases is compiled at test
//! time without DWARF (so only the symbol table names it); `nm` says which names share an
//! address, and perf, recording the program, is the oracle for which one is shown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use cpiflame_unwind::Image;

const PROGRAM: &str = r#"
volatile long sink;
__attribute__((noinline)) int primary_function(int x) { for (int i = 0; i < 2000; i++) sink += x * i; return x * 3 + 1; }
int pf(int) __attribute__((alias("primary_function")));
int w(int) __attribute__((weak, alias("primary_function")));
static int loc(int) __attribute__((alias("primary_function"), used));
__attribute__((noinline)) int only_weak_impl(int x) { for (int i = 0; i < 2000; i++) sink ^= x + i; return x ^ 7; }
int ow(int) __attribute__((weak, alias("only_weak_impl")));
static __attribute__((noinline, used)) int zz_local(int x) { for (int i = 0; i < 2000; i++) sink -= x + i; return x + 5; }
int a_weak(int) __attribute__((weak, alias("zz_local")));
int main(int argc, char **argv) {
    (void)argv;
    long n = 0;
    for (int r = 0; r < 60000; r++) n += primary_function(argc) + only_weak_impl(argc) + zz_local(argc);
    return (int)(n & 1);
}
"#;

fn build(dir: &Path) -> Option<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("aliases.c"), PROGRAM).unwrap();
    match Command::new("cc")
        .args([
            "-O1",
            "-g0",
            "-fno-omit-frame-pointer",
            "-o",
            "aliases",
            "aliases.c",
        ])
        .current_dir(dir)
        .status()
    {
        Ok(s) => assert!(s.success(), "cc failed"),
        Err(e) => {
            cpiflame_testkit::unavailable(format!("cc: {e}"));
            return None;
        }
    }
    Some(dir.join("aliases"))
}

/// `nm`'s address of the text symbol `name` in `binary`.
fn nm_address(binary: &Path, name: &str) -> u64 {
    let out = Command::new("nm").arg(binary).output().expect("nm runs");
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            let (addr, _kind, n) = (w.next()?, w.next()?, w.next()?);
            (n == name).then(|| u64::from_str_radix(addr, 16).unwrap())
        })
        .unwrap_or_else(|| panic!("nm lists no {name}"))
}

/// The names perf gives the samples of `binary` recorded running, with their counts.
fn perf_names(dir: &Path, binary: &Path) -> Option<BTreeMap<String, usize>> {
    let data = dir.join("aliases.data");
    let recorded = Command::new("perf")
        .args(["record", "-q", "-N", "-e", "cpu-clock", "-F", "4000", "-o"])
        .arg(&data)
        .arg(binary)
        .output();
    match recorded {
        Ok(o) if o.status.success() && data.exists() => {}
        Ok(o) => {
            cpiflame_testkit::unavailable(format!(
                "perf record failed: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
            return None;
        }
        Err(e) => {
            cpiflame_testkit::unavailable(format!("perf: {e}"));
            return None;
        }
    }
    let out = Command::new("perf")
        .args(["script", "-F", "ip,sym,dso", "-i"])
        .arg(&data)
        .output()
        .expect("perf script runs");
    let mut names = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // `IP SYMBOL (DSO)`: the samples in the program itself.
        let mut fields = line.split_whitespace();
        let (Some(_ip), Some(sym), Some(dso)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if dso.ends_with("/aliases)") {
            *names.entry(sym.to_string()).or_insert(0) += 1;
        }
    }
    Some(names)
}

#[test]
fn the_main_name_among_aliases_is_the_one_perf_shows() {
    let dir = std::env::temp_dir().join(format!("cpiflame-unwind-aliases-{}", std::process::id()));
    let Some(binary) = build(&dir) else { return };
    let image = Image::open(&binary).unwrap();
    let name_at = |addr: u64| -> Vec<String> {
        image
            .frames_at(addr, || None)
            .into_iter()
            .map(|f| f.name)
            .collect()
    };
    // Four names at one address: the weak `w` and the local `loc` lose on binding; of the two
    // globals, neither has a leading underscore and the longer wins.
    let primary = nm_address(&binary, "primary_function");
    for alias in ["pf", "w", "loc"] {
        assert_eq!(nm_address(&binary, alias), primary, "{alias} is an alias");
    }
    assert_eq!(name_at(primary), ["primary_function"]);
    assert_eq!(name_at(primary + 1), ["primary_function"]);
    // Global over weak.
    let only = nm_address(&binary, "only_weak_impl");
    assert_eq!(nm_address(&binary, "ow"), only);
    assert_eq!(name_at(only), ["only_weak_impl"]);
    // Local over weak.
    let local = nm_address(&binary, "zz_local");
    assert_eq!(nm_address(&binary, "a_weak"), local);
    assert_eq!(name_at(local), ["zz_local"]);
    // perf, recording the program, shows the same three names and none of the aliases.
    let Some(perf) = perf_names(&dir, &binary) else {
        return;
    };
    for shown in ["primary_function", "only_weak_impl", "zz_local"] {
        assert!(perf.contains_key(shown), "perf shows no {shown}: {perf:?}");
    }
    for alias in ["pf", "w", "loc", "ow", "a_weak"] {
        assert!(!perf.contains_key(alias), "perf shows {alias}: {perf:?}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
