//! Paths come from recordings, which can be hostile: whatever a recorded path names, opening
//! it as a binary, a JIT map or a symbol table returns promptly with an error unless it is
//! a regular file.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use cpiflame_unwind::{Image, Kallsyms, PerfMap};

/// Runs `f` on another thread and fails the test if it has not returned within a minute
/// (a blocked open never returns; a minute is far beyond any machine's noise).
fn returns<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what}: did not return"))
}

fn fifo() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cpiflame-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("planted.fifo");
    let _ = std::fs::remove_file(&path);
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo");
    assert!(status.success());
    path
}

#[test]
fn a_fifo_at_a_recorded_path_is_not_waited_on() {
    let path = fifo();
    let p = path.clone();
    let image = returns("Image::open(fifo)", move || Image::open(&p).err());
    assert_eq!(
        image.map(|e| e.to_string()),
        Some("unreadable (not a regular file)".to_string())
    );
    let p = path.clone();
    assert!(returns("PerfMap::load(fifo)", move || PerfMap::load(&p).is_none()));
    let p = path.clone();
    assert!(returns("Kallsyms::load(fifo)", move || Kallsyms::load(&p).is_none()));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn devices_and_directories_are_not_read() {
    for path in ["/dev/zero", "/dev/urandom", "/"] {
        let p = Path::new(path).to_path_buf();
        let err = returns(path, move || Image::open(&p).err());
        assert!(err.is_some(), "{path} is not an image");
        let p = Path::new(path).to_path_buf();
        assert!(returns(path, move || PerfMap::load(&p).is_none()));
    }
}
