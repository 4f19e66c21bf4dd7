//! Several recordings read as one (`render a.data b.data`, or a folder of them: the files of
//! a long recording cut into pieces): each file is read on its own, as `load_any` reads it,
//! and the profiles are added up. Frames are matched by (name, module, kind) and columns by
//! event name; the first file's columns come first, so its roles (the stall, cycles and
//! instructions columns) stand for the whole. Source lines are kept when every file has them.
//! Top-down fractions need the same formulas in every file (the same set over the same
//! columns): else there are none, with a warning naming two files and their sets, or an
//! error when `--topdown-cpu` was given.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cpiflame_perf_data::ErrorKind;
use cpiflame_profile::lines::{LinedStack, NO_LINE};
use cpiflame_profile::topdown::{tma_role_of, FormulaSet};
use cpiflame_profile::{Count, EventColumn, FrameId, PairMoments, SourceLines, WallColumns};

use crate::load::{load_any, Loaded};
use crate::load_options::{LoadError, LoadOptions};

/// The files `paths` name: a folder stands for its regular files, in name order; an empty
/// folder is an error naming it.
pub fn input_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, LoadError> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let io = |source| LoadError::Io {
            path: path.clone(),
            source,
        };
        let mut inside: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        if inside.is_empty() {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "a folder with no files to read",
            )));
        }
        inside.sort();
        files.extend(inside);
    }
    Ok(files)
}

/// Reads every file of `paths` (see [`input_files`]) with `options` and adds them up; one
/// file reads as [`load_any`] reads it.
pub fn load_all(
    options: &LoadOptions,
    paths: &[PathBuf],
    warnings: &mut Vec<String>,
) -> Result<Loaded, LoadError> {
    let files = input_files(paths)?;
    let read = |file: &Path, warnings: &mut Vec<String>| {
        let options = LoadOptions {
            file: file.to_path_buf(),
            ..options.clone()
        };
        load_any(&options, warnings)
    };
    let Some((first, rest)) = files.split_first() else {
        return read(&options.file, warnings);
    };
    if rest.is_empty() {
        return read(first, warnings);
    }
    // Of several files, one with no sample (the last of a `--switch-output` run may hold
    // none; `--time` may select none of a file) is left out, said in a warning; only when
    // every file is empty is that the error.
    let mut all: Option<Loaded> = None;
    let mut empty: Vec<LoadError> = Vec::new();
    // Files that end before their records start: one a recorder has just created (the next
    // file of `record --switch-output`); left out the same way.
    let mut unstarted: Vec<LoadError> = Vec::new();
    // Files of a folder removed since it was listed (`--max-files`, a rename).
    let mut gone: Vec<LoadError> = Vec::new();
    // The first file's top-down formulas, and why the files have none together.
    let mut formulas: Option<Formulas> = None;
    let mut mixed: Option<String> = None;
    for file in &files {
        match read(file, warnings) {
            Ok(next) => {
                let theirs = Formulas::of(&next);
                match &formulas {
                    Some(mine) if mixed.is_none() && *mine != theirs => {
                        let why = mine.clash(&theirs);
                        if options.topdown_cpu.is_some() {
                            return Err(LoadError::Topdown {
                                file: file.clone(),
                                reason: format!("--topdown-cpu: {why}"),
                            });
                        }
                        warnings.push(format!("{why}: no top-down breakdown of them together"));
                        mixed = Some(why);
                    }
                    Some(_) => {}
                    None => formulas = Some(theirs),
                }
                match all.as_mut() {
                    Some(all) => all.add(next),
                    None => all = Some(next),
                }
            }
            Err(e) if is_empty(&e) => empty.push(e),
            Err(e) if is_unstarted(&e, file) => unstarted.push(e),
            Err(e) if is_gone(&e) && !paths.contains(file) => gone.push(e),
            Err(e) => return Err(e),
        }
    }
    let Some(mut all) = all else {
        return match empty.into_iter().chain(unstarted).chain(gone).next() {
            Some(e) => Err(e),
            None => read(first, warnings),
        };
    };
    warnings.extend(empty.iter().map(|e| format!("{e}: left out")));
    warnings.extend(
        unstarted
            .iter()
            .map(|e| format!("{e}: left out (a file a recorder has just started?)")),
    );
    warnings.extend(
        gone.iter()
            .map(|e| format!("{e}: left out (gone since the folder was listed)")),
    );
    if !options.on_cpu_only {
        all.wall = WallColumns::of(&all.profile);
    }
    all.profile.sort();
    all.notes.push(format!("{} files", files.len()).into());
    if let Some(why) = mixed {
        // The first file's plan would read the others' columns by its own names.
        all.topdown = None;
        all.notes
            .push(format!("no top-down breakdown: {why}").into());
        all.topdown_why = Some(why);
    }
    Ok(all)
}

