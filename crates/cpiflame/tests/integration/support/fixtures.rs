//! Building the workload programs of `fixtures/` with
//! `scripts/build-fixtures.sh`.

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workload binaries built by `scripts/build-fixtures.sh`.
///
/// All are x86_64 ELF executables with DWARF debug info and no frame
/// pointers; `fixtures/README.md` lists the stacks each one produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixtures {
    /// The directory they were built into.
    pub dir: PathBuf,
    /// `fixtures/demo/cpu_mem_bound.c`: `memory_bound` then `cpu_bound`.
    pub cpu_mem_bound: PathBuf,
    /// `fixtures/workloads/threads.c`: pthreads, recursion, inlined helper.
    pub threads: PathBuf,
    /// `fixtures/workloads/forks.c`: three children; `abort` / `exit7` end it by SIGABRT /
    /// status 7.
    pub forks: PathBuf,
    /// `fixtures/workloads/faults.c`: writes to N fresh pages (argument, default 4000).
    pub faults: PathBuf,
    /// `fixtures/workloads/swarm.c`: `swarm [THREADS] [PROCS] [MS]`, 64 threads and 50
    /// processes at once, each burning MS (20) ms of CPU; prints every task's id.
    pub swarm: PathBuf,
    /// `fixtures/workloads/churn.c`: `churn [ROUNDS] [THREADS] [SPINS]`, short-lived tasks
    /// started by pthread_create (`__clone3`) and clone() (`__clone`) over and over.
    pub churn: PathBuf,
    /// `fixtures/workloads/shift.c`: `shift PERCENT [SCALE]`, PERCENT of a fixed amount of
    /// work in `work_a`, the rest in `work_b`.
    pub shift: PathBuf,
    /// `fixtures/workloads/hotloop_cpp.cpp`: a C++ hot loop with templates inlined into it.
    pub hotloop_cpp: PathBuf,
    /// `fixtures/workloads/hotloop_rust.rs`: a Rust hot loop with functions inlined into it.
    pub hotloop_rust: PathBuf,
    /// `fixtures/workloads/coldpart.c`: `work`, split by gcc into `work` and `work.cold`.
    pub coldpart: PathBuf,
    /// `fixtures/workloads/false_sharing.c`: `false_sharing shared|padded [THREADS]
    /// [ITERS]`, threads bumping counters in one cache line or one line each.
    pub false_sharing: PathBuf,
    /// `fixtures/workloads/offcpu.c`: `offcpu [SCALE [COMPUTE]]`, threads whose on-CPU, runnable and
    /// blocked times are known by construction and printed by the program.
    pub offcpu: PathBuf,
    /// `fixtures/workloads/mangled.cpp`: demangled C++ names.
    pub mangled: PathBuf,
    /// `fixtures/workloads/rust_workload.rs` with rustc's default (legacy)
    /// symbol mangling.
    pub rust_workload: PathBuf,
    /// The same Rust source built with `-C symbol-mangling-version=v0`.
    pub rust_workload_v0: PathBuf,
    /// `fixtures/workloads/raytrace.c` without markers (`-DRAYTRACE_NO_MARKERS`): the bare
    /// ray tracer, `raytrace [-s WxH] [-r RAYS] [-t THREADS]`.
    pub raytrace: PathBuf,
}

impl Fixtures {
    fn in_dir(dir: &Path) -> Fixtures {
        Fixtures {
            dir: dir.to_path_buf(),
            cpu_mem_bound: dir.join("cpu_mem_bound"),
            threads: dir.join("threads"),
            forks: dir.join("forks"),
            faults: dir.join("faults"),
            swarm: dir.join("swarm"),
            churn: dir.join("churn"),
            shift: dir.join("shift"),
            hotloop_cpp: dir.join("hotloop_cpp"),
            hotloop_rust: dir.join("hotloop_rust"),
            coldpart: dir.join("coldpart"),
            false_sharing: dir.join("false_sharing"),
            offcpu: dir.join("offcpu"),
            mangled: dir.join("mangled"),
            rust_workload: dir.join("rust_workload"),
            rust_workload_v0: dir.join("rust_workload_v0"),
            raytrace: dir.join("raytrace"),
        }
    }

    /// Every binary, with its file name.
    pub fn all(&self) -> [(&'static str, &Path); 16] {
        [
            ("cpu_mem_bound", &self.cpu_mem_bound),
            ("threads", &self.threads),
            ("forks", &self.forks),
            ("faults", &self.faults),
            ("swarm", &self.swarm),
            ("churn", &self.churn),
            ("shift", &self.shift),
            ("hotloop_cpp", &self.hotloop_cpp),
            ("hotloop_rust", &self.hotloop_rust),
            ("coldpart", &self.coldpart),
            ("false_sharing", &self.false_sharing),
            ("offcpu", &self.offcpu),
            ("mangled", &self.mangled),
            ("rust_workload", &self.rust_workload),
            ("rust_workload_v0", &self.rust_workload_v0),
            ("raytrace", &self.raytrace),
        ]
    }

    fn check(&self) -> Result<(), String> {
        for (name, path) in self.all() {
            if !path.is_file() {
                return Err(format!(
                    "fixture {name} missing after build: {} is not a file",
                    path.display()
                ));
            }
        }
        Ok(())
    }
}

/// The workspace root (the directory holding `scripts/` and `fixtures/`),
/// found from this package's `CARGO_MANIFEST_DIR` (`crates/cpiflame`).
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|dir| dir.join("scripts/build-fixtures.sh").is_file())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| manifest.join("../.."))
}

