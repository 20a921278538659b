//! What reading an answer's usage costs the model API proxy: a streamed answer of about 1 MiB
//! (text deltas, as an answer's events are), fed to the tap in the frames the API sends.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use reviewflow_stdlib::reviewer::usage::UsageTap;

/// Anthropic's event stream: `message_start`, then text deltas of about 100 bytes, then
/// `message_delta` with the usage.
fn answer() -> Vec<u8> {
    let mut s = String::from(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1200,\"output_tokens\":1}}}\n\n",
    );
    let mut i = 0;
    while s.len() < 1 << 20 {
        s.push_str(&format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"line {i} of the review, with some words in it\"}}}}\n\n"
        ));
        i += 1;
    }
    s.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9000}}\n\n");
    s.into_bytes()
}

fn tap(c: &mut Criterion) {
    let body = answer();
    let mut group = c.benchmark_group("usage");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("tap a streamed answer of 1 MiB", |b| {
        b.iter(|| {
            let mut tap = UsageTap::default();
            // Frames of 4 KiB, as the API's chunks arrive.
            for frame in body.chunks(4096) {
                tap.feed(frame);
            }
            tap.finish()
        });
    });
    group.finish();
}

criterion_group!(benches, tap);
criterion_main!(benches);
