//! Hybrid Intel recordings: one generic event opened once per core type (`cpu_core/cycles/`
//! and `cpu_atom/cycles/`, the PMU type in config bits 63:32). Each core type's column
//! counts only what ran on those cores, so the file's cycles are the sum of the two: the
//! columns of one event are merged into one, and the ratio of a colour event to cycles
//! covers only the core types that recorded both (see [`Hybrid::ratio_pmus`]).

use std::collections::BTreeSet;

use cpiflame_events::Roles;
use cpiflame_perf_data::PerfData;
use cpiflame_profile::{Count, EventColumn, Profile};

/// `perf_event_attr.type` of generic hardware and cache events, the ones perf opens per
/// core type with the PMU in the config's upper half.
const TYPE_HARDWARE: u32 = cpiflame_events::abi::attr_type::HARDWARE;
const TYPE_HW_CACHE: u32 = cpiflame_events::abi::attr_type::HW_CACHE;

/// One column of the profile after merging: the event it stands for and the core types
/// (PMU names) it sums, empty for an event that is not per core type.
#[derive(Clone, Debug)]
pub(crate) struct Column {
    pub type_: u32,
    /// The config without the PMU type (generic event number).
    pub config: u64,
    pub name: String,
    pub pmus: BTreeSet<String>,
    /// Columns of the collapsed profile summed into this one.
    members: Vec<usize>,
}

/// The columns of a recording, with the per-core-type ones merged.
#[derive(Clone, Debug)]
pub(crate) struct Hybrid {
    pub columns: Vec<Column>,
    /// The collapsed profile's columns (before merging), for [`Hybrid::add_ratio_column`].
    original: Vec<Column>,
}

impl Hybrid {
    /// The columns of `file`'s events, merging those that are one generic event on several
    /// core types. `names` are the profile's column names (one per attr).
    pub fn of(file: &PerfData, names: &[String]) -> Hybrid {
        let original: Vec<Column> = file
            .attrs
            .iter()
            .zip(names)
            .enumerate()
            .map(|(i, (a, name))| {
                let pmu_type = (a.config >> 32) as u32;
                let hybrid = pmu_type != 0 && matches!(a.type_, TYPE_HARDWARE | TYPE_HW_CACHE);
                // perf names them `PMU/EVENT[:mods]/`; the PMU from the file's mappings, else
                // from the name.
                let pmu = hybrid
                    .then(|| {
                        file.meta
                            .pmus
                            .iter()
                            .find(|(t, _)| *t == pmu_type)
                            .map(|(_, n)| n.clone())
                            .or_else(|| name.split_once('/').map(|(p, _)| p.to_string()))
                    })
                    .flatten();
                let (name, pmus) = match &pmu {
                    Some(p) => (strip_pmu(name, p), BTreeSet::from([p.clone()])),
                    None => (name.clone(), BTreeSet::new()),
                };
                Column {
                    type_: a.type_,
                    config: if hybrid {
                        a.config & 0xffff_ffff
                    } else {
                        a.config
                    },
                    name,
                    pmus,
                    members: vec![i],
                }
            })
            .collect();
        let mut columns: Vec<Column> = Vec::new();
        for c in &original {
            let same = columns.iter_mut().find(|m| {
                !m.pmus.is_empty()
                    && !c.pmus.is_empty()
                    && m.type_ == c.type_
                    && m.config == c.config
                    && m.name == c.name
                    && m.pmus.is_disjoint(&c.pmus)
            });
            match same {
                Some(m) => {
                    m.pmus.extend(c.pmus.iter().cloned());
                    m.members.extend(&c.members);
                }
                None => columns.push(c.clone()),
            }
        }
        Hybrid { columns, original }
    }

