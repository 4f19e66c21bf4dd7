//! `record --jit`: what each JIT runtime needs in its environment to write what names (and
//! unwinds) its code: a JIT dump (`jit-PID.dump`: code, names, source lines, unwind tables)
//! or a perf map (`/tmp/perf-PID.map`: names). The recorded command gets the variables
//! below, each appended to the user's value or left as the user set it, never replaced:
//!
//! - CPython 3.13: `PYTHON_PERF_JIT_SUPPORT=1` (`-X perf_jit`: a JIT dump with unwind
//!   tables); 3.12: `PYTHONPERFSUPPORT=1` (`-X perf`: a perf map). 3.13 takes the JIT dump
//!   when both are set (`config_init_perf_profiling`: the later variable wins).
//! - Node (V8): `NODE_OPTIONS` with `--perf-prof --perf-prof-unwinding-info
//!   --interpreted-frames-native-stack` (a JIT dump in the current directory, with unwind
//!   tables, and interpreted frames as native ones); V8 allows all three in `NODE_OPTIONS`.
//! - .NET: `DOTNET_PerfMapEnabled=1` (a perf map and a JIT dump in /tmp).
//! - Java (HotSpot): `JAVA_TOOL_OPTIONS` with `-XX:+PreserveFramePointer`, and on JDK 17
//!   and later `-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit` (a perf map written
//!   as the JVM exits). An older JVM refuses an option it does not know and would not
//!   start, so the perf map is asked for only when the JDK the command runs is found to be
//!   17 or later (its `release` file).
//!
//! It must never read the environment itself (the binary hands it the values) nor start
//! anything.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The variables `--jit` reads: those it sets or appends to, and where it looks for a JDK.
pub const READS: [&str; 7] = [
    PYTHON_JIT,
    PYTHON_MAP,
    NODE_OPTIONS,
    DOTNET,
    JAVA_OPTIONS,
    "JAVA_HOME",
    "PATH",
];

const PYTHON_JIT: &str = "PYTHON_PERF_JIT_SUPPORT";
const PYTHON_MAP: &str = "PYTHONPERFSUPPORT";
const NODE_OPTIONS: &str = "NODE_OPTIONS";
const DOTNET: &str = "DOTNET_PerfMapEnabled";
const JAVA_OPTIONS: &str = "JAVA_TOOL_OPTIONS";

/// What node gets in `NODE_OPTIONS`.
pub const NODE_FLAGS: [&str; 3] = [
    "--perf-prof",
    "--perf-prof-unwinding-info",
    "--interpreted-frames-native-stack",
];

/// What every JVM gets in `JAVA_TOOL_OPTIONS`.
const JAVA_FRAME_POINTERS: &str = "-XX:+PreserveFramePointer";
/// What a JDK 17 or later gets besides: a perf map at exit.
const JAVA_PERF_MAP: [&str; 2] = ["-XX:+UnlockDiagnosticVMOptions", "-XX:+DumpPerfMapAtExit"];

/// The values of [`READS`] in the recorder's environment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JitVars {
    values: Vec<(&'static str, OsString)>,
}

impl JitVars {
    /// The variables as `var` gives them (a name to its value, if set).
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> JitVars {
        JitVars {
            values: READS
                .iter()
                .filter_map(|&name| Some((name, var(name)?)))
                .collect(),
        }
    }

    fn get(&self, name: &str) -> Option<&OsStr> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_os_str())
    }
}

/// A JDK: its home and major version (from its `release` file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jdk {
    pub home: PathBuf,
    pub major: u32,
}

/// The JDK the command would run: `argv[0]` when it is a `java` launcher, else
/// `$JAVA_HOME`'s, else the `java` on `PATH`; its home is the folder above the launcher's
/// `bin`, symlinks resolved (`/usr/bin/java` is Debian's alternatives link to a JDK).
pub fn find_jdk(command: &[OsString], vars: &JitVars) -> Option<Jdk> {
    let path = vars.get("PATH");
    let launcher = |name: &OsStr| -> Option<PathBuf> {
        let name = Path::new(name);
        if name.as_os_str().as_bytes().contains(&b'/') {
            return Some(name.to_path_buf());
        }
        std::env::split_paths(path?)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    };
    let home_of = |launcher: PathBuf| -> Option<PathBuf> {
        let real = std::fs::canonicalize(launcher).ok()?;
        Some(real.parent()?.parent()?.to_path_buf())
    };
    let from_command = command
        .first()
        .filter(|a| Path::new(a).file_name() == Some(OsStr::new("java")))
        .and_then(|a| launcher(a))
        .and_then(home_of);
    let home = from_command
        .or_else(|| vars.get("JAVA_HOME").map(PathBuf::from))
        .or_else(|| launcher(OsStr::new("java")).and_then(home_of))?;
    let release = std::fs::read_to_string(home.join("release")).ok()?;
    Some(Jdk {
        major: release_major(&release)?,
        home,
    })
}

