//! Front-end cost by pipeline size: the KDL parse alone, the guarded parse, compile, the whole
//! check, and the checks alone, on generated pipelines of 100, 1,000 and 10,000 stages.
//!
//! Run with `cargo bench -p reviewflow-engine --bench check`; `docs/performance.md` explains the
//! groups and records the figures.

mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use reviewflow_engine::syntax::{Limits, parse_document};
use reviewflow_engine::{CheckOptions, Registry, Source, compile, run_checks};

const NAME: &str = "bench.kdl";

/// One generated pipeline, proven clean before anything is timed: a finding would mean either a
/// generator bug or an engine false positive, and timing an error path would measure the wrong
/// thing.
struct Case {
    stages: usize,
    text: String,
}

fn cases(registry: &Registry) -> Vec<Case> {
    support::SIZES
        .iter()
        .map(|&stages| {
            let text = support::pipeline(stages);
            let compiled = match compile(
                Source::new(NAME, text.as_str()),
                registry,
                &Limits::default(),
            ) {
                Ok(c) => c,
                Err(u) => panic!("{stages} stages: not compiled: {:?}", u.findings),
            };
            assert_eq!(compiled.pipeline.stages.len(), stages);
            let findings = run_checks(&compiled, registry, CheckOptions::default());
            assert!(
                findings.is_empty(),
                "{stages} stages: {} findings, first: {:?}",
                findings.len(),
                findings.first()
            );
            Case { stages, text }
        })
        .collect()
}

/// Short measurements keep the whole run within a few minutes on a shared 2-core machine; the
/// big sizes still get enough samples for a stable median.
fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g
}

fn bench(c: &mut Criterion) {
    let registry = Registry::with_builtins();
    let limits = Limits::default();
    let cases = cases(&registry);

    let mut g = group(c, "parse/kdl");
    for case in &cases {
        g.throughput(Throughput::Elements(case.stages as u64));
        g.bench_with_input(
            BenchmarkId::from_parameter(case.stages),
            &case.text,
            |b, text| {
                b.iter(|| kdl::KdlDocument::parse_v2(black_box(text)));
            },
        );
    }
    g.finish();

    let mut g = group(c, "parse/guarded");
    for case in &cases {
        g.throughput(Throughput::Elements(case.stages as u64));
        g.bench_with_input(
            BenchmarkId::from_parameter(case.stages),
            &case.text,
            |b, text| {
                b.iter(|| parse_document(black_box(text), &limits));
            },
        );
    }
    g.finish();

    // Building the `Source` (a copy of the text and its line index) is part of what the CLI does
    // before compiling, so it is inside the timed loop.
    let mut g = group(c, "compile");
    for case in &cases {
        g.throughput(Throughput::Elements(case.stages as u64));
        g.bench_with_input(
            BenchmarkId::from_parameter(case.stages),
            &case.text,
            |b, text| {
                b.iter(|| {
                    compile(
                        Source::new(NAME, black_box(text.as_str())),
                        &registry,
                        &limits,
                    )
                });
            },
        );
    }
    g.finish();

    let mut g = group(c, "check");
    for case in &cases {
        g.throughput(Throughput::Elements(case.stages as u64));
        g.bench_with_input(
            BenchmarkId::from_parameter(case.stages),
            &case.text,
            |b, text| {
                b.iter(|| {
                    compile(
                        Source::new(NAME, black_box(text.as_str())),
                        &registry,
                        &limits,
                    )
                    .map(|compiled| run_checks(&compiled, &registry, CheckOptions::default()))
                });
            },
        );
    }
    g.finish();

    let mut g = group(c, "analyse");
    for case in &cases {
        let compiled = match compile(Source::new(NAME, case.text.as_str()), &registry, &limits) {
            Ok(c) => c,
            Err(u) => panic!("{} stages: not compiled: {:?}", case.stages, u.findings),
        };
        g.throughput(Throughput::Elements(case.stages as u64));
        g.bench_with_input(
            BenchmarkId::from_parameter(case.stages),
            &compiled,
            |b, compiled| {
                b.iter(|| run_checks(black_box(compiled), &registry, CheckOptions::default()));
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