    /// The name of each column as [`Hybrid::apply`] gives it (`profile_names`: the collapsed
    /// profile's, one per attr), and for each attr the index of its column.
    pub fn column_names(&self, profile_names: &[String]) -> (Vec<String>, Vec<usize>) {
        let mut column_of = vec![0; self.original.len()];
        let names = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                for &m in &c.members {
                    column_of[m] = i;
                }
                match c.members[..] {
                    [only] => profile_names[only].clone(),
                    _ => column_name(c),
                }
            })
            .collect();
        (names, column_of)
    }

    /// Whether any columns were merged.
    pub fn merged(&self) -> bool {
        self.columns.len() != self.original.len()
    }

    /// Rewrites `profile` (collapsed with one column per attr) to [`Hybrid::columns`].
    pub fn apply(&self, profile: &mut Profile) {
        if !self.merged() {
            return;
        }
        let names: Vec<String> = profile.events.iter().map(|e| e.name.clone()).collect();
        profile.events = self
            .column_names(&names)
            .0
            .into_iter()
            .map(|name| EventColumn { name })
            .collect();
        for stack in &mut profile.stacks {
            stack.counts = self
                .columns
                .iter()
                .map(|c| sum(&stack.counts, &c.members))
                .collect();
        }
    }

    /// The core types that both `cycles` and `colour` (merged column indices) were recorded
    /// on, when that is fewer than `cycles` covers: the colour's ratio must then use the
    /// cycles of those core types only.
    pub fn ratio_pmus(&self, cycles: usize, colour: usize) -> Option<BTreeSet<String>> {
        let p = &self.columns.get(cycles)?.pmus;
        let q = &self.columns.get(colour)?.pmus;
        if p.len() < 2 || q.is_empty() {
            return None;
        }
        let both: BTreeSet<String> = p.intersection(q).cloned().collect();
        (both != *p).then_some(both)
    }

    /// Appends to `profile` (already [`Hybrid::apply`]'d, stacks unchanged) a column of the
    /// `cycles` column's event counted on `pmus` only, and returns its index. `original` is
    /// each stack's counts before merging, in the profile's stack order.
    pub fn add_ratio_column(
        &self,
        profile: &mut Profile,
        original: &[Vec<Count>],
        cycles: usize,
        pmus: &BTreeSet<String>,
    ) -> usize {
        let c = &self.columns[cycles];
        let members = self.ratio_members(cycles, pmus);
        profile.events.push(EventColumn {
            name: format!(
                "{} ({})",
                c.name,
                pmus.iter().cloned().collect::<Vec<_>>().join("+")
            ),
        });
        for (stack, counts) in profile.stacks.iter_mut().zip(original) {
            stack.counts.push(sum(counts, &members));
        }
        profile.events.len() - 1
    }
}

impl Hybrid {
    /// The attrs (columns before merging) whose sum is the ratio column of
    /// [`Hybrid::add_ratio_column`].
    pub fn ratio_members(&self, cycles: usize, pmus: &BTreeSet<String>) -> Vec<usize> {
        self.columns[cycles]
            .members
            .iter()
            .copied()
            .filter(|&m| self.original[m].pmus.is_subset(pmus))
            .collect()
    }

    /// Each merged column's attrs: what [`Hybrid::apply`] sums.
    pub fn members(&self) -> Vec<Vec<usize>> {
        if self.merged() {
            self.columns.iter().map(|c| c.members.clone()).collect()
        } else {
            (0..self.original.len()).map(|a| vec![a]).collect()
        }
    }

    /// The core types of the ratio column `roles` call for, if any: the first colour event
    /// (instructions, then stalls) recorded on fewer core types than the cycles (one ratio
    /// column: both colour events of one recording are on the same core types in practice).
    pub fn ratio_pmus_of(&self, roles: Roles) -> Option<BTreeSet<String>> {
        let cycles = roles.cycles?;
        [roles.instructions, roles.stalls]
            .into_iter()
            .flatten()
            .find_map(|colour| self.ratio_pmus(cycles, colour))
    }
}

/// For each of `file`'s events (attrs), whether its samples count in `loaded`'s ratio
/// cycles column ([`crate::Loaded::ratio_cycles`]: a hybrid recording's cycles on the core
/// types that recorded the colour events); `None` when `loaded` has no such column. For
/// readers that weigh samples themselves (annotate), as the graph divides by that column.
pub fn ratio_cycles_events(file: &PerfData, loaded: &crate::Loaded) -> Option<Vec<bool>> {
    loaded.ratio_cycles?;
    let names = crate::event_names(file);
    let hybrid = Hybrid::of(file, &names);
    let pmus = hybrid.ratio_pmus_of(loaded.roles)?;
    let members = hybrid.ratio_members(loaded.roles.cycles?, &pmus);
    Some(
        (0..file.attrs.len())
            .map(|a| members.contains(&a))
            .collect(),
    )
}

fn sum(counts: &[Count], members: &[usize]) -> Count {
    let mut total = Count::default();
    for &m in members {
        if let Some(&c) = counts.get(m) {
            total.add(c);
        }
    }
    total
}

/// `cpu_core/cycles:ppp/` → `cycles:ppp`; other names are kept.
fn strip_pmu(name: &str, pmu: &str) -> String {
    name.strip_prefix(pmu)
        .and_then(|r| r.strip_prefix('/'))
        .map(|r| r.strip_suffix('/').unwrap_or(r).to_string())
        .unwrap_or_else(|| name.to_string())
}

/// A merged column is named by its event and the core types it sums: `cycles:ppp
/// (cpu_atom+cpu_core)`.
fn column_name(c: &Column) -> String {
    format!(
        "{} ({})",
        c.name,
        c.pmus.iter().cloned().collect::<Vec<_>>().join("+")
    )
}

/// The event columns `fold` and `render` give `file`: one generic event opened per core type
/// is one column. Their names, and for each of the file's events (attrs) its column.
pub fn event_columns(file: &PerfData) -> (Vec<String>, Vec<usize>) {
    let names = crate::event_names(file);
    Hybrid::of(file, &names).column_names(&names)
}
