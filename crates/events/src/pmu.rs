//! The PMUs of a machine (`/sys/bus/event_source/devices`): names, attr.type numbers and
//! event aliases, as `sysfs` reads them or a saved machine description gives them.
//!
//! It must never read a file: the readers are in `sysfs`, which builds on this.

/// The number in a sysfs `type` file (`"4\n"`).
pub fn parse_pmu_type(text: &str) -> Option<u32> {
    text.trim().parse().ok()
}

/// One PMU under `/sys/bus/event_source/devices`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pmu {
    pub name: String,
    /// Its attr.type, when the `type` file was readable.
    pub type_: Option<u32>,
    /// The names of its `events/` aliases, sorted (`stall_backend`, `mem-loads`, ...). On
    /// ARM the kernel shows an alias only for an event the core implements (its PMCEID
    /// bits, `armv8pmu_event_attr_is_visible` in drivers/perf/arm_pmuv3.c), so an alias is
    /// the way to know a raw event number counts something there.
    pub events: Vec<String>,
}

/// The PMUs of a machine, sorted by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pmus {
    pub(crate) pmus: Vec<Pmu>,
}

impl Pmus {
    /// From (directory name, `type` file text) pairs.
    pub fn from_entries<I, S>(entries: I) -> Pmus
    where
        I: IntoIterator<Item = (S, Option<S>)>,
        S: AsRef<str>,
    {
        let mut pmus: Vec<Pmu> = entries
            .into_iter()
            .map(|(name, type_text)| Pmu {
                name: name.as_ref().to_string(),
                type_: type_text.and_then(|t| parse_pmu_type(t.as_ref())),
                events: Vec::new(),
            })
            .collect();
        pmus.sort_by(|a, b| a.name.cmp(&b.name));
        pmus.dedup_by(|a, b| a.name == b.name);
        Pmus { pmus }
    }

    /// The same PMUs, with `name`'s event aliases set to `events`.
    pub fn with_events(mut self, name: &str, events: &[&str]) -> Pmus {
        if let Some(p) = self.pmus.iter_mut().find(|p| p.name == name) {
            p.events = events.iter().map(|e| e.to_string()).collect();
            p.events.sort();
        }
        self
    }

    /// Whether PMU `name` has the event alias `event` (`events/<event>` in sysfs).
    pub fn has_event(&self, name: &str, event: &str) -> bool {
        self.get(name)
            .is_some_and(|p| p.events.iter().any(|e| e == event))
    }

    pub fn list(&self) -> &[Pmu] {
        &self.pmus
    }

    pub fn get(&self, name: &str) -> Option<&Pmu> {
        self.pmus.iter().find(|p| p.name == name)
    }

    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// attr.type of `name`.
    pub fn type_of(&self, name: &str) -> Option<u32> {
        self.get(name).and_then(|p| p.type_)
    }

    /// The x86 core PMU (`cpu`; absent in most VMs).
    pub fn has_cpu(&self) -> bool {
        self.has("cpu")
    }

    /// Hybrid Intel: `cpu_core` (P-cores).
    pub fn has_cpu_core(&self) -> bool {
        self.has("cpu_core")
    }

    /// Hybrid Intel: `cpu_atom` (E-cores).
    pub fn has_cpu_atom(&self) -> bool {
        self.has("cpu_atom")
    }

    pub fn is_hybrid_intel(&self) -> bool {
        self.has_cpu_core() || self.has_cpu_atom() || self.has("cpu_lowpower")
    }

    /// ARM core PMUs (`armv8_pmuv3_0`, `armv8_cortex_a53`, `armv8_neoverse_n1`, and on
    /// device-tree Armv9 systems `armv9_cortex_a710`, `armv9_neoverse_n2`, ...: the names
    /// drivers/perf/arm_pmuv3.c gives its `armv8_*`/`armv9_*` PMUs).
    pub fn arm_pmus(&self) -> Vec<&Pmu> {
        self.pmus
            .iter()
            .filter(|p| p.name.starts_with("armv8_") || p.name.starts_with("armv9_"))
            .collect()
    }

    /// The PMU core events are named on: `cpu_core`, else `cpu`, else the first `armv8_*`.
    pub fn core_pmu(&self) -> Option<&Pmu> {
        self.get("cpu_core")
            .or_else(|| self.get("cpu"))
            .or_else(|| self.arm_pmus().into_iter().next())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pmus_from_entries() {
        let pmus = Pmus::from_entries([
            ("software", Some("1\n")),
            ("cpu_core", Some("4\n")),
            ("cpu_atom", Some("10\n")),
            ("tracepoint", Some("2\n")),
            ("broken", Some("x")),
            ("notype", None),
        ]);
        let names: Vec<&str> = pmus.list().iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "broken",
                "cpu_atom",
                "cpu_core",
                "notype",
                "software",
                "tracepoint"
            ]
        );
        assert_eq!(pmus.type_of("cpu_core"), Some(4));
        assert_eq!(pmus.type_of("cpu_atom"), Some(10));
        assert_eq!(pmus.type_of("broken"), None);
        assert!(pmus.has("notype") && !pmus.has_cpu());
        assert!(pmus.has_cpu_core() && pmus.has_cpu_atom() && pmus.is_hybrid_intel());
        assert_eq!(pmus.core_pmu().map(|p| p.name.as_str()), Some("cpu_core"));
        let arm = Pmus::from_entries([
            ("armv8_cortex_a76", Some("9")),
            ("armv8_cortex_a55", Some("8")),
            ("software", Some("1")),
        ]);
        let names: Vec<&str> = arm.arm_pmus().iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["armv8_cortex_a55", "armv8_cortex_a76"]);
        assert_eq!(arm.core_pmu().unwrap().type_, Some(8));
        assert!(Pmus::default().core_pmu().is_none());
    }
}
