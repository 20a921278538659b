//! What each isolation layer costs a child or a stage (docs/performance.md), measured on its own:
//! a cgroup made, joined by nothing and ended (per child); a network namespace with loopback up
//! (per stage); a child's mount namespace over a run's work root (per child), copied from the
//! run's template, made from nothing, and the run's shared view entered; a stage's PID namespace with its init, made and ended:
//! SIGTERM to the init, which finds the namespace empty and exits, and its reaping (per stage,
//! where the cgroup layer is missing); a stage's IPC namespace, made (per stage, or once for the
//! stages that hold no secret); the seccomp filter that takes the kernel keyring away, installed
//! by a forked child, against the same child without it (per child).
//!
//! `cargo bench -p reviewflow-engine --bench layers`. As root, or as any user where the kernel
//! lets it make a user namespace (the namespaces are then made in it: run the bench binary as
//! such a user to compare); a layer this process cannot make is skipped with a line saying so.
//! The user namespace itself is made once per process: its time is printed, not benched.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use reviewflow_engine::exec::confine::cgroup::ChildCgroup;
use reviewflow_engine::exec::confine::keyring;
use reviewflow_engine::exec::confine::namespaces::{self, StageIpc, StageNet, View, ViewPath};
use reviewflow_engine::exec::confine::pidns::StagePids;

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
    if let Some(filter) = keyring::filter() {
        group.bench_function("keyring filter per child (a forked child with it)", |b| {
            b.iter(|| forked(Some(filter)));
        });
        group.bench_function(
            "keyring filter per child (the same child without it)",
            |b| {
                b.iter(|| forked(None));
            },
        );
    } else {
        println!("keyring filter: not built for this architecture; skipped");
    }
    let first = std::time::Instant::now();
    if let Err(why) = namespaces::available() {
        println!("namespaces: {why}; skipped");
        group.finish();
        return;
    }
    println!(
        "namespaces made {}: the first (the probe, with the user namespace where there is one) took {:?}",
        namespaces::made_by(),
        first.elapsed()
    );
    // As in a run: the engine is a subreaper, so it adopts the init and reaps it (otherwise
    // the init is adopted by the host's init, and its end is neither waited for nor measured).
    if let Err(e) = reviewflow_engine::exec::confine::reaper::become_subreaper() {
        println!("cannot become a subreaper ({e}): the PID namespace's end is not measured");
    }
    group.bench_function("pid namespace per stage", |b| {
        b.iter(|| drop(black_box(StagePids::create().expect("pidns"))));
    });
    group.bench_function("network namespace per stage", |b| {
        b.iter(|| black_box(StageNet::create().expect("netns")));
    });
    group.bench_function("ipc namespace per stage", |b| {
        b.iter(|| black_box(StageIpc::create().expect("ipcns")));
    });
    let temp = tempfile::tempdir().expect("tempdir");
    let root = temp.path().join("reviewflow-bench");
    let pivot = root.join(namespaces::PIVOT);
    let work = root.join("stage-x");
    std::fs::create_dir_all(&work).expect("mkdir");
    // What an `echo` stage's child reaches: the system folders, a few devices, its folder.
    let reached = [
        "/usr",
        "/etc",
        "/opt",
        "/dev/null",
        "/dev/zero",
        "/dev/urandom",
    ]
    .iter()
    .map(std::path::PathBuf::from)
    .filter(|p| p.exists())
    .map(|path| ViewPath {
        path,
        writable: false,
    })
    .chain(std::iter::once(ViewPath {
        path: work.clone(),
        writable: true,
    }))
    .collect();
    let view = View {
        work: Some(work.clone()),
        work_root: Some(root.clone()),
        reached,
        cover: vec![temp.path().join("absent")],
        named: vec![std::path::PathBuf::from("/bin/echo"), work],
    };
    // As root, copied from the run's template (made by the first iteration); otherwise made
    // from nothing, as the next.
    group.bench_function("mount namespace per child", |b| {
        b.iter(|| black_box(namespaces::build_view(&view).expect("view")));
    });
    group.bench_function("mount namespace per child, made from nothing", |b| {
        b.iter(|| black_box(namespaces::build_view_from_nothing(&view).expect("view")));
    });
    // As root with the work folders in memory: the run's shared view, entered (the stages told
    // apart by group; the work root holds the folder the view's root is mounted on).
    std::fs::create_dir(&pivot).expect("mkdir");
    if namespaces::enter_shared_view(&view).is_ok_and(|v| v.is_some()) {
        group.bench_function("mount namespace per child, shared view entered", |b| {
            b.iter(|| black_box(namespaces::enter_shared_view(&view).expect("view")));
        });
    } else {
        println!("shared view: not made here (not root); skipped");
    }
    group.finish();
}

/// A child as a confined one is before its `execve`, as far as the filter goes: `no_new_privs`,
/// then the filter or not, then its exit; the parent waits for it.
fn forked(filter: Option<&'static [libc::sock_filter]>) {
    // SAFETY: the child makes system calls only, then `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        // SAFETY: system calls only; `filter` is the engine's static.
        unsafe {
            let nnp = libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0;
            let installed = filter.is_none_or(|f| keyring::install(f).is_ok());
            libc::_exit(if nnp && installed { 0 } else { 1 });
        }
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    let waited = unsafe { libc::waitpid(pid, &raw mut status, 0) };
    assert!(
        waited == pid && status == 0,
        "the forked child failed: {status}"
    );
}

criterion_group!(benches, layers);
criterion_main!(benches);