/// Runs `scripts/build-fixtures.sh OUT` and returns the paths of the binaries
/// it built. Fails (with the script's output) if a compiler is missing or a
/// build fails.
pub fn build_fixtures(out: &Path) -> Result<Fixtures, String> {
    let script = repo_root().join("scripts/build-fixtures.sh");
    if !script.is_file() {
        return Err(format!("build script not found: {}", script.display()));
    }
    let output = Command::new("bash")
        .arg(&script)
        .arg(out)
        .output()
        .map_err(|e| format!("cannot run bash {}: {e}", script.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} {} failed ({}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
            script.display(),
            out.display(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let fixtures = Fixtures::in_dir(out);
    fixtures.check()?;
    Ok(fixtures)
}

/// The fixtures built once per test process and shared by its tests.
///
/// They are built into `CARGO_TARGET_TMPDIR/cpiflame-fixtures-HASH`, where
/// HASH covers the fixture sources and the build script, so a later process
/// (another test binary, or every test under cargo-nextest) reuses them.
/// The fixtures where the kernel can sample software events, else `None` (the test does not
/// run: a skip locally, a failure under CI=true).
pub fn sampling_fixtures() -> Option<&'static Fixtures> {
    if !cpiflame_testkit::perf_works() {
        cpiflame_testkit::unavailable(
            "software sampling does not work here (`perf record -e cpu-clock` fails)",
        );
        return None;
    }
    Some(shared_fixtures().expect("fixtures build"))
}

/// The build goes to a private directory that is then renamed into place, so
/// concurrent processes never see a half-built directory.
pub fn shared_fixtures() -> Result<&'static Fixtures, String> {
    static SHARED: OnceLock<Result<Fixtures, String>> = OnceLock::new();
    SHARED
        .get_or_init(build_shared)
        .as_ref()
        .map_err(Clone::clone)
}

fn build_shared() -> Result<Fixtures, String> {
    let root = repo_root();
    // Every file of the fixture folders, not a list: a new workload must not reuse a stale
    // cached build.
    let mut inputs = vec![root.join("scripts/build-fixtures.sh")];
    for dir in ["fixtures/demo", "fixtures/workloads"] {
        let dir = root.join(dir);
        let entries =
            fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
            if entry.path().is_file() {
                inputs.push(entry.path());
            }
        }
    }
    inputs.sort();
    let mut hasher = DefaultHasher::new();
    for path in &inputs {
        let bytes = fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        path.strip_prefix(&root).unwrap_or(path).hash(&mut hasher);
        bytes.hash(&mut hasher);
    }
    let base = match option_env!("CARGO_TARGET_TMPDIR") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::temp_dir(),
    };
    let dir = base.join(format!("cpiflame-fixtures-{:016x}", hasher.finish()));
    let existing = Fixtures::in_dir(&dir);
    if existing.check().is_ok() {
        return Ok(existing);
    }
    fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    let tmp = base.join(format!(
        "cpiflame-fixtures-tmp-{}-{:016x}",
        std::process::id(),
        hasher.finish()
    ));
    let _ = fs::remove_dir_all(&tmp);
    build_fixtures(&tmp)?;
    match fs::rename(&tmp, &dir) {
        Ok(()) => {}
        Err(rename_err) => {
            // Another process may have published the same build first.
            let _ = fs::remove_dir_all(&tmp);
            if existing.check().is_err() {
                return Err(format!(
                    "cannot move {} to {}: {rename_err}",
                    tmp.display(),
                    dir.display()
                ));
            }
        }
    }
    existing.check()?;
    Ok(existing)
}

/// A copy of `shift` under `name` in `dir`, started with all its work in `work_a` and enough
/// of it to outlast a recording of seconds; returned once it has exec'd (its comm is `name`).
pub fn start_loop(f: &Fixtures, dir: &cpiflame_testkit::Dir, name: &str) -> std::process::Child {
    let exe = dir.path(name);
    std::fs::copy(&f.shift, &exe).unwrap();
    let child = std::process::Command::new(&exe)
        .args(["100", "1000"])
        .spawn()
        .unwrap();
    let comm = format!("/proc/{}/comm", child.id());
    while std::fs::read_to_string(&comm).unwrap_or_default().trim() != name {
        std::thread::yield_now();
    }
    child
}

/// A scratch directory for a recording a test keeps in a `static` for the whole run (statics
/// are never dropped, so a [`cpiflame_testkit::Dir`] there would never be removed): one
/// fixed directory per `name` under `CARGO_TARGET_TMPDIR`, emptied when asked for, so each run
/// replaces the last instead of leaving its copy behind.
pub fn run_scratch(name: &str) -> PathBuf {
    let base = match option_env!("CARGO_TARGET_TMPDIR") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::temp_dir(),
    };
    let dir = base.join(format!("cpiflame-run-{name}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

/// `support/data/NAME.c` built with `cc -O1 -g` into `dir` as `NAME`; `None` (a skip locally,
/// a failure under CI) without sampling or a compiler, which the tests that sample it need.
pub fn sampled_data_program(dir: &cpiflame_testkit::Dir, name: &str) -> Option<PathBuf> {
    if !cpiflame_testkit::perf_works() {
        cpiflame_testkit::unavailable("software sampling does not work here");
        return None;
    }
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/integration/support/data")
        .join(format!("{name}.c"));
    let exe = dir.path(name);
    match Command::new("cc")
        .args(["-O1", "-g", "-o"])
        .arg(&exe)
        .arg(&source)
        .output()
    {
        Ok(out) if out.status.success() => Some(exe),
        Ok(out) => panic!("cc {name}.c: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => {
            cpiflame_testkit::unavailable(format!("cc cannot be run: {e}"));
            None
        }
    }
}
