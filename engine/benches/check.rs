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
    BenchmarkGroup, BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group,
    criterion_main,
};
use reviewflow_engine::syntax::parse_document;
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
                &support::limits(),
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

/// Short measurements keep the whole run within about three minutes on a shared 2-core machine.
fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.warm_up_time(Duration::from_secs(1));
    g
}

/// Sets the throughput and the sampling for one size: 20 samples for the small sizes; for 10,000
/// stages, where one iteration can take most of a second, 10 flat samples (equal iteration
/// counts, as few as one), so the size costs about ten seconds rather than criterion's minimum
/// of 55 iterations under linear sampling.
fn size(g: &mut BenchmarkGroup<'_, WallTime>, stages: usize) {
    g.throughput(Throughput::Elements(stages as u64));
    if stages >= 10_000 {
        g.sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .measurement_time(Duration::from_secs(10));
    } else {
        g.sample_size(20)
            .sampling_mode(SamplingMode::Auto)
            .measurement_time(Duration::from_secs(3));
    }
}

fn bench(c: &mut Criterion) {
    let registry = support::registry();
    let limits = support::limits();
    let cases = cases(&registry);

    let mut g = group(c, "parse/kdl");
    for case in &cases {
        size(&mut g, case.stages);
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
        size(&mut g, case.stages);
        g.bench_with_input(
            BenchmarkId::from_parameter(case.stages),
            &case.text,
            |b, text| {
                b.iter(|| parse_document(black_box(text), &limits));
            },
        );
    }
    g.finish();

    // Lowering and the DAG alone, on a document parsed beforehand: what the engine adds to the
    // parser before any check runs.
    let mut g = group(c, "lower");
    for case in &cases {
        size(&mut g, case.stages);
        let source = Source::new(NAME, case.text.as_str());
        let doc = match parse_document(&case.text, &limits) {
            Ok(d) => d,
            Err(e) => panic!("{} stages: {e:?}", case.stages),
        };
        g.bench_with_input(BenchmarkId::from_parameter(case.stages), &doc, |b, doc| {
            b.iter(|| {
                let (pipeline, facts) =
                    reviewflow_engine::lower::lower(black_box(doc), &source, &registry);
                let dag = reviewflow_engine::graph::Dag::build(&pipeline);
                (pipeline, facts, dag)
            });
        });
    }
    g.finish();

    // Building the `Source` (a copy of the text and its line index) is part of what the CLI does
    // before compiling, so it is inside the timed loop.
    let mut g = group(c, "compile");
    for case in &cases {
        size(&mut g, case.stages);
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
        size(&mut g, case.stages);
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
        size(&mut g, case.stages);
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
