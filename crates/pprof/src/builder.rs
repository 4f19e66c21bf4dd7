//! Building a [`Profile`]: strings, functions and mappings interned, ids from 1 as pprof
//! wants them (0 means "none").

use std::collections::HashMap;

use crate::proto::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};

/// A mapping to add: what pprof's `Mapping` holds, strings as text.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MappingSpec {
    pub start: u64,
    pub limit: u64,
    pub file_offset: u64,
    pub filename: String,
    /// Hex text, as perf and pprof show build ids.
    pub build_id: String,
    /// Whether its frames were named (pprof leaves named mappings alone).
    pub named: bool,
    /// Whether file names and lines were looked up in DWARF.
    pub lines: bool,
}

/// One frame of a location: function name, its source file and the line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FrameSpec {
    pub name: String,
    pub filename: String,
    pub line: i64,
}

/// A sample label: text or a number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabelValue {
    Str(String),
    Num(i64),
}

/// Builds a profile; [`Builder::finish`] returns it.
pub struct Builder {
    profile: Profile,
    strings: HashMap<String, i64>,
    functions: HashMap<(String, String), u64>,
    mappings: HashMap<MappingSpec, u64>,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    pub fn new() -> Builder {
        let mut b = Builder {
            profile: Profile::default(),
            strings: HashMap::new(),
            functions: HashMap::new(),
            mappings: HashMap::new(),
        };
        b.string("");
        b
    }

    /// The string table index of `s`, added if new.
    pub fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.profile.string_table.len() as i64;
        self.profile.string_table.push(s.to_string());
        self.strings.insert(s.to_string(), i);
        i
    }

    /// Adds a sample type (`type`, `unit`); values of samples follow their order.
    pub fn sample_type(&mut self, type_: &str, unit: &str) {
        let value_type = ValueType {
            r#type: self.string(type_),
            unit: self.string(unit),
        };
        self.profile.sample_type.push(value_type);
    }

    /// Sets the default sample type by name, and the period.
    pub fn period(&mut self, type_: &str, unit: &str, period: i64) {
        self.profile.period_type = Some(ValueType {
            r#type: self.string(type_),
            unit: self.string(unit),
        });
        self.profile.period = period;
    }

    pub fn default_sample_type(&mut self, type_: &str) {
        self.profile.default_sample_type = self.string(type_);
    }

    pub fn comment(&mut self, text: &str) {
        let i = self.string(text);
        self.profile.comment.push(i);
    }

    pub fn times(&mut self, time_nanos: i64, duration_nanos: i64) {
        self.profile.time_nanos = time_nanos;
        self.profile.duration_nanos = duration_nanos;
    }

    /// The id of the mapping `spec`, added if new.
    pub fn mapping(&mut self, spec: &MappingSpec) -> u64 {
        if let Some(&id) = self.mappings.get(spec) {
            return id;
        }
        let id = self.profile.mapping.len() as u64 + 1;
        let mapping = Mapping {
            id,
            memory_start: spec.start,
            memory_limit: spec.limit,
            file_offset: spec.file_offset,
            filename: self.string(&spec.filename),
            build_id: self.string(&spec.build_id),
            has_functions: spec.named,
            has_filenames: spec.lines,
            has_line_numbers: spec.lines,
            has_inline_frames: spec.lines,
        };
        self.profile.mapping.push(mapping);
        self.mappings.insert(spec.clone(), id);
        id
    }

    /// The id of the function `name` defined in `filename`, added if new.
    pub fn function(&mut self, name: &str, filename: &str) -> u64 {
        let key = (name.to_string(), filename.to_string());
        if let Some(&id) = self.functions.get(&key) {
            return id;
        }
        let id = self.profile.function.len() as u64 + 1;
        let function = Function {
            id,
            name: self.string(name),
            system_name: self.string(name),
            filename: self.string(filename),
            start_line: 0,
        };
        self.profile.function.push(function);
        self.functions.insert(key, id);
        id
    }

    /// Adds a location at `address` of mapping `mapping_id` (0: none) with `frames`,
    /// innermost first; returns its id. Locations are not merged: callers key them.
    pub fn location(&mut self, mapping_id: u64, address: u64, frames: &[FrameSpec]) -> u64 {
        let id = self.profile.location.len() as u64 + 1;
        let line = frames
            .iter()
            .map(|f| Line {
                function_id: self.function(&f.name, &f.filename),
                line: f.line,
            })
            .collect();
        self.profile.location.push(Location {
            id,
            mapping_id,
            address,
            line,
            is_folded: false,
        });
        id
    }

    /// Adds a sample: `locations` leaf first, one value per sample type.
    pub fn sample(&mut self, locations: Vec<u64>, values: Vec<i64>, labels: &[(&str, LabelValue)]) {
        let label = labels
            .iter()
            .map(|(key, value)| {
                let key = self.string(key);
                match value {
                    LabelValue::Str(s) => Label {
                        key,
                        str: self.string(s),
                        ..Default::default()
                    },
                    LabelValue::Num(n) => Label {
                        key,
                        num: *n,
                        ..Default::default()
                    },
                }
            })
            .collect();
        self.profile.sample.push(Sample {
            location_id: locations,
            value: values,
            label,
        });
    }

    pub fn finish(self) -> Profile {
        self.profile
    }
}

/// `bytes` as lowercase hex (build ids).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
