//! `record --jit`: the command gets what each JIT runtime needs to write its perf map or JIT
//! dump (the user's values appended to, never replaced), said in one line; without a
//! command it is refused in one line.

use crate::support;

use std::process::Command;

use support::{s, Dir};

fn cpiflame() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cpiflame"))
}

/// The command sees the variables `--jit` set, the user's own values kept in front.
#[test]
fn the_command_gets_the_runtimes_variables_after_the_users() {
    if !cpiflame_testkit::perf_works() {
        cpiflame_testkit::unavailable("software sampling does not work here");
        return;
    }
    let dir = Dir::new("record-jit-env");
    let data = dir.path("env.data");
    let show = "for v in PYTHON_PERF_JIT_SUPPORT PYTHONPERFSUPPORT DOTNET_PerfMapEnabled \
                NODE_OPTIONS JAVA_TOOL_OPTIONS; do eval \"echo $v=\\$$v\"; done";
    let out = cpiflame()
        .args(["record", "--jit", "-o", s(&data), "--", "sh", "-c", show])
        .env("NODE_OPTIONS", "--max-old-space-size=300")
        .env("DOTNET_PerfMapEnabled", "3")
        .env("JAVA_TOOL_OPTIONS", "-Xss2m")
        .env_remove("PYTHON_PERF_JIT_SUPPORT")
        .env_remove("PYTHONPERFSUPPORT")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let seen: Vec<&str> = stdout.lines().collect();
    assert_eq!(seen[..4], [
        "PYTHON_PERF_JIT_SUPPORT=1",
        "PYTHONPERFSUPPORT=1",
        "DOTNET_PerfMapEnabled=3",
        "NODE_OPTIONS=--max-old-space-size=300 --perf-prof --perf-prof-unwinding-info --interpreted-frames-native-stack",
    ], "{stdout}");
    assert!(
        seen[4].starts_with("JAVA_TOOL_OPTIONS=-Xss2m -XX:+PreserveFramePointer"),
        "{stdout}"
    );
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("--jit:")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    for part in [
        "PYTHON_PERF_JIT_SUPPORT=1",
        "NODE_OPTIONS+=\"--perf-prof --perf-prof-unwinding-info --interpreted-frames-native-stack\"",
        "kept as set: DOTNET_PerfMapEnabled=3",
    ] {
        assert!(said[0].contains(part), "{part}: {}", said[0]);
    }

    // Without a command there is nothing to set the variables for.
    for args in [&["-p", "1"][..], &["-a", "--duration", "0.1"][..]] {
        let mut all = vec!["record", "--jit", "-o", s(&data)];
        all.extend(args);
        let out = cpiflame().args(&all).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("--jit sets the runtimes' variables for the command"),
            "{stderr}"
        );
    }
}
