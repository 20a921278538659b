//! The front door: source text → compiled pipeline → findings.

use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::check;
use crate::finding::{Finding, Label, Severity};
use crate::graph::Dag;
use crate::lower::{Fact, lower};
use crate::model::Pipeline;
use crate::registry::Registry;
use crate::source::Source;
use crate::syntax::{Limits, parse_document};

/// A pipeline that parsed: its model, its DAG and what lowering noticed.
#[derive(Debug)]
pub struct Compiled {
    pub source: Source,
    pub pipeline: Pipeline,
    pub dag: Dag,
    pub facts: Vec<Fact>,
}

/// Why a file could not be compiled at all (exit 2).
#[derive(Debug)]
pub struct Unusable {
    pub source: Source,
    pub findings: Vec<Finding>,
}

/// Decodes `bytes` as UTF-8, reporting where it is not.
pub fn decode(name: &str, bytes: Vec<u8>) -> Result<Source, Unusable> {
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Source::new(name, text)),
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let lossy = String::from_utf8_lossy(e.as_bytes()).into_owned();
            // The lossy text keeps the valid prefix byte for byte, so the offset still points.
            let source = Source::new(name, lossy);
            let finding = Finding::new(
                check::SYNTAX,
                Severity::Error,
                "the file is not UTF-8",
                Label::new(
                    crate::span::Span::new(valid, 1),
                    "invalid UTF-8 starts here",
                ),
            )
            .help("save the file as UTF-8");
            Err(Unusable {
                source,
                findings: vec![finding],
            })
        }
    }
}

/// Parses and lowers `source`.
pub fn compile(source: Source, registry: &Registry, limits: &Limits) -> Result<Compiled, Unusable> {
    let doc = match parse_document(source.text(), limits) {
        Ok(doc) => doc,
        Err(errors) => {
            let findings = errors
                .into_iter()
                .map(|e| {
                    Finding::new(
                        check::SYNTAX,
                        Severity::Error,
                        e.message,
                        Label::new(e.span, e.label),
                    )
                    .maybe_help(e.help)
                })
                .collect();
            return Err(Unusable { source, findings });
        }
    };
    let (pipeline, facts) = lower(&doc, &source, registry);
    // A large document takes a while to free, and nothing waits for it: free it elsewhere.
    if source.text().len() > 64 << 10
        && let Ok(freeing) = std::thread::Builder::new()
            .name("kdl-drop".into())
            .spawn(move || drop(doc))
    {
        let mut threads = FREEING.lock().unwrap_or_else(PoisonError::into_inner);
        // Those that ended are let go (dropping a handle detaches its thread): a process that
        // compiles many large files keeps no more handles than threads still freeing.
        threads.retain(|t| !t.is_finished());
        threads.push(freeing);
    }
    let dag = Dag::build(&pipeline);
    Ok(Compiled {
        source,
        pipeline,
        dag,
        facts,
    })
}

/// The threads [`compile`] frees large documents on.
static FREEING: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// Waits until every document [`compile`] handed to a thread of its own is freed and the thread
/// has ended. A caller that must be the process's only thread (before a `fork`) calls it first.
pub fn settle() {
    let freeing = std::mem::take(&mut *FREEING.lock().unwrap_or_else(PoisonError::into_inner));
    for thread in freeing {
        let _ = thread.join();
    }
}

/// How suppressions apply.
#[derive(Clone, Copy, Debug, Default)]
pub struct CheckOptions {
    /// Report suppressed findings as live (`--no-suppress`).
    pub no_suppress: bool,
}

/// Runs every check; findings come sorted by position, suppressions applied, and findings that
/// only follow from an unknown name folded into the finding about that name
/// ([`crate::cascade`]).
pub fn run_checks(compiled: &Compiled, registry: &Registry, options: CheckOptions) -> Vec<Finding> {
    let mut findings = check::run_all(
        &compiled.source,
        &compiled.pipeline,
        &compiled.dag,
        &compiled.facts,
        registry,
    );
    if options.no_suppress {
        // A check may show a finding as allowed by what the pipeline vouches for (`trusted`).
        for f in &mut findings {
            f.suppressed = None;
        }
    }
    let wrong = check::apply_allows(&compiled.pipeline, &mut findings, !options.no_suppress);
    crate::cascade::fold(
        &compiled.source,
        &compiled.pipeline,
        &compiled.facts,
        registry,
        &mut findings,
    );
    // After the fold: an `allow` that hides nothing is its own mistake, not a consequence of a
    // misspelt name (the fold's second pass never applies the `allow`s).
    findings.extend(wrong);
    findings.sort_by(|a, b| {
        a.primary
            .span
            .offset
            .cmp(&b.primary.span.offset)
            .then_with(|| a.check.cmp(b.check))
            .then_with(|| a.message.cmp(&b.message))
    });
    findings.dedup();
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn large() -> Source {
        let mut text = String::from("pipeline \"large\"\nstage \"one\" uses=\"run\" {\n");
        while text.len() <= 64 << 10 {
            text.push_str("    command \"true\" \"an argument long enough to fill the file\"\n");
        }
        text.push_str("}\n");
        Source::new("large.kdl", text)
    }

    fn freeing() -> Vec<std::thread::ThreadId> {
        FREEING
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|t| t.thread().id())
            .collect()
    }

    /// A thread that freed its document is let go at the next large compile: the handles kept
    /// are those of threads still freeing (a fuzzer compiles large files without end).
    #[test]
    fn a_thread_that_ended_is_not_kept() {
        let registry = Registry::with_builtins();
        let limits = Limits::default();
        let before = freeing();
        compile(large(), &registry, &limits).expect("compiles");
        let first = freeing()
            .into_iter()
            .find(|id| !before.contains(id))
            .expect("a thread frees the document");
        // Until that thread has ended (it only frees a document).
        while FREEING
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|t| t.thread().id() == first && !t.is_finished())
        {
            std::thread::yield_now();
        }
        compile(large(), &registry, &limits).expect("compiles");
        assert!(
            !freeing().contains(&first),
            "the ended thread is still kept"
        );
    }
}
