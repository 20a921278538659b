//! Finding identity (docs/findings.md): fingerprints, path-free prints and the comparison with a
//! baseline for a review of 1,000 findings (the most a reviewer reports) over 100 files of
//! 2,000 lines each, the files already read.

use criterion::{Criterion, criterion_group, criterion_main};
use reviewflow_stdlib::forge::baseline::{LOCAL_BASELINE_BYTES, compare};
use reviewflow_stdlib::forge::identity::moved_prints;
use reviewflow_stdlib::forge::{Baseline, HeadFiles, ReviewFinding, fingerprint_all};
use reviewflow_stdlib::rules::Severity;

fn inputs() -> (Vec<(String, String)>, Vec<ReviewFinding>) {
    let files: Vec<(String, String)> = (0..100)
        .map(|f| {
            let text: String = (0..2000)
                .map(|l| format!("    let value_{l} = compute({f}, {l}); // TODO {}\n", l % 7))
                .collect();
            (format!("src/file_{f}.rs"), text)
        })
        .collect();
    let findings = (0..1000u32)
        .map(|i| ReviewFinding {
            rule: "todo-added".into(),
            severity: Severity::Info,
            path: format!("src/file_{}.rs", i % 100),
            line: Some(1 + (i * 17) % 2000),
            end_line: None,
            message: "`TODO` added".into(),
            fingerprint: None,
            state: None,
            dialogue: None,
            suggestion: None,
        })
        .collect();
    (files, findings)
}

fn identity(c: &mut Criterion) {
    let (texts, findings) = inputs();
    let files = HeadFiles::from_texts(texts.iter().map(|(p, t)| (p.as_str(), t.as_str())));
    let mut before = findings.clone();
    fingerprint_all(&mut before, &files);
    let baseline = Baseline::of(
        &before,
        &moved_prints(&before, &files),
        LOCAL_BASELINE_BYTES,
    );
    c.bench_function(
        "identity/1000 findings: fingerprint, compare, baseline",
        |b| {
            b.iter(|| {
                let mut now = findings.clone();
                fingerprint_all(&mut now, &files);
                let moved = moved_prints(&now, &files);
                let resolved = compare(&mut now, &moved, Some(&baseline));
                let kept = Baseline::of(&now, &moved, LOCAL_BASELINE_BYTES);
                (resolved, kept)
            })
        },
    );
}

criterion_group!(benches, identity);
criterion_main!(benches);
