//! Many files: 300 generated pipelines of 20 `run` stages each, and the same jobs written as
//! GitHub workflows (for comparing `reviewflow check DIR` with `actionlint FILES…`).
//!
//! `cargo bench -p reviewflow-engine --bench many` times parsing (kdl's parser, and the fast
//! path), then compiling and checking all 300 files in-process, one after the other. With `REVIEWFLOW_MANY_OUT=DIR` set, it writes the corpus
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

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group};
use reviewflow_engine::syntax::{Limits, parse_fast};
use reviewflow_engine::{CheckOptions, Registry, Source, compile, run_checks};

#[path = "support/many_corpus.rs"]
mod corpus;

use corpus::{FILES, STAGES, pipeline, workflow};

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
    // The parse alone, by kdl and by the fast path that `parse_document` takes first.
    let bytes: usize = texts.iter().map(String::len).sum();
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("parse/kdl", |b| {
        b.iter(|| {
            texts
                .iter()
                .filter(|t| kdl::KdlDocument::parse_v2(black_box(t)).is_ok())
                .count()
        });
    });
    g.bench_function("parse/fast", |b| {
        b.iter(|| {
            texts
                .iter()
                .filter(|t| parse_fast(black_box(t)).is_some())
                .count()
        });
    });
    g.throughput(Throughput::Elements(FILES as u64));
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
