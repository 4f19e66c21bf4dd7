//! Scratch directories for tests.
//!
//! Several tests of one process (one test binary runs many modules' tests on parallel
//! threads) may ask for the same name, so every directory also carries the process id and a
//! per-process sequence number: no two live `Dir`s share a path, and nothing is left in the
//! temp dir after the test.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh directory under the system temp dir, named
/// `cpiflame-test-PID-SEQ-NAME`, removed with everything in it when dropped, unless the
/// test panicked and `CPIFLAME_KEEP_FAILED_TESTS` is set (the files stay to look at).
pub struct Dir(pub PathBuf);

impl Dir {
    /// Creates the directory (panics if it cannot: a test cannot go on without it).
    pub fn new(name: &str) -> Dir {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let d =
            std::env::temp_dir().join(format!("cpiflame-test-{}-{seq}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", d.display()));
        Dir(d)
    }

    /// `name` inside the directory (not created).
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.0
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        if std::thread::panicking() && std::env::var_os("CPIFLAME_KEEP_FAILED_TESTS").is_some() {
            eprintln!("kept {}", self.0.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::Dir;

    #[test]
    fn two_dirs_of_one_name_are_distinct_and_removed_when_dropped() {
        let a = Dir::new("same");
        let b = Dir::new("same");
        assert_ne!(a.0, b.0);
        assert!(a.0.is_dir() && b.0.is_dir());
        std::fs::write(a.path("f"), b"x").unwrap();
        let kept = a.0.clone();
        drop(a);
        assert!(!kept.exists());
        assert!(b.0.is_dir());
    }
}
