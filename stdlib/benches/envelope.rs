//! Throughput of sealing and opening a 64 MiB conversation in place.

// Benches abort on setup failure.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use reviewflow_stdlib::envelope::{Binding, OVERHEAD, SealKey};

const LEN: usize = 64 << 20;

fn envelope(c: &mut Criterion) {
    let key = SealKey::derive(&[0x5a; 32], 32).unwrap();
    let binding = Binding::new()
        .with("repo", "octo-org/widgets")
        .unwrap()
        .with("pr", "42")
        .unwrap()
        .with("project", "enroll")
        .unwrap();
    let plaintext: Vec<u8> = (0..LEN).map(|i| (i * 31 % 251) as u8).collect();
    let mut blob = plaintext.clone();
    key.seal_in_place(&binding, &mut blob).unwrap();

    let mut group = c.benchmark_group("envelope-64MiB");
    group.throughput(Throughput::Bytes(LEN as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));

    // The caller left OVERHEAD bytes of spare capacity: one memmove, no allocation.
    group.bench_function("seal_in_place", |b| {
        b.iter_batched_ref(
            || {
                let mut buf = Vec::with_capacity(LEN + OVERHEAD);
                buf.extend_from_slice(&plaintext);
                buf
            },
            |buf| key.seal_in_place(&binding, black_box(buf)).unwrap(),
            BatchSize::PerIteration,
        );
    });
    // No spare capacity: one copy into a new allocation, and the old one is zeroized.
    group.bench_function("seal_exact_capacity", |b| {
        b.iter_batched_ref(
            || plaintext.clone(),
            |buf| key.seal_in_place(&binding, black_box(buf)).unwrap(),
            BatchSize::PerIteration,
        );
    });
    group.bench_function("open_in_place", |b| {
        b.iter_batched_ref(
            || blob.clone(),
            |buf| {
                key.open_in_place(&binding, usize::MAX, black_box(buf))
                    .unwrap()
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, envelope);
criterion_main!(benches);
