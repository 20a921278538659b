//! KDL v2 parsing with the limits applied first and a deadline as a backstop.

use std::time::Duration;

use kdl::KdlDocument;

use super::guard::{LimitError, Limits, check_limits};
use crate::span::Span;

/// One reason a file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub span: Span,
    pub message: String,
    pub label: String,
    pub help: Option<String>,
}

/// The parser runs on its own thread (a large stack, and a deadline): no pathological input can
/// hang or crash the process. On a deadline the thread is left to finish alone; the caller is
/// expected to exit soon after reporting.
const DEADLINE: Duration = Duration::from_secs(10);
const PARSER_STACK: usize = 64 << 20;

/// Parses `text` as KDL v2. Every syntax error the parser found is returned, not only the first.
pub fn parse_document(text: &str, limits: &Limits) -> Result<KdlDocument, Vec<SyntaxError>> {
    if let Err(e) = check_limits(text, limits) {
        return Err(vec![limit_error(e)]);
    }
    // Small files parse inline; the thread is for what could be slow.
    if text.len() < 64 << 10 {
        return parse_now(text);
    }
    let owned = text.to_owned();
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("kdl-parse".into())
        .stack_size(PARSER_STACK)
        .spawn(move || {
            let _ = tx.send(parse_now(&owned));
        });
    if spawned.is_err() {
        return parse_now(text);
    }
    match rx.recv_timeout(DEADLINE) {
        Ok(result) => result,
        Err(_) => Err(vec![SyntaxError {
            span: Span::new(0, 0),
            message: format!("the file took longer than {}s to parse", DEADLINE.as_secs()),
            label: "parsing stopped".into(),
            help: Some("simplify the file: nested slash-dashed blocks and very long lines are slow to parse".into()),
        }]),
    }
}

fn parse_now(text: &str) -> Result<KdlDocument, Vec<SyntaxError>> {
    KdlDocument::parse_v2(text).map_err(|err| {
        let mut out: Vec<SyntaxError> = err
            .diagnostics
            .iter()
            .map(|d| SyntaxError {
                span: clamp(d.span.into(), text.len()),
                message: d
                    .message
                    .clone()
                    .unwrap_or_else(|| "not valid KDL v2".into()),
                label: d.label.clone().unwrap_or_else(|| "here".into()),
                help: d.help.clone().or_else(|| v1_hint(text)),
            })
            .collect();
        if out.is_empty() {
            out.push(SyntaxError {
                span: Span::new(0, 0),
                message: "not valid KDL v2".into(),
                label: "here".into(),
                help: v1_hint(text),
            });
        }
        out.sort_by_key(|e| e.span);
        out.dedup();
        out
    })
}

fn clamp(span: Span, len: usize) -> Span {
    let offset = span.offset.min(len);
    Span::new(offset, span.len.min(len - offset))
}

/// KDL v1 habits that v2 rejects, worth a hint.
fn v1_hint(text: &str) -> Option<String> {
    let v1_bool = ["=true", "=false", "=null", " true", " false", " null"];
    v1_bool
        .iter()
        .any(|p| text.contains(p))
        .then(|| "KDL v2 writes keywords with a `#`: #true, #false, #null".to_string())
}

fn limit_error(e: LimitError) -> SyntaxError {
    match e {
        LimitError::TooLarge { bytes, max } => SyntaxError {
            span: Span::new(0, 0),
            message: format!("the file is {bytes} bytes; a pipeline may be at most {max}"),
            label: "file too large".into(),
            help: None,
        },
        LimitError::TooDeep { span, max } => SyntaxError {
            span,
            message: format!("children blocks nest deeper than {max} levels"),
            label: "too deep".into(),
            help: Some("a pipeline needs three or four levels".into()),
        },
        LimitError::SlashdashTooDeep { span, max } => SyntaxError {
            span,
            message: format!("slash-dashed children blocks (`/-{{`) nest deeper than {max} levels"),
            label: "too deep".into(),
            help: Some("delete commented-out blocks instead of nesting them".into()),
        },
        LimitError::StringTooLong { span, bytes, max } => SyntaxError {
            span,
            message: format!("a string of {bytes} bytes; strings may be at most {max}"),
            label: "string too long".into(),
            help: Some("keep long text in a file and name the file".into()),
        },
    }
}