/// A recording's top-down formula set in words, with why it is not perf's exact one where it
/// is not, or why it has none (`why`, [`Loaded::topdown_why`]): for the warnings of merged
/// reads and comparisons.
pub(crate) fn set_text(set: Option<FormulaSet>, why: Option<&str>) -> String {
    match set {
        None => match why {
            Some(why) => format!("no top-down formulas ({why})"),
            None => "no top-down events".to_string(),
        },
        Some(set) => match set.approximation() {
            Some(why) => format!("{} ({why})", set.name()),
            None => set.name(),
        },
    }
}

/// A file's top-down formulas as a merged read compares them: its formula set and the
/// names of its top-down columns. Files that agree on both add up under the first file's
/// plan: the merged columns are matched by name, the first file's first, so its plan's
/// columns stay where they were.
struct Formulas {
    file: PathBuf,
    set: Option<FormulaSet>,
    columns: Vec<String>,
    why: Option<String>,
}

/// The file aside.
impl PartialEq for Formulas {
    fn eq(&self, other: &Formulas) -> bool {
        self.set == other.set && self.columns == other.columns
    }
}

impl Formulas {
    fn of(l: &Loaded) -> Formulas {
        let set = l.topdown.as_ref().map(|p| p.set);
        let columns = match set {
            Some(_) => l
                .profile
                .events
                .iter()
                .filter(|e| tma_role_of(&e.name).is_some())
                .map(|e| e.name.clone())
                .collect(),
            None => Vec::new(),
        };
        Formulas {
            file: l.file.clone(),
            set,
            columns,
            why: l.topdown_why.clone(),
        }
    }

    /// `a.data has <set>, b.data <set>`: the two files and what each has.
    fn clash(&self, other: &Formulas) -> String {
        let same_set = self.set == other.set;
        let what = |f: &Formulas| {
            let set = set_text(f.set, f.why.as_deref());
            match f.set {
                Some(_) if same_set => format!("{set} over {}", f.columns.join(" ")),
                _ => set,
            }
        };
        format!(
            "{} has {}, {} {}",
            self.file.display(),
            what(self),
            other.file.display(),
            what(other)
        )
    }
}

/// Whether `e` says a file holds no sample (at all, or in the `--time` ranges).
fn is_empty(e: &LoadError) -> bool {
    match e {
        LoadError::NoSamples { .. } => true,
        LoadError::Time(t) => matches!(**t, crate::time::TimeError::NothingIn(_)),
        _ => false,
    }
}

/// Whether `e` says the perf.data file `file` ends before its first record: shorter than
/// the file header, or with a header saying data size 0 (a recording in progress) and
/// ending before its data section. A recorder that has just created a file has written no
/// more yet; a finished file cut short says its data size, and stays an error.
fn is_unstarted(e: &LoadError, file: &Path) -> bool {
    let LoadError::PerfData(e) = e else {
        return false;
    };
    match &e.kind {
        ErrorKind::Truncated { what, .. } => *what == "file header",
        ErrorKind::SectionOutsideFile { what, .. } => {
            (what == "attrs" || what == "data" || what.starts_with("ids of event"))
                && header_data_size(file) == Some(0)
        }
        _ => false,
    }
}

