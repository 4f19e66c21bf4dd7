//! Finding a source file DWARF names, as `perf annotate` does: `--prefix-strip N` drops the
//! path's first N directories, `--prefix DIR` is put before what is left, and `--source-dir`
//! is one more place to look (the path under it, then its file name there).

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Where source files are looked for.
#[derive(Clone, Debug, Default)]
pub struct SourcePaths {
    /// Put before each path (after `prefix_strip`).
    pub prefix: Option<PathBuf>,
    /// Leading directories dropped from each path.
    pub prefix_strip: usize,
    /// Another directory to look in.
    pub source_dir: Option<PathBuf>,
}

impl SourcePaths {
    pub fn new(source_dir: Option<PathBuf>, prefix: Option<PathBuf>, prefix_strip: usize) -> Self {
        SourcePaths {
            prefix,
            prefix_strip,
            source_dir,
        }
    }

    /// The paths tried for `file`, in order.
    pub fn candidates(&self, file: &str) -> Vec<PathBuf> {
        let path = Path::new(file);
        // Relative, without the first `prefix_strip` directories.
        let relative: PathBuf = path
            .components()
            .filter(|c| !matches!(c, Component::RootDir | Component::Prefix(_)))
            .skip(self.prefix_strip)
            .collect();
        let mut out = Vec::new();
        match &self.prefix {
            // Joined to the relative form: joining an absolute path would replace the prefix.
            Some(prefix) => out.push(prefix.join(&relative)),
            None if self.prefix_strip == 0 => out.push(path.to_path_buf()),
            None => out.push(relative.clone()),
        }
        if let Some(dir) = &self.source_dir {
            out.push(dir.join(&relative));
            if let Some(name) = path.file_name() {
                out.push(dir.join(name));
            }
        }
        out
    }
}

/// Source files read so far, as lines; `None` for a file not found.
#[derive(Default)]
pub(crate) struct Cache {
    files: HashMap<String, Option<Vec<String>>>,
}

impl Cache {
    /// Line `line` (from 1) of `file`, when the file is found and has it.
    pub(crate) fn line(&mut self, paths: &SourcePaths, file: &str, line: u32) -> Option<String> {
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            paths.candidates(file).iter().find_map(|p| {
                let text = std::fs::read(p).ok()?;
                Some(
                    String::from_utf8_lossy(&text)
                        .lines()
                        .map(str::to_string)
                        .collect(),
                )
            })
        });
        let index = usize::try_from(line).ok()?.checked_sub(1)?;
        lines.as_ref()?.get(index).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_strip_drops_leading_directories_and_prefix_goes_before() {
        let paths = SourcePaths {
            prefix: Some("/src".into()),
            prefix_strip: 2,
            source_dir: Some("/extra".into()),
        };
        assert_eq!(
            paths.candidates("/build/x/lib/a.c"),
            [
                PathBuf::from("/src/lib/a.c"),
                PathBuf::from("/extra/lib/a.c"),
                PathBuf::from("/extra/a.c"),
            ]
        );
        assert_eq!(
            SourcePaths::default().candidates("/abs/a.c"),
            [PathBuf::from("/abs/a.c")]
        );
        // perf's --prefix goes before an absolute path too.
        let prefix = SourcePaths {
            prefix: Some("/src".into()),
            ..SourcePaths::default()
        };
        assert_eq!(
            prefix.candidates("/abs/a.c"),
            [PathBuf::from("/src/abs/a.c")]
        );
    }

    #[test]
    fn a_line_of_a_found_file_and_none_past_its_end_or_for_a_missing_file() {
        let dir = cpiflame_testkit::Dir::new("annotate-source");
        std::fs::write(dir.path("a.c"), "one\ntwo\n").unwrap();
        let paths = SourcePaths {
            source_dir: Some(dir.root().to_path_buf()),
            ..SourcePaths::default()
        };
        let mut cache = Cache::default();
        assert_eq!(
            cache.line(&paths, "/nowhere/a.c", 2).as_deref(),
            Some("two")
        );
        assert_eq!(cache.line(&paths, "/nowhere/a.c", 3), None);
        assert_eq!(cache.line(&paths, "/nowhere/b.c", 1), None);
    }
}
