//! `reviewflow export github` without the process: the partition and the workflow writer, on the
//! generated pipelines of the `check` bench (100 and 1,000 stages: 10,000 is over the parser's
//! token limit; every 10th stage holds a secret, which flows downstream and so joins stages into
//! jobs).
//!
//! Run with `cargo bench -p reviewflow-stdlib --bench export`.

// The engine's generator of the benches' pipelines: the same files as the `check` bench.
#[path = "../../engine/benches/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use reviewflow_engine::export::partition;
use reviewflow_engine::flow::Flow;
use reviewflow_engine::syntax::Limits;
use reviewflow_engine::{Source, compile};
use reviewflow_stdlib::platform::github::export::workflow::{Action, Source as Export, workflow};

fn bench(c: &mut Criterion) {
    let registry = support::registry();
    let mut g = c.benchmark_group("export");
    g.warm_up_time(Duration::from_secs(1));
    for stages in support::SIZES.into_iter().filter(|&n| n <= 1_000) {
        let text = support::pipeline(stages);
        let compiled = match compile(
            Source::new("bench.kdl", text.as_str()),
            &registry,
            &Limits::default(),
        ) {
            Ok(c) => c,
            Err(u) => panic!("{stages} stages: not compiled: {:?}", u.findings),
        };
        let Some(flow) = Flow::compute(&compiled.pipeline, &registry, &compiled.dag) else {
            panic!("{stages} stages: a cycle");
        };
        g.throughput(Throughput::Elements(stages as u64));
        g.sample_size(20)
            .sampling_mode(SamplingMode::Auto)
            .measurement_time(Duration::from_secs(3));
        g.bench_with_input(BenchmarkId::new("partition", stages), &stages, |b, _| {
            b.iter(|| {
                black_box(partition(
                    &compiled.pipeline,
                    &registry,
                    &compiled.dag,
                    &flow,
                ))
            })
        });
        let action = Action::default();
        let src = Export {
            pipeline: &compiled.pipeline,
            registry: &registry,
            dag: &compiled.dag,
            flow: &flow,
            file: "bench.kdl",
            action: &action,
            installed_as: None,
        };
        g.bench_with_input(BenchmarkId::new("workflow", stages), &stages, |b, _| {
            b.iter(|| black_box(workflow(&src).map(|t| t.len())))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
