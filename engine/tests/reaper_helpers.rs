//! A stage's sweep of orphans leaves the engine's own helpers alone: a helper spawned through
//! `spawn_registered` survives it even when it leads a process group of its own (git does, for
//! its timeout), while an unregistered child in such a group is ended as unattributed. One test
//! in its own binary: a sweep looks at every child of the process.

#![cfg(target_os = "linux")]

use std::os::unix::process::CommandExt as _;
use std::process::Command;

use reviewflow_engine::exec::confine::reaper::{Orphans, end_orphans, spawn_registered};

fn sleeper() -> Command {
    let mut cmd = Command::new("sleep");
    cmd.arg("30").process_group(0);
    cmd
}

#[test]
fn a_registered_helper_survives_a_sweep_and_an_unregistered_one_does_not() {
    let (mut helper, registered) = spawn_registered(&mut sleeper()).expect("spawns");
    let mut stray = sleeper().spawn().expect("spawns");

    let swept = end_orphans(Orphans::OfStage("some-run.stage"));
    assert_eq!((swept.ended, swept.unattributed), (1, 1), "{swept:?}");
    // The stray was killed and reaped by the sweep; the helper still runs.
    assert!(
        matches!(helper.try_wait(), Ok(None)),
        "the helper was ended"
    );
    assert!(
        stray.try_wait().is_err() || matches!(stray.try_wait(), Ok(Some(_))),
        "the stray still runs"
    );

    let _ = helper.kill();
    let _ = helper.wait();
    drop(registered);
}
