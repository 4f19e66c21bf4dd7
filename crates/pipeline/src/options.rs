//! The one place the process environment is read. Every switch a user sets in the
//! environment (`CPIFLAME_THREADS`, `CPIFLAME_CACHE_DIR`, `CI`) and every default taken from
//! it (`$HOME/.debug`, `$XDG_CACHE_HOME`) is read here, once, into plain values that the
//! binary hands to the libraries; no library reads the environment itself, so each can be
//! driven from a test with the values it wants.

use std::ffi::OsString;
use std::path::PathBuf;

/// What the environment says, read once by [`Environment::read`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Environment {
    /// `CPIFLAME_THREADS=1`: do everything on the calling thread (any other value, or none,
    /// lets the work spread over threads where it pays). The output is the same either way.
    pub single_threaded: bool,
    /// perf's build-id cache, `$HOME/.debug`; `None` without a `HOME`.
    pub buildid_cache: Option<PathBuf>,
    /// Where decompressed debug sections are kept between runs: `$CPIFLAME_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/cpiflame` (when absolute), else `$HOME/.cache/cpiflame`; `None` when
    /// `CPIFLAME_CACHE_DIR` is set but empty.
    pub dwarf_cache: Option<PathBuf>,
    /// Running under CI (`CI` set to anything but empty, `0` or `false`): no progress lines.
    pub ci: bool,
}

impl Environment {
    /// Reads this process's environment.
    pub fn read() -> Environment {
        Environment::from_vars(|name| std::env::var_os(name))
    }

    /// The environment as `var` gives it (a name to its value, if set).
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Environment {
        let path = |name: &str| var(name).map(PathBuf::from);
        let text = |name: &str| var(name).map(|v| v.to_string_lossy().into_owned());
        let home = path("HOME");
        let dwarf_cache = match path("CPIFLAME_CACHE_DIR") {
            Some(dir) if dir.as_os_str().is_empty() => None,
            Some(dir) => Some(dir),
            None => path("XDG_CACHE_HOME")
                .filter(|d| d.is_absolute())
                .or_else(|| home.as_ref().map(|h| h.join(".cache")))
                .map(|d| d.join("cpiflame")),
        };
        Environment {
            single_threaded: text("CPIFLAME_THREADS").is_some_and(|v| v.trim() == "1"),
            buildid_cache: home.map(|h| h.join(".debug")),
            dwarf_cache,
            ci: text("CI").is_some_and(|v| !matches!(v.trim(), "" | "0" | "false")),
        }
    }

    /// The resolver's options for the command line: the caches and thread count from here,
    /// the rest (`--symfs`, `--kallsyms`) left for the command to fill in.
    pub fn resolve_options(&self) -> cpiflame_unwind::Options {
        cpiflame_unwind::Options {
            buildid_cache: self.buildid_cache.clone(),
            dwarf_cache: self.dwarf_cache.clone(),
            single_threaded: self.single_threaded,
            ..cpiflame_unwind::Options::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Environment {
        Environment::from_vars(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn caches_threads_and_ci_from_the_variables() {
        let e = env(&[("HOME", "/home/u")]);
        assert_eq!(e.buildid_cache, Some(PathBuf::from("/home/u/.debug")));
        assert_eq!(
            e.dwarf_cache,
            Some(PathBuf::from("/home/u/.cache/cpiflame"))
        );
        assert!(!e.single_threaded && !e.ci);
        let e = env(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/x")]);
        assert_eq!(e.dwarf_cache, Some(PathBuf::from("/x/cpiflame")));
        // A relative XDG_CACHE_HOME is ignored, as the spec says.
        let e = env(&[("HOME", "/h"), ("XDG_CACHE_HOME", "x")]);
        assert_eq!(e.dwarf_cache, Some(PathBuf::from("/h/.cache/cpiflame")));
        let e = env(&[("HOME", "/h"), ("CPIFLAME_CACHE_DIR", "/c")]);
        assert_eq!(e.dwarf_cache, Some(PathBuf::from("/c")));
        let e = env(&[("HOME", "/h"), ("CPIFLAME_CACHE_DIR", "")]);
        assert_eq!(e.dwarf_cache, None);
        assert!(env(&[("CPIFLAME_THREADS", " 1 ")]).single_threaded);
        assert!(!env(&[("CPIFLAME_THREADS", "2")]).single_threaded);
        assert!(env(&[("CI", "true")]).ci);
        assert!(env(&[("CI", "1")]).ci);
        for off in ["", "0", "false"] {
            assert!(!env(&[("CI", off)]).ci);
        }
    }
}

/// A `--confidence` value that is not a probability strictly between 0 and 1.
#[derive(Debug, thiserror::Error)]
#[error("--confidence {0}: expected a probability between 0 and 1, e.g. 0.95")]
pub struct BadConfidence(pub String);

/// Parses `--confidence` (`0.95`; `95%` too): the confidence of every interval and of the
/// `diff` gate's test.
pub fn parse_confidence(text: &str) -> Result<f64, BadConfidence> {
    let bad = || BadConfidence(text.to_string());
    let value = match text.trim().strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map_err(|_| bad())? / 100.0,
        None => text.trim().parse::<f64>().map_err(|_| bad())?,
    };
    if value > 0.0 && value < 1.0 {
        Ok(value)
    } else {
        Err(bad())
    }
}

#[cfg(test)]
mod confidence_tests {
    use super::parse_confidence;

    #[test]
    fn confidences_are_probabilities_strictly_between_0_and_1() {
        assert_eq!(parse_confidence("0.95").unwrap(), 0.95);
        assert_eq!(parse_confidence("99%").unwrap(), 0.99);
        for bad in ["0", "1", "95", "-0.5", "x", "", "NaN", "100%"] {
            let e = parse_confidence(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--confidence {bad}:")), "{e}");
        }
    }
}
