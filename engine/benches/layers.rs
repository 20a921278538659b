//! What each isolation layer costs a child or a stage (docs/performance.md), measured on its own:
//! a cgroup made, joined by nothing and ended (per child); a network namespace with loopback up
//! (per stage); a child's mount namespace over a run's work root (per child).
//!
//! `cargo bench -p reviewflow-engine --bench layers`. Each needs root; a layer this process
//! cannot make is skipped with a line saying so.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use reviewflow_engine::exec::confine::cgroup::ChildCgroup;
use reviewflow_engine::exec::confine::namespaces::{self, StageNet, View};

fn layers(c: &mut Criterion) {
    let mut group = c.benchmark_group("layers");
    match ChildCgroup::create() {
        Ok(Some(first)) => {
            drop(first);
            group.bench_function("cgroup per child", |b| {
                b.iter(|| {
                    let child = ChildCgroup::create().expect("create");
                    black_box(child);
                });
            });
        }
        other => println!("cgroup: not held here ({other:?}); skipped"),
    }
    if let Err(why) = namespaces::available() {
        println!("namespaces: {why}; skipped");
        group.finish();
        return;
    }
    group.bench_function("network namespace per stage", |b| {
        b.iter(|| black_box(StageNet::create().expect("netns")));
    });
    let temp = tempfile::tempdir().expect("tempdir");
    let root = temp.path().join("reviewflow-bench");
    let work = root.join("stage-x");
    std::fs::create_dir_all(&work).expect("mkdir");
    let view = View {
        work: Some(work),
        work_root: Some(root),
        write: Vec::new(),
        cover: vec![
            temp.path().join("absent"),
            std::path::PathBuf::from("/root/.cache"),
        ],
    };
    group.bench_function("mount namespace per child", |b| {
        b.iter(|| black_box(namespaces::build_view(&view).expect("view")));
    });
    group.finish();
}

criterion_group!(benches, layers);
criterion_main!(benches);
