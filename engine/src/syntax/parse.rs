//! KDL v2 parsing with the limits applied first and a deadline as a backstop.

use std::time::Duration;

use kdl::KdlDocument;

use super::guard::{LimitError, Limits, braces_before, check_limits};
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
    // The common subset of KDL v2, parsed to the same document kdl builds; the rest, and every
    // error, goes to kdl (`fast.rs`).
    if let Some(doc) = super::fast::parse(text) {
        return Ok(doc);
    }
    KdlDocument::parse_v2(text).map_err(|err| {
        // Each brace explained costs a scan of the file: a hostile file of many `}` gets a few.
        let mut braces_left = 8usize;
        let v1 = v1_hint(text);
        let mut out: Vec<SyntaxError> = err
            .diagnostics
            .iter()
            .map(|d| {
                let span = clamp(d.span.into(), text.len());
                let error = SyntaxError {
                    span,
                    message: d
                        .message
                        .clone()
                        .unwrap_or_else(|| "not valid KDL v2".into()),
                    label: d.label.clone().unwrap_or_else(|| "here".into()),
                    help: raw_string_hint(text, span)
                        .or_else(|| d.help.clone())
                        .or_else(|| v1.clone()),
                };
                if braces_left == 0 || text.as_bytes().get(span.offset) != Some(&b'}') {
                    return error;
                }
                braces_left -= 1;
                stray_brace(text, span).unwrap_or(error)
            })
            .collect();
        if out.is_empty() {
            out.push(SyntaxError {
                span: Span::new(0, 0),
                message: "not valid KDL v2".into(),
                label: "here".into(),
                help: v1,
            });
        }
        out.sort_by_key(|e| e.span);
        out.dedup();
        // A v1 raw string derails the parser for the rest of its line: one error says it.
        let at_raw = |e: &SyntaxError| raw_string_hint(text, e.span).is_some();
        if out.iter().any(at_raw) {
            let newlines: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
            let line = |offset: usize| newlines.partition_point(|&n| n < offset);
            let raw_lines: Vec<usize> = out
                .iter()
                .filter(|e| at_raw(e))
                .map(|e| line(e.span.offset))
                .collect();
            out.retain(|e| at_raw(e) || raw_lines.binary_search(&line(e.span.offset)).is_err());
        }
        out
    })
}

fn clamp(span: Span, len: usize) -> Span {
    let offset = span.offset.min(len);
    Span::new(offset, span.len.min(len - offset))
}

const RAW_STRING_HINT: &str =
    "KDL v2 writes raw strings `#\"…\"#`, without the `r` of KDL v1's `r#\"…\"#`";

/// KDL v1 habits that v2 rejects, worth a hint.
fn v1_hint(text: &str) -> Option<String> {
    let v1_bool = ["=true", "=false", "=null", " true", " false", " null"];
    if v1_bool.iter().any(|p| text.contains(p)) {
        return Some("KDL v2 writes keywords with a `#`: #true, #false, #null".to_string());
    }
    let b = text.as_bytes();
    (0..b.len())
        .any(|i| is_v1_raw_string(b, i))
        .then(|| RAW_STRING_HINT.to_string())
}

/// A KDL v1 raw string (`r"…"`, `r#"…"#`) where the parser stopped: v2 spells it `#"…"#`.
fn raw_string_hint(text: &str, span: Span) -> Option<String> {
    let b = text.as_bytes();
    // The parser points at the `r` or just after it.
    [span.offset, span.offset.wrapping_sub(1)]
        .into_iter()
        .any(|i| is_v1_raw_string(b, i))
        .then(|| RAW_STRING_HINT.to_string())
}

/// `r`, then `#`s, then `"`, at `i`, not inside a longer word.
fn is_v1_raw_string(b: &[u8], i: usize) -> bool {
    if b.get(i) != Some(&b'r') {
        return false;
    }
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || matches!(b[i - 1], b'-' | b'_' | b'.')) {
        return false;
    }
    let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
    b.get(i + 1 + hashes) == Some(&b'"')
}

/// A `}` where the parser stopped, said in terms of blocks: that it closes nothing (and which
/// block closed last), or which open block it fails to close.
fn stray_brace(text: &str, span: Span) -> Option<SyntaxError> {
    let braces = braces_before(text, span.offset)?;
    let at = Span::new(span.offset, 1);
    match braces.open {
        None => Some(SyntaxError {
            span: at,
            message: "a `}` with no block to close".into(),
            label: "no block is open here".into(),
            help: Some(match braces.last_closed {
                Some((open, close)) => format!(
                    "the last block, `{}` (line {}), was closed on line {}; delete this `}}` or \
                     the one on line {}",
                    block_head(text, open),
                    line_of(text, open),
                    line_of(text, close),
                    line_of(text, close),
                ),
                None => "no block was opened before it; delete it".into(),
            }),
        }),
        Some(open) => Some(SyntaxError {
            span: at,
            message: format!(
                "this `}}` does not close the block of `{}` (line {})",
                block_head(text, open),
                line_of(text, open)
            ),
            label: "unexpected `}`".into(),
            help: Some(
                "what comes before it on this line is incomplete: finish the node or end it with \
                 a newline or `;`"
                    .into(),
            ),
        }),
    }
}

/// The node a children block at `open` belongs to, shortened to its name and first argument.
fn block_head(text: &str, open: usize) -> String {
    let before = &text[..open];
    let start = before.rfind(['\n', ';', '{']).map_or(0, |i| i + 1);
    let head: Vec<&str> = before[start..].split_whitespace().take(2).collect();
    let head = head.join(" ");
    if head.chars().count() > 40 {
        format!("{}…", head.chars().take(40).collect::<String>())
    } else {
        head
    }
}

/// The 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
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
        LimitError::CommentTooDeep { span, max } => SyntaxError {
            span,
            message: format!("block comments (`/* … */`) nest deeper than {max} levels"),
            label: "too deep".into(),
            help: Some("close each comment before opening another".into()),
        },
        LimitError::SlashdashRunTooLong { span, max } => SyntaxError {
            span,
            message: format!("more than {max} slashdashes (`/-`) in a row"),
            label: "too many".into(),
            help: Some("one `/-` comments out what follows it".into()),
        },
        LimitError::StringTooLong { span, bytes, max } => SyntaxError {
            span,
            message: format!("a string of {bytes} bytes; strings may be at most {max}"),
            label: "string too long".into(),
            help: Some("keep long text in a file and name the file".into()),
        },
        LimitError::TooManyTokens { span, max } => SyntaxError {
            span,
            message: format!("the file has more than {max} tokens"),
            label: "one too many".into(),
            help: Some(
                "a stage takes 10 to 40 tokens: split the pipeline, or generate fewer stages"
                    .into(),
            ),
        },
    }
}
