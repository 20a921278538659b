//! The many-files corpus: 300 pipelines of 20 `run` stages and the same jobs as GitHub
//! workflows. Shared by the `many` bench and the parser's differential test.

use std::fmt::Write as _;

/// Files in the corpus.
pub const FILES: usize = 300;
/// Stages (jobs) in each file.
pub const STAGES: usize = 20;

/// Pipeline `f`: stage `i` runs `make step-i` after stages `i-1` and `i/2` (a DAG with fan-out,
/// not a chain), and every 5th stage holds a secret of its own, visible to it alone. Ordering
/// only (`needs`), no data between stages: an opaque `run` output would carry its stage's
/// secret downstream, and the file must be clean so that every check runs to the end.
pub fn pipeline(f: usize) -> String {
    let mut out = String::with_capacity(STAGES * 120 + 64);
    // Writing into a String cannot fail.
    let _ = writeln!(out, "pipeline \"many-{f}\"\n");
    for i in (0..STAGES).step_by(5) {
        let _ = writeln!(
            out,
            "secret \"k{i}\" env=\"K{f}_{i}\" {{\n    visible-to \"s{i}\"\n}}"
        );
    }
    for i in 0..STAGES {
        let _ = writeln!(
            out,
            "\nstage \"s{i}\" uses=\"run\" timeout=\"10m\" {{\n    command \"make\" \"step-{i}\""
        );
        if i > 0 {
            let (a, b) = (i - 1, i / 2);
            if a == b {
                let _ = writeln!(out, "    needs \"s{a}\"");
            } else {
                let _ = writeln!(out, "    needs \"s{a}\" \"s{b}\"");
            }
        }
        if i % 5 == 0 {
            let _ = writeln!(out, "    secret-env \"TOKEN\" \"k{i}\"");
        }
        out.push_str("}\n");
    }
    out
}

/// The same jobs as a GitHub workflow: one job per stage with the same `needs`, one `run` step,
/// the same timeout, and the secret in the step's environment.
pub fn workflow(f: usize) -> String {
    let mut out = String::with_capacity(STAGES * 160 + 64);
    let _ = write!(
        out,
        "name: many-{f}\non:\n  pull_request:\npermissions:\n  contents: read\njobs:\n"
    );
    for i in 0..STAGES {
        let _ = writeln!(
            out,
            "  s{i}:\n    runs-on: ubuntu-latest\n    timeout-minutes: 10"
        );
        if i > 0 {
            let (a, b) = (i - 1, i / 2);
            if a == b {
                let _ = writeln!(out, "    needs: [s{a}]");
            } else {
                let _ = writeln!(out, "    needs: [s{a}, s{b}]");
            }
        }
        out.push_str("    steps:\n      - uses: actions/checkout@v5\n");
        let _ = writeln!(out, "      - run: make step-{i}");
        if i % 5 == 0 {
            let _ = writeln!(
                out,
                "        env:\n          TOKEN: ${{{{ secrets.K{f}_{i} }}}}"
            );
        }
    }
    out
}
