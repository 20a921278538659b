//! Executor benchmarks: the engine's own overhead on 1,000 no-op stages (target ≤ 50 ms), a
//! diamond of sleep stages against its critical path (target within 5 %), and the cost of
//! confining children: 1,000 `true` stages with and without it (target under 1 ms a stage).

// Benches abort on setup failure.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use reviewflow_engine::contract::{ChildSpec, Role, StageContract, ValueType};
use reviewflow_engine::run::{
    BoxFuture, ConsoleMode, Implementations, RunOptions, RunStatus, StageCx, StageError, StageImpl,
    StageOutputs, execute,
};
use reviewflow_engine::syntax::Limits;
use reviewflow_engine::{Compiled, Registry, Source, compile};

/// `bench/noop`: returns at once.
struct Noop;

impl StageImpl for Noop {
    fn run<'a>(&'a self, _cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
        Box::pin(async { Ok(StageOutputs::new()) })
    }
}

fn registry() -> Registry {
    let mut r = Registry::with_builtins();
    r.register(
        StageContract::new("bench/noop", "does nothing").child(
            ChildSpec::new("after", Role::Config, "an ordering input")
                .arg(ValueType::Template)
                .repeatable(),
        ),
    );
    r
}

/// 1,000 stages; stage i reads the `ok` of stage i/2: a binary tree, deep and wide.
fn noop_pipeline(n: usize) -> String {
    let mut s = String::from("pipeline \"noop\"\n");
    for i in 0..n {
        s.push_str(&format!("stage \"s{i}\" uses=\"bench/noop\" {{\n"));
        if i > 0 {
            s.push_str(&format!("    after \"{{s{}.ok}}\"\n", i / 2));
        }
        s.push_str("}\n");
    }
    s
}

/// a (100 ms) → b (200 ms), c (100 ms) → d (100 ms): the critical path is 400 ms.
const DIAMOND: &str = r#"
pipeline "diamond"
stage "a" uses="run" {
    command "sleep" "0.1"
}
stage "b" uses="run" {
    command "sh" "-c" "sleep 0.2 # {a.ok}"
}
stage "c" uses="run" {
    command "sh" "-c" "sleep 0.1 # {a.ok}"
}
stage "d" uses="run" {
    command "sh" "-c" "sleep 0.1 # {b.ok} {c.ok}"
}
"#;

/// `n` independent `run` stages, each a `true`: nearly all of their time is starting a child.
fn true_pipeline(n: usize) -> String {
    let mut s = String::from("pipeline \"trues\"\n");
    for i in 0..n {
        s.push_str(&format!(
            "stage \"t{i}\" uses=\"run\" {{\n    command \"true\"\n}}\n"
        ));
    }
    s
}

fn compiled(text: String, registry: &Registry) -> Compiled {
    match compile(Source::new("bench.kdl", text), registry, &Limits::default()) {
        Ok(c) => c,
        Err(_) => panic!("the bench pipeline compiles"),
    }
}

fn options(dir: &std::path::Path) -> RunOptions {
    let mut o = RunOptions::new(dir);
    o.console = ConsoleMode::Quiet;
    o.env = Arc::new(|_| None);
    o
}

fn bench(c: &mut Criterion) {
    // The runtime `reviewflow run` uses.
    let rt = reviewflow_engine::run::runtime().unwrap();
    let registry = registry();
    let mut impls = Implementations::with_builtins();
    impls.register("bench/noop", Arc::new(Noop));
    let dir = tempfile::tempdir().unwrap();

    let noop = compiled(noop_pipeline(1000), &registry);
    c.bench_function("run 1000 no-op stages", |b| {
        b.iter(|| {
            let r = rt
                .block_on(execute(&noop, &registry, &impls, options(dir.path())))
                .unwrap();
            assert_eq!(r.status, RunStatus::Succeeded);
        })
    });

    let diamond = compiled(DIAMOND.to_string(), &registry);
    let mut g = c.benchmark_group("diamond");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    g.bench_function("sleep diamond (critical path 400 ms)", |b| {
        b.iter(|| {
            let r = rt
                .block_on(execute(&diamond, &registry, &impls, options(dir.path())))
                .unwrap();
            assert_eq!(r.status, RunStatus::Succeeded);
        })
    });
    g.finish();

    // The same 1,000 children with and without confinement (no new privileges, capabilities
    // dropped, a Landlock ruleset, a parent-death signal, the orphan sweep at each stage's end):
    // the difference divided by 1,000 is the cost per stage.
    let trues = compiled(true_pipeline(1000), &registry);
    let mut g = c.benchmark_group("1000 true stages");
    g.sample_size(10).measurement_time(Duration::from_secs(40));
    for (label, confine) in [("confined", true), ("unconfined", false)] {
        g.bench_function(label, |b| {
            b.iter(|| {
                let mut o = options(dir.path());
                o.confine_children = confine;
                let r = rt.block_on(execute(&trues, &registry, &impls, o)).unwrap();
                assert_eq!(r.status, RunStatus::Succeeded);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
