//! What a test could not check here, said where it shows: written to stderr itself (the
//! harness captures `eprintln!` and hides it for a test that passes) and appended to
//! `target/tmp/reviewflow-skips.log`, which `.ci/run` counts. Under `CI=true` (`.ci/run` sets
//! it), where every tool is installed and every layer holds, a skip is a failure.

use std::io::Write;

/// `what` could not be checked here: a failure under `CI=true`, else one line.
pub fn skipped(what: &str) {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "not checked, and CI (`CI=true`, as .ci/run sets it) must check it: {what}"
    );
    not_tried(what);
}

/// `what` was not tried here, which holds also where CI runs (another user, another host):
/// one line, counted, never a failure.
pub fn not_tried(what: &str) {
    let line = format!("skipped: {what}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    let log = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("reviewflow-skips.log");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
    {
        let _ = f.write_all(line.as_bytes());
    }
}
