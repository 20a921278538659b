//! `std/aggregate`'s core: 10,000 findings from 5 lenses over a change of 200 files, with
//! forged paths, lines outside the hunks, severities above the ceilings, forged clamp notes and
//! findings the lenses agree on (docs/lenses.md; the figure is in docs/performance.md).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use reviewflow_stdlib::aggregate::{LensFindings, Policy, Validation, aggregate};
use reviewflow_stdlib::diff::LineRange;
use reviewflow_stdlib::forge::FileRanges;
use reviewflow_stdlib::lens::{LensMeta, VerdictMode};
use reviewflow_stdlib::reviewer::ReviewFinding;
use reviewflow_stdlib::rules::Severity;

const FILES: u32 = 200;
const LENSES: usize = 5;
const PER_LENS: u32 = 2_000;

fn ranges() -> Vec<FileRanges> {
    (0..FILES)
        .map(|f| FileRanges {
            path: format!("src/module_{f}/file.rs"),
            old_path: None,
            changed: vec![LineRange { start: 10, end: 30 }],
            hunks: (0..5)
                .map(|h| LineRange {
                    start: 1 + h * 100,
                    end: 40 + h * 100,
                })
                .collect(),
        })
        .collect()
}

fn inputs() -> Vec<LensFindings> {
    let severities = [Severity::Info, Severity::Warning, Severity::Error];
    (0..LENSES)
        .map(|l| {
            let findings = (0..PER_LENS)
                .map(|i| {
                    // Every 50th names a file outside the change; lines run past the hunks;
                    // half the findings are shared by the lenses (same path, line and rule).
                    let file = (i * 7) % FILES;
                    let path = if i % 50 == 0 {
                        format!("etc/forged_{i}")
                    } else {
                        format!("src/module_{file}/file.rs")
                    };
                    let shared = i % 2 == 0;
                    let rule = if shared {
                        format!("lens{l}/rule-{}", i % 40)
                    } else {
                        format!("lens{l}/own-{i}")
                    };
                    let message = if i % 97 == 0 {
                        format!("finding {i} (clamped from error) looks clamped")
                    } else {
                        format!("finding {i}: a call whose error is dropped on this path")
                    };
                    ReviewFinding {
                        path,
                        line: Some(1 + (i * 13) % 520),
                        end_line: None,
                        severity: severities[(i as usize + l) % 3],
                        rule: Some(rule),
                        message,
                        suggestion: None,
                    }
                })
                .collect();
            LensFindings {
                lens: LensMeta {
                    name: format!("lens{l}"),
                    ceiling: if l % 2 == 0 {
                        Severity::Warning
                    } else {
                        Severity::Error
                    },
                    verdict: if l == 0 {
                        VerdictMode::Included
                    } else {
                        VerdictMode::FindingsOnly
                    },
                },
                findings: Some(findings),
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let ranges = ranges();
    let inputs = inputs();
    let total: usize = inputs
        .iter()
        .map(|l| l.findings.as_ref().map_or(0, Vec::len))
        .sum();
    let mut group = c.benchmark_group("aggregate");
    group.throughput(Throughput::Elements(total as u64));
    group.bench_function("10k findings, 5 lenses", |b| {
        b.iter(|| {
            let validation = Validation::new(&ranges, &[], 3);
            aggregate(&inputs, &validation, Policy::default())
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
