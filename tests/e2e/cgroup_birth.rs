//! Children are born in their cgroup (`clone3` with `CLONE_INTO_CGROUP`), and that still holds
//! where the kernel would kill them at birth: it compares the kill count of the child's cgroup
//! with that of the engine's own, so a run started in a cgroup that was killed before (a service
//! restarted in the same cgroup) must fall back to joining by `cgroup.procs`, not lose every
//! stage. docs/executor.md, "What a child does before its program".

use std::path::PathBuf;
use std::process::Command;

use crate::support::Repo;

/// This process's cgroup v2 folder, where it can make one below it.
fn own_cgroup() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let own = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .iter()
        .map(|mount| PathBuf::from(format!("{mount}{own}")))
        .find(|dir| dir.join("cgroup.controllers").exists() && dir.join("cgroup.procs").exists())
}

const PIPELINE: &str = r#"pipeline "born"
stage "first" uses="run" {
    command "echo" "first"
}
stage "second" uses="run" {
    command "echo" "second"
    needs "first"
}
"#;

#[test]
fn a_run_started_in_a_cgroup_killed_before_still_runs_its_stages() {
    let root = rustix::process::geteuid().is_root();
    let Some(own) = own_cgroup().filter(|_| root) else {
        assert!(
            !(root && std::env::var("CI").is_ok_and(|v| v == "true")),
            "CI runs as root with cgroup v2: the cgroup layer must be testable"
        );
        crate::support::not_tried("layer cgroup: not root with a writable cgroup v2 here");
        return;
    };
    let killed = own.join(format!("reviewflow-test-killed-{}", std::process::id()));
    std::fs::create_dir(&killed).expect("make a cgroup");
    // Its kill count is now 1: a child born in a fresh cgroup from here would be killed.
    std::fs::write(killed.join("cgroup.kill"), "1").expect("kill the empty cgroup");
    let repo = Repo::init();
    repo.commit("review.kdl", PIPELINE, "pipeline");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo $$ > '{}/cgroup.procs' && exec \"$0\" run review.kdl",
            killed.display()
        ))
        .arg(env!("CARGO_BIN_EXE_reviewflow"))
        .current_dir(repo.path())
        .output()
        .expect("runs");
    let _ = std::fs::remove_dir(&killed);
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{log}");
    assert!(log.contains("✓ first") && log.contains("✓ second"), "{log}");
    assert!(log.contains("cgroup"), "the cgroup layer held: {log}");
}
