//! Many files: 300 generated pipelines of 20 `run` stages each, and the same jobs written as
//! GitHub workflows (for comparing `reviewflow check DIR` with `actionlint FILES…`).
//!
//! `cargo bench -p reviewflow-engine --bench many` times compiling and checking all 300 files
//! in-process, one after the other. With `REVIEWFLOW_MANY_OUT=DIR` set, it writes the corpus
//! instead (`DIR/pipelines/*.kdl` and `DIR/workflows/*.yml`) and exits:
//!
//! ```sh
//! REVIEWFLOW_MANY_OUT=target/many cargo bench -p reviewflow-engine --bench many
//! hyperfine -N --warmup 3 \
//!     'taskset -c 0 target/release/reviewflow check target/many/pipelines' \
//!     'taskset -c 0 actionlint target/many/workflows/*.yml'   # and without taskset
//! ```
//!
//! `docs/performance.md` records the figures.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group};
use reviewflow_engine::syntax::Limits;
use reviewflow_engine::{CheckOptions, Registry, Source, compile, run_checks};

/// Files in the corpus.
const FILES: usize = 300;
/// Stages (jobs) in each file.
const STAGES: usize = 20;

/// Pipeline `f`: stage `i` runs `make step-i` after stages `i-1` and `i/2` (a DAG with fan-out,
/// not a chain), and every 5th stage holds a secret of its own, visible to it alone. Ordering
/// only (`needs`), no data between stages: an opaque `run` output would carry its stage's
/// secret downstream, and the file must be clean so that every check runs to the end.
fn pipeline(f: usize) -> String {
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
fn workflow(f: usize) -> String {
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

/// Writes the corpus under `dir` and proves every pipeline clean.
fn write_corpus(dir: &Path, registry: &Registry) {
    let pipelines = dir.join("pipelines");
    let workflows = dir.join("workflows");
    for d in [&pipelines, &workflows] {
        if let Err(e) = std::fs::create_dir_all(d) {
            panic!("{}: {e}", d.display());
        }
    }
    for f in 0..FILES {
        let text = pipeline(f);
        assert_clean(f, &text, registry);
        let files = [
            (pipelines.join(format!("p{f:03}.kdl")), text),
            (workflows.join(format!("p{f:03}.yml")), workflow(f)),
        ];
        for (path, text) in files {
            if let Err(e) = std::fs::write(&path, text) {
                panic!("{}: {e}", path.display());
            }
        }
    }
    println!(
        "wrote {FILES} pipelines and {FILES} workflows under {}",
        dir.display()
    );
}

fn assert_clean(f: usize, text: &str, registry: &Registry) {
    let compiled = match compile(Source::new("many.kdl", text), registry, &Limits::default()) {
        Ok(c) => c,
        Err(u) => panic!("pipeline {f}: not compiled: {:?}", u.findings),
    };
    assert_eq!(compiled.pipeline.stages.len(), STAGES);
    let findings = run_checks(&compiled, registry, CheckOptions::default());
    assert!(
        findings.is_empty(),
        "pipeline {f}: {} findings, first: {:?}",
        findings.len(),
        findings.first()
    );
}

fn bench(c: &mut Criterion) {
    let registry = Registry::with_builtins();
    let texts: Vec<String> = (0..FILES).map(pipeline).collect();
    for (f, text) in texts.iter().enumerate() {
        assert_clean(f, text, &registry);
    }
    let limits = Limits::default();
    let mut g = c.benchmark_group("many");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .sample_size(20)
        .throughput(Throughput::Elements(FILES as u64));
    // The whole of `check` on each file but reading it and printing: one core, in order.
    g.bench_function("check/300x20", |b| {
        b.iter(|| {
            let mut findings = 0;
            for text in &texts {
                if let Ok(compiled) = compile(
                    Source::new("many.kdl", black_box(text.as_str())),
                    &registry,
                    &limits,
                ) {
                    findings += run_checks(&compiled, &registry, CheckOptions::default()).len();
                }
            }
            findings
        });
    });
    g.finish();
}

criterion_group!(benches, bench);

fn main() {
    if let Some(dir) = std::env::var_os("REVIEWFLOW_MANY_OUT") {
        write_corpus(Path::new(&dir), &Registry::with_builtins());
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
