//! Text input (perf script, folded) to pprof: no addresses, so one location per distinct
//! frame (name, module, kind), and the root frame (the command) as the `thread` label.

use std::collections::HashMap;

use cpiflame_pipeline::Loaded;
use cpiflame_profile::FrameKind;

use crate::builder::{Builder, FrameSpec, LabelValue, MappingSpec};
use crate::proto::Profile;
use crate::{events_type, period_unit, samples_type, value};

/// The profile of a recording read from text (`load_any` of perf script or folded text).
pub fn from_loaded(loaded: &Loaded) -> Profile {
    let profile = &loaded.profile;
    let mut b = Builder::new();
    for event in &profile.events {
        b.sample_type(&samples_type(&event.name), "count");
        b.sample_type(&events_type(&event.name), period_unit(&event.name));
    }
    if let Some(cycles) = loaded.roles.cycles {
        let name = &profile.events[cycles].name;
        b.default_sample_type(&events_type(name));
        b.period(name, period_unit(name), 0);
    }
    let mut locations: HashMap<u32, u64> = HashMap::new();
    for stack in &profile.stacks {
        let mut thread = String::new();
        let mut ids = Vec::with_capacity(stack.frames.len());
        // Leaf first, as pprof wants.
        for &id in stack.frames.iter().rev() {
            let frame = profile.frame(id);
            if frame.kind == FrameKind::Process {
                thread = frame.name.clone();
                continue;
            }
            let location = match locations.get(&id) {
                Some(&l) => l,
                None => {
                    // Modules as mappings without addresses: the file names, for filters.
                    let mapping = if frame.module.is_empty() {
                        0
                    } else {
                        b.mapping(&MappingSpec {
                            filename: frame.module.clone(),
                            named: true,
                            ..MappingSpec::default()
                        })
                    };
                    let l = b.location(
                        mapping,
                        0,
                        &[FrameSpec {
                            name: frame.name.clone(),
                            ..FrameSpec::default()
                        }],
                    );
                    locations.insert(id, l);
                    l
                }
            };
            ids.push(location);
        }
        let values = stack
            .counts
            .iter()
            .flat_map(|c| [value(c.samples), value(c.period)])
            .collect();
        b.sample(ids, values, &[("thread", LabelValue::Str(thread))]);
    }
    b.finish()
}
