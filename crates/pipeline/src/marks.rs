//! What `cpiflame record` says about a recording beyond perf's own fields, and how readers
//! find it again. The notes travel in the file's command line (the CMDLINE feature), which
//! perf keeps and prints (`perf report --header`) and no other tool interprets, so the file
//! stays plain perf.data.

use cpiflame_events::Roles;

/// Added when the recorder fell back to cpu-clock for want of a PMU, so `render` can say so
/// on the graph.
const NO_PMU: &str = "[cpiflame: no hardware PMU, cpu-clock only]";

const ROLES_PREFIX: &str = "[cpiflame roles: stalls=";

/// The notes of one recording.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordingMarks {
    /// Recorded with cpu-clock alone because no hardware stall/cycles pair opened.
    pub no_pmu: bool,
    /// The stalls and cycles event names chosen with `--stalls`/`--cycles` at record time
    /// (both or neither; instructions are never noted); readers use them unless their own
    /// flags say otherwise.
    pub roles: Roles<String>,
}

impl RecordingMarks {
    /// The words `cpiflame record` adds to the command line it keeps for a plan that fell
    /// back to cpu-clock (`no_pmu`) or chose `roles` by flags.
    pub fn words_for(no_pmu: bool, roles: &Roles<String>) -> Vec<String> {
        let roles = roles.clone();
        RecordingMarks { no_pmu, roles }.to_words()
    }

    /// The command-line words that carry these notes.
    pub fn to_words(&self) -> Vec<String> {
        let mut words = Vec::new();
        if self.no_pmu {
            words.push(NO_PMU.to_string());
        }
        if let Roles {
            stalls: Some(stalls),
            cycles: Some(cycles),
            ..
        } = &self.roles
        {
            words.push(format!("{ROLES_PREFIX}{stalls} cycles={cycles}]"));
        }
        words
    }

    /// The notes found in a recording's command line (none for perf's files).
    pub fn from_cmdline(cmdline: &[String]) -> RecordingMarks {
        let roles = cmdline.iter().rev().find_map(|word| {
            let mark = word.strip_prefix(ROLES_PREFIX)?.strip_suffix(']')?;
            let (stalls, cycles) = mark.split_once(" cycles=")?;
            Some(Roles {
                stalls: Some(stalls.to_string()),
                cycles: Some(cycles.to_string()),
                instructions: None,
            })
        });
        RecordingMarks {
            no_pmu: cmdline.iter().any(|word| word == NO_PMU),
            roles: roles.unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_read_back_from_a_command_line() {
        let marks = RecordingMarks {
            no_pmu: true,
            roles: Roles {
                stalls: Some("task-clock".into()),
                cycles: Some("cpu-clock:u".into()),
                instructions: None,
            },
        };
        let mut cmdline = vec!["cpiflame".to_string(), "record".to_string()];
        cmdline.extend(marks.to_words());
        assert_eq!(RecordingMarks::from_cmdline(&cmdline), marks);
        let perf = ["perf".to_string(), "record".to_string(), "-g".to_string()];
        assert_eq!(
            RecordingMarks::from_cmdline(&perf),
            RecordingMarks::default()
        );
    }
}
