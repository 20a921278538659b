//! Throughput of the scanner, the diff parser and the rules reviewer on generated input.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use reviewflow_stdlib::detect::{DetectorId, NamedSecret, scan};
use reviewflow_stdlib::diff::parse;
use reviewflow_stdlib::rules::{RulesConfig, review};

/// About 1 MiB of code-like text with a synthetic token every ~1000 lines.
fn text() -> Vec<u8> {
    let mut t = Vec::new();
    let mut i = 0;
    while t.len() < 1 << 20 {
        let line = match i % 1000 {
            7 => "    let token = \"ghp_0123456789abcdefghijklmnopqrstuvwxyz\";\n".to_owned(),
            500 => "    auth: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWtlIn0.FAKE-signature_0123456789\n"
                .to_owned(),
            _ => format!(
                "    let value_{i} = compute(sk, \"eyJ{i}\", KEY_{i}).await?; // note {i}\n"
            ),
        };
        t.extend_from_slice(line.as_bytes());
        i += 1;
    }
    t
}

/// A diff adding every line of `text` to one of 50 files.
fn diff(text: &[u8]) -> Vec<u8> {
    let lines: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let per = lines.len() / 50;
    let mut d = Vec::new();
    for (f, chunk) in lines.chunks(per).enumerate() {
        d.extend_from_slice(
            format!(
                "diff --git a/src/f{f}.rs b/src/f{f}.rs\nnew file mode 100644\n--- /dev/null\n+++ b/src/f{f}.rs\n@@ -0,0 +1,{} @@\n",
                chunk.len()
            )
            .as_bytes(),
        );
        for l in chunk {
            d.push(b'+');
            d.extend_from_slice(l);
            d.push(b'\n');
        }
    }
    d
}

fn bench(c: &mut Criterion) {
    let text = text();
    let secrets = vec![
        NamedSecret::new(
            "conversation-key",
            b"FAKE-conversation-key-0123456789".to_vec(),
        ),
        NamedSecret::new(
            "github-token",
            b"ghs_FAKEFAKEFAKEFAKEFAKEFAKEFAKEFAKE0000".to_vec(),
        ),
    ];
    let mut g = c.benchmark_group("detect");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("scan all detectors, 1 MiB", |b| {
        b.iter(|| scan(&text, &secrets, &DetectorId::ALL))
    });
    for id in DetectorId::ALL {
        g.bench_function(format!("scan {id}, 1 MiB"), |b| {
            b.iter(|| scan(&text, &secrets, &[id]))
        });
    }
    g.finish();

    let d = diff(&text);
    let mut g = c.benchmark_group("diff");
    g.throughput(Throughput::Bytes(d.len() as u64));
    g.bench_function("parse", |b| b.iter(|| parse(&d)));
    let parsed = parse(&d);
    g.bench_function("rules review", |b| {
        b.iter(|| review(&parsed, &secrets, &RulesConfig::default()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
