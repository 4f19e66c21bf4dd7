//! PLT stubs are named `name@plt`, as objdump labels them, in every PLT layout gcc and ld make
//! on x86_64: lazy binding (`.plt` after a 16-byte header), IBT (`-fcf-protection`: the stubs
//! in `.plt.sec`, `.plt` holding the lazy trampolines) and immediate binding (`-z now`);
//! and `.plt.got`'s stubs (a PIE's `__cxa_finalize`, libc's `free` and `malloc`).
//!
//! The oracle is `objdump -d`, whose `<puts@plt>:` labels come from binutils' own reading of
//! the PLT; a program calling four library functions through it is built with `cc` per layout.

use std::path::{Path, PathBuf};
use std::process::Command;

use cpiflame_unwind::Image;

const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    char *p = malloc(64);
    strcpy(p, argc > 1 ? argv[1] : "x");
    puts(p);
    free(p);
    return 0;
}
"#;

fn build(dir: &Path, name: &str, flags: &[&str]) -> Option<PathBuf> {
    std::fs::write(dir.join("plt.c"), PROGRAM).unwrap();
    let built = Command::new("cc")
        .current_dir(dir)
        .args(["-O2", "-fno-builtin"])
        .args(flags)
        .args(["-o", name, "plt.c"])
        .output();
    match built {
        Ok(out) if out.status.success() => Some(dir.join(name)),
        other => {
            cpiflame_testkit::unavailable(format!("cc {flags:?} cannot build: {other:?}"));
            None
        }
    }
}

/// objdump's `<NAME@plt>` labels of the stubs called, in `.plt.sec` when there is one, else in
/// `.plt`, and in `.plt.got`: (address, name), and whether they are `.plt.sec`'s.
fn objdump_stubs(binary: &Path) -> Option<(Vec<(u64, String)>, bool)> {
    let out = match Command::new("objdump")
        .args(["-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got"])
        .arg(binary)
        .output()
    {
        Ok(out) if out.status.success() => out,
        other => {
            cpiflame_testkit::unavailable(format!("objdump cannot run: {other:?}"));
            return None;
        }
    };
    // (address, name, section)
    let mut stubs = Vec::new();
    let mut in_sec = "";
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(name) = line.strip_prefix("Disassembly of section ") {
            in_sec = match name {
                ".plt.sec:" => ".plt.sec",
                ".plt.got:" => ".plt.got",
                _ => ".plt",
            };
            continue;
        }
        let Some((addr, label)) = line.strip_suffix(">:").and_then(|l| l.split_once(" <")) else {
            continue;
        };
        // `foo@plt-0x10` labels the header, not a stub.
        if label.ends_with("@plt") {
            stubs.push((
                u64::from_str_radix(addr, 16).unwrap(),
                label.to_string(),
                in_sec,
            ));
        }
    }
    // With `.plt.sec`, `.plt` holds the lazy trampolines: the stubs called are `.plt.sec`'s.
    let sec = stubs.iter().any(|s| s.2 == ".plt.sec");
    Some((
        stubs
            .into_iter()
            .filter(|s| s.2 == ".plt.got" || (s.2 == ".plt.sec") == sec)
            .map(|(a, n, _)| (a, n))
            .collect(),
        sec,
    ))
}

#[test]
fn plt_stubs_are_named_as_objdump_labels_them_in_every_layout() {
    let dir = std::env::temp_dir().join(format!("cpiflame-plt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, flags) in [
        ("lazy", &[][..]),
        // ld makes an IBT PLT only when every input is marked for IBT, or when told to.
        ("ibt", &["-fcf-protection=full", "-Wl,-z,ibtplt"][..]),
        ("now", &["-Wl,-z,now"][..]),
        (
            "ibt-now",
            &["-fcf-protection=full", "-Wl,-z,ibtplt,-z,now"][..],
        ),
    ] {
        let Some(binary) = build(&dir, name, flags) else {
            return;
        };
        let Some((stubs, in_plt_sec)) = objdump_stubs(&binary) else {
            return;
        };
        assert_eq!(
            in_plt_sec,
            name.starts_with("ibt"),
            "{name}: .plt.sec or not"
        );
        let names: Vec<&str> = stubs.iter().map(|(_, n)| n.as_str()).collect();
        for expected in ["malloc@plt", "puts@plt", "free@plt"] {
            assert!(names.contains(&expected), "{name}: objdump shows {names:?}");
        }
        let image = Image::open(&binary).unwrap();
        for (addr, label) in &stubs {
            // `.plt.got`'s entries are 8 bytes (16 with IBT); the others 16.
            for at in [*addr, addr + 7] {
                let frames = image.frames_at(at, || None);
                let named: Vec<&str> = frames.iter().map(|f| f.name.as_str()).collect();
                assert_eq!(named, [label.as_str()], "{name}: {at:#x}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// libc's `.plt.got` (its `free` and `malloc`, called through GOT slots that are also data):
/// every stub objdump labels is named so, at its first and last byte. A sample there was
/// `libc.so.6+0x26360` before.
#[test]
fn libcs_plt_got_stubs_are_named_as_objdump_labels_them() {
    let out = Command::new("cc")
        .arg("-print-file-name=libc.so.6")
        .output()
        .expect("cc runs");
    let libc = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let libc = std::fs::canonicalize(&libc).unwrap_or(libc);
    let out = Command::new("objdump")
        .args(["-d", "-j", ".plt.got"])
        .arg(&libc)
        .output()
        .expect("objdump runs");
    // `0000000000026360 <free@plt>:`
    let stubs: Vec<(u64, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(">:")?.split_once(" <"))
        .map(|(a, n)| (u64::from_str_radix(a, 16).unwrap(), n.to_string()))
        .collect();
    let image = Image::open(&libc).unwrap();
    assert!(
        stubs.iter().any(|(_, n)| n == "free@plt"),
        "{}: objdump labels {stubs:?}",
        libc.display()
    );
    for (addr, label) in &stubs {
        for at in [*addr, addr + 7] {
            let frames = image.frames_at(at, || None);
            let named: Vec<&str> = frames.iter().map(|f| f.name.as_str()).collect();
            assert_eq!(named, [label.as_str()], "{}: {at:#x}", libc.display());
        }
    }
}
