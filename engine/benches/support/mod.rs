//! Generates the benchmark's pipelines: `n` `run` stages where stage `i` reads the outputs of
//! stages `i-1` and `i/2`, and every 10th stage holds a secret of its own.
//!
//! The `i/2` edge gives the DAG long-range fan-out (stage `k` feeds `2k` and `2k+1`) so the
//! graph is not a mere chain, and the file stays clean so every check runs to completion.

use std::fmt::Write as _;

/// The sizes measured, in stages.
pub const SIZES: [usize; 3] = [100, 1_000, 10_000];

/// The KDL text of a clean pipeline of `stages` stages.
pub fn pipeline(stages: usize) -> String {
    // About 80 bytes a stage and 60 per secret.
    let mut out = String::with_capacity(stages * 100 + 32);
    out.push_str("pipeline \"bench\"\n\n");
    for i in (0..stages).step_by(10) {
        // Writing into a String cannot fail.
        let _ = writeln!(
            out,
            "secret \"k{i}\" env=\"K{i}\" {{ visible-to \"s{i}\" }}"
        );
    }
    out.push('\n');
    for i in 0..stages {
        let _ = write!(out, "stage \"s{i}\" uses=\"run\" {{ command \"tool\"");
        if i > 0 {
            let (a, b) = (i - 1, i / 2);
            if a == b {
                let _ = write!(out, " \"{{s{a}.out}}\"");
            } else {
                let _ = write!(out, " \"{{s{a}.out}}\" \"{{s{b}.out}}\"");
            }
        }
        out.push(';');
        if i % 10 == 0 {
            let _ = write!(out, " secret-env \"TOKEN\" \"k{i}\";");
        }
        out.push_str(" output \"out\" }\n");
    }
    out
}