/// The data size a perf.data file's header gives (0 in either byte order).
fn header_data_size(file: &Path) -> Option<u64> {
    use std::io::Read;
    let mut header = [0u8; 56];
    std::fs::File::open(file)
        .ok()?
        .read_exact(&mut header)
        .ok()?;
    // `struct perf_file_header`: magic, size, attr_size, attrs (offset, size), data
    // (offset, size).
    Some(u64::from_ne_bytes(header[48..56].try_into().ok()?))
}

/// Whether `e` says the file is not there (any more).
fn is_gone(e: &LoadError) -> bool {
    let source = match e {
        LoadError::Io { source, .. } => source,
        LoadError::PerfData(r) => match &r.kind {
            ErrorKind::Io(source) => source,
            _ => return false,
        },
        _ => return false,
    };
    source.kind() == std::io::ErrorKind::NotFound
}

impl Loaded {
    /// Adds `other`'s stacks (and source lines) to this recording's.
    fn add(&mut self, other: Loaded) {
        self.counts |= other.counts;
        // Columns by name; new ones after this recording's.
        let columns: Vec<usize> = other
            .profile
            .events
            .iter()
            .map(
                |e| match self.profile.events.iter().position(|c| c.name == e.name) {
                    Some(i) => i,
                    None => {
                        self.profile.events.push(EventColumn {
                            name: e.name.clone(),
                        });
                        for stack in &mut self.profile.stacks {
                            stack.counts.push(Count::default());
                        }
                        if let Some(lines) = self.lines.as_mut().map(Arc::make_mut) {
                            for stack in &mut lines.stacks {
                                stack.counts.push(Count::default());
                            }
                        }
                        self.profile.events.len() - 1
                    }
                },
            )
            .collect();
        let frames: Vec<FrameId> = other
            .profile
            .frames
            .iter()
            .map(|f| self.profile.intern(f.clone()))
            .collect();
        let mut stack: Vec<FrameId> = Vec::new();
        for s in &other.profile.stacks {
            stack.clear();
            stack.extend(s.frames.iter().map(|&f| frames[f as usize]));
            for (j, &count) in s.counts.iter().enumerate() {
                if count.samples > 0 || count.period > 0 {
                    self.profile.add(&stack, columns[j], count);
                }
            }
            for p in &s.paired {
                let pair = PairMoments {
                    a: columns[p.a],
                    b: columns[p.b],
                    moments: p.moments,
                };
                self.profile.add_paired(&stack, pair);
            }
        }
        self.lines = match (self.lines.take(), other.lines) {
            (Some(mut mine), Some(theirs)) => {
                let width = self.profile.events.len();
                add_lines(Arc::make_mut(&mut mine), &theirs, &frames, &columns, width);
                Some(mine)
            }
            // Lines only some files have would rank the others' time as having none.
            _ => None,
        };
    }
}

/// Adds `theirs` to `mine`: frames and columns mapped (`frames`, `columns`), lines interned;
/// counts `width` columns wide.
fn add_lines(
    mine: &mut SourceLines,
    theirs: &SourceLines,
    frames: &[FrameId],
    columns: &[usize],
    width: usize,
) {
    let mut ids: HashMap<cpiflame_profile::lines::SourceLine, u32> = mine
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| (l.clone(), i as u32))
        .collect();
    let line_map: Vec<u32> = theirs
        .lines
        .iter()
        .map(|l| {
            *ids.entry(l.clone()).or_insert_with(|| {
                mine.lines.push(l.clone());
                (mine.lines.len() - 1) as u32
            })
        })
        .collect();
    for s in &mut mine.stacks {
        s.counts.resize(width, Count::default());
    }
    for s in &theirs.stacks {
        let mut counts = vec![Count::default(); width];
        for (j, &c) in s.counts.iter().enumerate() {
            counts[columns[j]].add(c);
        }
        mine.stacks.push(LinedStack {
            frames: s.frames.iter().map(|&f| frames[f as usize]).collect(),
            lines: s
                .lines
                .iter()
                .map(|&l| {
                    if l == NO_LINE {
                        NO_LINE
                    } else {
                        line_map[l as usize]
                    }
                })
                .collect(),
            counts,
        });
    }
}
