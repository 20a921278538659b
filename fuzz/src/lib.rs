//! The fuzz harnesses: each takes arbitrary bytes through one path that reads hostile input and
//! must end in a value or an error, never a panic, a hang or unbounded memory. The libFuzzer
//! binaries (`fuzz_targets/`) call these; `tests/replay.rs` calls them on stable for every input
//! in `regressions/` and `seeds/`, so a crash once found stays fixed.

use reviewflow_engine::render::{Drawing, GraphFormat, render_graph};
use reviewflow_engine::report::{self, Style};
use reviewflow_engine::syntax::{Limits, check_limits, parse_document, parse_fast};
use reviewflow_engine::{CheckOptions, Registry, compile, decode, run_checks};
use reviewflow_stdlib::platform::github::commands as github;
use reviewflow_stdlib::sarif;
use std::sync::{Mutex, OnceLock};

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(reviewflow_stdlib::registry)
}

/// Where `REVIEWFLOW_FUZZ_LAST` names a file, each input is written there before it runs: an
/// input that kills the process before libFuzzer can save it (a stack overflow without the
/// sanitizer, where nothing handles the SIGSEGV) is then still on disk. Unset, this does nothing.
pub fn keep_last(data: &[u8]) {
    use std::io::{Seek, SeekFrom, Write};
    static LAST: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();
    let last = LAST.get_or_init(|| {
        let path = std::env::var_os("REVIEWFLOW_FUZZ_LAST")?;
        std::fs::File::create(path).ok().map(Mutex::new)
    });
    let Some(Ok(mut file)) = last.as_ref().map(Mutex::lock) else {
        return;
    };
    // Best effort: a failed write costs only the copy, never the run.
    let _ = file.seek(SeekFrom::Start(0));
    let _ = file.write_all(data);
    let _ = file.set_len(data.len() as u64);
}

/// Bytes as a pipeline file: compile, every check, and every output format `check` and `graph`
/// write (human in both styles, JSON, SARIF, GitHub workflow commands, mermaid, dot, text, the
/// model document).
pub fn pipeline(data: &[u8]) {
    let registry = registry();
    let (source, findings, compiled) = match decode("fuzz.kdl", data.to_vec())
        .and_then(|source| compile(source, registry, &Limits::default()))
    {
        Ok(compiled) => {
            let findings = run_checks(&compiled, registry, CheckOptions::default());
            for format in [GraphFormat::Mermaid, GraphFormat::Dot, GraphFormat::Text] {
                let drawing = Drawing {
                    pipeline: &compiled.pipeline,
                    dag: &compiled.dag,
                    registry,
                };
                std::hint::black_box(render_graph(&drawing, format));
            }
            let model = reviewflow_engine::emit::model_document(&compiled);
            std::hint::black_box(serde_json::to_string(&model).ok());
            (compiled.source.clone(), findings, true)
        }
        Err(unusable) => (unusable.source, unusable.findings, false),
    };
    for style in [Style::Plain, Style::Color] {
        std::hint::black_box(report::render_human(&source, &findings, style));
    }
    std::hint::black_box(report::summary_line(&findings));
    let json = report::file_findings(&source, &findings, !compiled);
    std::hint::black_box(serde_json::to_string(&json).ok());
    let files = [(&source, findings.as_slice())];
    // The text `check --format sarif` prints, built as the command builds it.
    std::hint::black_box(sarif::sarif_text_at(
        &files,
        &sarif::SrcRoot::filesystem(),
        "0.0.0",
    ));
    std::hint::black_box(github::workflow_commands(&files));
}

/// Bytes as a pipeline file, through the syntax layer and lowering only (no checks, no
/// outputs), fast enough for thousands of inputs a second: the pre-scan, the fast path or kdl,
/// and the model. The fast path also runs alone, whatever the pre-scan said of the text.
pub fn parse(data: &[u8]) {
    let Ok(source) = decode("fuzz.kdl", data.to_vec()) else {
        return;
    };
    std::hint::black_box(parse_fast(source.text()).is_some());
    let compiled = compile(source, registry(), &Limits::default());
    std::hint::black_box(compiled.is_ok());
}

/// Bytes as KDL, read by the fast path and by kdl: wherever the fast path accepts a text, kdl
/// accepts it too and builds the same document, spans included. kdl only reads what the
/// pre-scan lets through, as in `check`, and only what the fast path accepted: a declined text
/// has nothing to compare, and kdl reading it (most of a fuzzed input's time) is what the
/// `parse` target exercises.
pub fn kdl_differential(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if check_limits(text, &Limits::default()).is_err() {
        return;
    }
    let Some(fast) = parse_fast(text) else {
        return;
    };
    let slow = kdl::KdlDocument::parse_v2(text);
    let Ok(slow) = slow else {
        panic!("the fast path accepted what kdl refuses: {text:?}");
    };
    assert_eq!(fast, slow, "{text:?}");
    assert_eq!(spans(&fast), spans(&slow), "{text:?}");
}

