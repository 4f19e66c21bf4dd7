//! Several names at one address (aliases): the frame takes the main one as perf does, one
//! with a size, then global over local over weak, then the shortest, then by name; an
//! address past the symbol's size is not named by it. A program with aliases is compiled at
//! test time without DWARF (so only the symbol table names it), and its symbol table is
//! read with `nm` as the independent account of which names are at which address.

use std::path::PathBuf;
use std::process::Command;

use cpiflame_unwind::Image;

const PROGRAM: &str = r#"
__attribute__((noinline)) int primary_function(int x) { return x * 3 + 1; }
int pf(int) __attribute__((alias("primary_function")));
int w(int) __attribute__((weak, alias("primary_function")));
static int loc(int) __attribute__((alias("primary_function"), used));
__attribute__((noinline)) int only_weak_impl(int x) { return x ^ 7; }
int ow(int) __attribute__((weak, alias("only_weak_impl")));
static __attribute__((noinline, used)) int zz_local(int x) { return x + 5; }
int a_weak(int) __attribute__((weak, alias("zz_local")));
int main(int argc, char **argv) { (void)argv; return primary_function(argc) + only_weak_impl(argc) + zz_local(argc); }
"#;

fn build() -> Option<(PathBuf, PathBuf)> {
    let dir = std::env::temp_dir().join(format!("cpiflame-unwind-aliases-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("aliases.c"), PROGRAM).unwrap();
    match Command::new("cc")
        .args(["-O1", "-g0", "-o", "aliases", "aliases.c"])
        .current_dir(&dir)
        .status()
    {
        Ok(s) => assert!(s.success(), "cc failed"),
        Err(e) => {
            cpiflame_testkit::unavailable(format!("cc: {e}"));
            return None;
        }
    }
    Some((dir.join("aliases"), dir))
}

/// `nm`'s address of each text symbol named `name` in `binary`.
fn nm_address(binary: &PathBuf, name: &str) -> u64 {
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

#[test]
fn the_main_name_among_aliases_is_chosen_as_perf_does() {
    let Some((binary, dir)) = build() else { return };
    let image = Image::open(&binary).unwrap();
    let name_at = |addr: u64| -> Vec<String> {
        image
            .frames_at(addr, || None)
            .into_iter()
            .map(|f| f.name)
            .collect()
    };
    // Four names at one address: the global `pf` is the shortest global; the weak `w` and
    // the local `loc` are shorter or as short but lose on binding.
    let primary = nm_address(&binary, "primary_function");
    for alias in ["pf", "w", "loc"] {
        assert_eq!(nm_address(&binary, alias), primary, "{alias} is an alias");
    }
    assert_eq!(name_at(primary), ["pf"]);
    assert_eq!(name_at(primary + 1), ["pf"]);
    // Global over weak, however long.
    let only = nm_address(&binary, "only_weak_impl");
    assert_eq!(nm_address(&binary, "ow"), only);
    assert_eq!(name_at(only), ["only_weak_impl"]);
    // Local over weak.
    let local = nm_address(&binary, "zz_local");
    assert_eq!(nm_address(&binary, "a_weak"), local);
    assert_eq!(name_at(local), ["zz_local"]);
    let _ = std::fs::remove_dir_all(dir);
}