/// The major version of a JDK `release` file's `JAVA_VERSION="17.0.15"` (`"1.8.0_392"`:
/// 8).
fn release_major(release: &str) -> Option<u32> {
    let version = release.lines().find_map(|l| {
        l.strip_prefix("JAVA_VERSION=")
            .map(|v| v.trim().trim_matches('"'))
    })?;
    let mut parts = version.split(['.', '_', '-', '+']);
    let first: u32 = parts.next()?.parse().ok()?;
    match first {
        1 => parts.next()?.parse().ok(),
        n => Some(n),
    }
}

/// What `--jit` gives the command: the variables to set (with their whole new values), and
/// the line that tells the user.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JitEnv {
    pub vars: Vec<(OsString, OsString)>,
    pub line: String,
}

/// The variables for a command run in `vars`, with `jdk` the JDK it would run (if any).
pub fn jit_env(vars: &JitVars, jdk: Option<&Jdk>) -> JitEnv {
    let mut env = JitEnv::default();
    let mut said = Vec::new();
    let mut kept = Vec::new();
    for name in [PYTHON_JIT, PYTHON_MAP, DOTNET] {
        match vars.get(name) {
            Some(value) => kept.push(format!("{name}={}", value.to_string_lossy())),
            None => {
                env.vars.push((name.into(), "1".into()));
                said.push(format!("{name}=1"));
            }
        }
    }
    let java: Vec<&str> = match jdk {
        Some(j) if j.major >= 17 => [JAVA_FRAME_POINTERS]
            .into_iter()
            .chain(JAVA_PERF_MAP)
            .collect(),
        _ => vec![JAVA_FRAME_POINTERS],
    };
    for (name, flags) in [(NODE_OPTIONS, &NODE_FLAGS[..]), (JAVA_OPTIONS, &java[..])] {
        let user = vars.get(name).map(OsStr::to_string_lossy);
        let user = user.as_deref().unwrap_or("");
        let added: Vec<&str> = flags
            .iter()
            .copied()
            .filter(|flag| !user.split_whitespace().any(|w| same_option(w, flag)))
            .collect();
        if added.is_empty() {
            kept.push(format!("{name}=\"{user}\""));
            continue;
        }
        let value = user
            .split_whitespace()
            .chain(added.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        env.vars.push((name.into(), value.into()));
        said.push(format!("{name}+=\"{}\"", added.join(" ")));
    }
    let jdk_note = match jdk {
        Some(j) if j.major >= 17 => format!(
            " (JDK {} at {}: a perf map at exit)",
            j.major,
            j.home.display()
        ),
        Some(j) => format!(
            " (JDK {} at {}: no perf map before JDK 17; frame pointers only)",
            j.major,
            j.home.display()
        ),
        None => " (no JDK found: frame pointers only)".to_string(),
    };
    env.line = format!("--jit: {}{jdk_note}", said.join(" "));
    if !kept.is_empty() {
        env.line
            .push_str(&format!("; kept as set: {}", kept.join(" ")));
    }
    env
}

/// Whether `word` of a user's options is `flag` or its opposite (V8's `--no-perf-prof`,
/// HotSpot's `-XX:-PreserveFramePointer`, `--perf-prof=...`): the user's choice stands.
fn same_option(word: &str, flag: &str) -> bool {
    let name = |w: &str| -> String {
        let w = w.split('=').next().unwrap_or(w);
        if let Some(xx) = w.strip_prefix("-XX:") {
            return format!("-XX:{}", xx.trim_start_matches(['+', '-']));
        }
        let bare = w.trim_start_matches('-').replace('_', "-");
        bare.strip_prefix("no-").unwrap_or(&bare).to_string()
    };
    name(word) == name(flag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> JitVars {
        JitVars::from_vars(|name| {
            list.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    fn value<'a>(env: &'a JitEnv, name: &str) -> Option<&'a str> {
        env.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.to_str().unwrap())
    }

    fn jdk(major: u32) -> Jdk {
        Jdk {
            home: PathBuf::from("/usr/lib/jvm/x"),
            major,
        }
    }

    /// An empty environment gets every runtime's variables; JDK 17 its perf map.
    #[test]
    fn every_runtime_gets_what_it_needs() {
        let env = jit_env(&vars(&[]), Some(&jdk(17)));
        assert_eq!(value(&env, "PYTHON_PERF_JIT_SUPPORT"), Some("1"));
        assert_eq!(value(&env, "PYTHONPERFSUPPORT"), Some("1"));
        assert_eq!(value(&env, "DOTNET_PerfMapEnabled"), Some("1"));
        assert_eq!(
            value(&env, "NODE_OPTIONS"),
            Some("--perf-prof --perf-prof-unwinding-info --interpreted-frames-native-stack")
        );
        assert_eq!(
            value(&env, "JAVA_TOOL_OPTIONS"),
            Some("-XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit")
        );
        assert_eq!(env.vars.len(), 5);
        assert_eq!(env.line.lines().count(), 1);
        assert!(
            env.line.starts_with("--jit: PYTHON_PERF_JIT_SUPPORT=1 "),
            "{}",
            env.line
        );
        assert!(
            env.line
                .contains("(JDK 17 at /usr/lib/jvm/x: a perf map at exit)"),
            "{}",
            env.line
        );
    }

    /// The user's values stay: appended to, never replaced; an option the user set either
    /// way is not added again; a JDK before 17 (or none found) gets frame pointers only.
    #[test]
    fn the_users_values_are_appended_to_never_replaced() {
        let user = vars(&[
            ("NODE_OPTIONS", "--max-old-space-size=4096 --no-perf-prof"),
            ("JAVA_TOOL_OPTIONS", "-Xmx1g -XX:-PreserveFramePointer"),
            ("DOTNET_PerfMapEnabled", "3"),
        ]);
        let env = jit_env(&user, Some(&jdk(11)));
        assert_eq!(
            value(&env, "NODE_OPTIONS"),
            Some("--max-old-space-size=4096 --no-perf-prof --perf-prof-unwinding-info --interpreted-frames-native-stack")
        );
        // PreserveFramePointer was the user's (off); nothing else for JDK 11.
        assert_eq!(value(&env, "JAVA_TOOL_OPTIONS"), None);
        assert_eq!(value(&env, "DOTNET_PerfMapEnabled"), None);
        assert!(env.line.contains("kept as set: DOTNET_PerfMapEnabled=3 JAVA_TOOL_OPTIONS=\"-Xmx1g -XX:-PreserveFramePointer\""), "{}", env.line);
        assert!(
            env.line.contains("no perf map before JDK 17"),
            "{}",
            env.line
        );
        let env = jit_env(&vars(&[("JAVA_TOOL_OPTIONS", "-Xss2m")]), None);
        assert_eq!(
            value(&env, "JAVA_TOOL_OPTIONS"),
            Some("-Xss2m -XX:+PreserveFramePointer")
        );
        assert!(
            env.line.ends_with("(no JDK found: frame pointers only)"),
            "{}",
            env.line
        );
    }

    #[test]
    fn release_files_give_the_major_version() {
        assert_eq!(
            release_major("IMPLEMENTOR=\"x\"\nJAVA_VERSION=\"17.0.15\"\n"),
            Some(17)
        );
        assert_eq!(release_major("JAVA_VERSION=\"1.8.0_392\""), Some(8));
        assert_eq!(release_major("JAVA_VERSION=\"25\""), Some(25));
        assert_eq!(release_major("JAVA_VERSION=\"21-ea\""), Some(21));
        assert_eq!(release_major("JAVA_RUNTIME_VERSION=\"17\""), None);
    }

    /// A `java` command is found on PATH, its symlinks resolved to the JDK's home; another
    /// command takes JAVA_HOME's JDK, else the `java` on PATH.
    #[test]
    fn the_jdk_is_the_commands_or_java_homes_or_paths() {
        let dir = cpiflame_testkit::Dir::new("runtimes-jdk");
        let make = |name: &str, version: &str| {
            let home = dir.path(name);
            std::fs::create_dir_all(home.join("bin")).unwrap();
            std::fs::write(home.join("bin/java"), "").unwrap();
            std::fs::write(
                home.join("release"),
                format!("JAVA_VERSION=\"{version}\"\n"),
            )
            .unwrap();
            home
        };
        let (old, new) = (make("jdk8", "1.8.0_1"), make("jdk21", "21.0.1"));
        let bin = dir.path("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(new.join("bin/java"), bin.join("java")).unwrap();
        let path = bin.to_str().unwrap();
        let java = [OsString::from("java"), OsString::from("-version")];
        let found = find_jdk(
            &java,
            &vars(&[("PATH", path), ("JAVA_HOME", old.to_str().unwrap())]),
        );
        assert_eq!(
            found.map(|j| (j.major, j.home)),
            Some((21, std::fs::canonicalize(&new).unwrap()))
        );
        let other = [OsString::from("./gradlew")];
        let found = find_jdk(
            &other,
            &vars(&[("PATH", path), ("JAVA_HOME", old.to_str().unwrap())]),
        );
        assert_eq!(found.map(|j| j.major), Some(8));
        let found = find_jdk(&other, &vars(&[("PATH", path)]));
        assert_eq!(found.map(|j| j.major), Some(21));
        assert_eq!(find_jdk(&other, &vars(&[])), None);
    }
}