/// Every span of a document, in order (kdl's own equality leaves them out).
fn spans(doc: &kdl::KdlDocument) -> Vec<(usize, usize)> {
    let span = |s: miette::SourceSpan| (s.offset(), s.len());
    let mut out = vec![span(doc.span())];
    for node in doc.nodes() {
        out.push(span(node.span()));
        out.push(span(node.name().span()));
        for entry in node.entries() {
            out.push(span(entry.span()));
            out.extend(entry.name().map(|n| span(n.span())));
        }
        if let Some(children) = node.children() {
            out.extend(spans(children));
        }
    }
    out
}

/// Bytes as KDL, read by the pre-scan and by the parser: what the pre-scan lets through, the
/// parser reads as no more nodes and entries than the pre-scan counted tokens, and no deeper
/// than it counted blocks (a string or comment the two ended in different places would break
/// one or the other); what the pre-scan refuses as a string or comment left open, kdl refuses
/// too (in a text of at most four slashdashes and as many braces as the pre-scan lets nest,
/// which kdl reads in bounded time and stack unguarded).
pub fn prescan_parser(data: &[u8]) {
    use reviewflow_engine::syntax::{LimitError, Malformed};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let limits = Limits::default();
    match check_limits(text, &limits) {
        Ok(scan) => {
            let Ok(doc) = parse_document(text, &limits) else {
                return;
            };
            let (items, depth) = shape(&doc, 0);
            assert!(
                items <= scan.tokens,
                "{items} nodes and entries, {} tokens counted: {text:?}",
                scan.tokens
            );
            assert!(
                depth <= scan.depth,
                "{depth} levels, {} counted: {text:?}",
                scan.depth
            );
        }
        // `#"""x"#` is the one malformed string kdl reads (a decided divergence). kdl reads the
        // whole text here, past where the pre-scan stopped counting: nested slashdashes there
        // double its time (the pathology the pre-scan bounds), so a text with more than a few
        // is left out rather than left to run for minutes; so is a text of more braces than
        // the pre-scan lets nest, where kdl's recursion overflows the stack (`check` never
        // gives kdl such a text: the pre-scan refuses it first).
        Err(LimitError::Malformed { span, what })
            if !(what == Malformed::MultiLineOpening
                && text.as_bytes().get(span.offset) == Some(&b'#'))
                && text.matches("/-").count() <= 4
                && text.matches('{').count() <= limits.max_depth =>
        {
            assert!(
                kdl::KdlDocument::parse_v2(text).is_err(),
                "the pre-scan found something left open where kdl did not: {text:?}"
            );
        }
        Err(_) => {}
    }
}

/// Nodes and entries in a document, and how deep its children blocks go.
fn shape(doc: &kdl::KdlDocument, level: usize) -> (usize, usize) {
    let mut items = 0;
    let mut depth = level;
    for node in doc.nodes() {
        items += 1 + node.entries().len();
        if let Some(children) = node.children() {
            let (i, d) = shape(children, level + 1);
            items += i;
            depth = depth.max(d);
        }
    }
    (items, depth)
}

const SECRET: &[u8] = b"fuzz-secret-fuzz-secret-fuzz-secret-0123";

/// Bytes as a sealed envelope to open, and, unsealed, as a bundle to read.
pub fn envelope(data: &[u8]) {
    use reviewflow_stdlib::conversation::read_bundle;
    use reviewflow_stdlib::envelope::{Binding, open_in_place};
    let Ok(binding) = Binding::from_pairs([("repo", "o/r"), ("pr", "1"), ("project", "p")]) else {
        return;
    };
    let mut buf = data.to_vec();
    let _ = open_in_place(SECRET, 32, &binding, 1 << 20, &mut buf);
    std::hint::black_box(read_bundle(data).ok());
}

/// Bytes as `git diff` output: the parser, and what the gate and the rules read of it.
pub fn diff(data: &[u8]) {
    let diff = reviewflow_stdlib::diff::parse(data);
    std::hint::black_box((diff.totals().lines_changed(), diff.is_clean()));
    for file in &diff.files {
        std::hint::black_box(diff.file(file.path()));
    }
}

/// Bytes as what a reviewer hands back: `result.json`, a model's answer, the local forge's
/// `posted.json` and a comment that may carry a marker.
pub fn reviewer(data: &[u8]) {
    use reviewflow_stdlib::forge::PostedReview;
    use reviewflow_stdlib::forge::github::Marker;
    use reviewflow_stdlib::reviewer::model::parse_answer;
    use reviewflow_stdlib::reviewer::result::ReviewResult;
    std::hint::black_box(ReviewResult::parse(data).ok());
    std::hint::black_box(PostedReview::parse(data, "1").ok());
    if let Ok(text) = std::str::from_utf8(data) {
        std::hint::black_box(parse_answer(text).ok());
        std::hint::black_box(Marker::parse_body(text));
    }
}
