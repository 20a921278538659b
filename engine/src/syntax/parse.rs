//! KDL v2 parsing with the limits applied first and a deadline as a backstop.

use std::time::Duration;

use kdl::KdlDocument;

use super::guard::{LimitError, Limits, Malformed, Scan, braces_before, check_limits};
use super::lexical;
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
    let scan = check_limits(text, limits).map_err(|e| vec![limit_error(e)])?;
    // The common subset of KDL v2, parsed to the same document kdl builds (`fast.rs`): one pass
    // with bounded nesting, so it needs neither the thread nor the deadline, and what it builds
    // is allocated by this thread (on another, glibc grows a heap of its own a page at a time:
    // a third of `check`'s time for a file of 1,000 stages).
    if let Some(doc) = super::fast::parse(text) {
        return Ok(doc);
    }
    // Small files parse inline; the thread is for what could be slow.
    if text.len() < 64 << 10 {
        return parse_now(text, &scan);
    }
    let owned = text.to_owned();
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("kdl-parse".into())
        .stack_size(PARSER_STACK)
        .spawn(move || {
            let _ = tx.send(parse_now(&owned, &scan));
        });
    if spawned.is_err() {
        return Err(vec![SyntaxError {
            span: Span::new(0, 0),
            message: "no thread could be started to parse the file".into(),
            label: "not parsed".into(),
            help: None,
        }]);
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

/// kdl's parser, for what the fast path declined: the rest of KDL v2, and every error.
fn parse_now(text: &str, scan: &Scan) -> Result<KdlDocument, Vec<SyntaxError>> {
    // After an error kdl resumes where a value could end, inside a string too, and reads the
    // rest of the string as code the pre-scan never counted (`="x { { …"` nested it past its
    // stack). So it first reads a copy whose strings are masked: only the code the pre-scan
    // bounded is left, and its errors are the file's. A copy that parses has the same
    // structure as the file, and the pre-scan has checked every string of the file, so the
    // file then parses without an error to resume from.
    // Its messages quote the file (a block's name), never the copy: offsets are the same.
    // Comments are masked too: after an error kdl may resume inside one, and read braces the
    // pre-scan rightly skipped as blocks (1,300 `{` in a comment after `1.0E` overflowed its stack).
    parse_spaced(
        &mask(text, &scan.strings, &scan.comments),
        text,
        &scan.tight_slashdashes,
    )?;
    parse_spaced(text, text, &scan.tight_slashdashes)
}

/// `text` with each string (`start..end`) replaced by a quoted string of `x`s of the same
/// length, and the inside of each comment by spaces (its delimiters and line ends kept): no
/// quote or brace left inside either for a parser to resume at.
fn mask(text: &str, strings: &[(usize, usize)], comments: &[(usize, usize)]) -> String {
    let mut out = text.as_bytes().to_vec();
    for &(start, end) in strings {
        if let Some(inside) = out.get_mut(start..end) {
            inside.fill(b'x');
            if let Some(first) = inside.first_mut() {
                *first = b'"';
            }
            if let Some(last) = inside.last_mut() {
                *last = b'"';
            }
        }
    }
    for &(start, end) in comments {
        // `//` or `/*` … `*/`: the delimiters stay, so the copy's comments are the file's.
        let closed = usize::from(out.get(start + 1) == Some(&b'*')) * 2;
        if let Some(inside) = out.get_mut(start + 2..end.saturating_sub(closed).max(start + 2)) {
            for byte in inside {
                if *byte != b'\n' && *byte != b'\r' {
                    *byte = b' ';
                }
            }
        }
    }
    // Whole characters were replaced by ASCII: still UTF-8 (if not, nothing is left to parse,
    // which is an error).
    String::from_utf8(out).unwrap_or_else(|_| "{".into())
}

/// KDL v2 accepts a slashdash straight after a value (`"p"/-1`); the kdl crate wants a space
/// there. The text is parsed with a space before each such slashdash, and every span mapped
/// back to the text as written.
/// `shown` is what messages quote: `text`, or the file `text` is a masked copy of.
fn parse_spaced(text: &str, shown: &str, tight: &[usize]) -> Result<KdlDocument, Vec<SyntaxError>> {
    if tight.is_empty() {
        return parse_kdl(text, shown);
    }
    let spaced_copy = |text: &str| {
        let mut spaced = String::with_capacity(text.len() + tight.len());
        let mut from = 0;
        for &at in tight {
            spaced.push_str(&text[from..at]);
            spaced.push(' ');
            from = at;
        }
        spaced.push_str(&text[from..]);
        spaced
    };
    let spaced = spaced_copy(text);
    let spaced_shown = spaced_copy(shown);
    // An offset in the spaced text, as one in the text: each inserted space before it moves it.
    let back = |offset: usize| {
        let mut inserted = 0;
        for (n, &at) in tight.iter().enumerate() {
            if offset > at + n {
                inserted = n + 1;
            }
        }
        offset - inserted
    };
    let span = |s: miette::SourceSpan| {
        let start = back(s.offset());
        start..back(s.offset() + s.len()).max(start)
    };
    match parse_kdl(&spaced, &spaced_shown) {
        Ok(mut doc) => {
            respan(&mut doc, &span);
            Ok(doc)
        }
        Err(mut errors) => {
            for e in &mut errors {
                let r = span(miette::SourceSpan::from((e.span.offset, e.span.len)));
                e.span = clamp(Span::new(r.start, r.end - r.start), text.len());
            }
            Err(errors)
        }
    }
}

/// Every span of `doc`, through `span`.
fn respan(doc: &mut KdlDocument, span: &dyn Fn(miette::SourceSpan) -> std::ops::Range<usize>) {
    doc.set_span(span(doc.span()));
    for node in doc.nodes_mut() {
        node.set_span(span(node.span()));
        let name = span(node.name().span());
        node.name_mut().set_span(name);
        if let Some(ty) = node.ty_mut() {
            let s = span(ty.span());
            ty.set_span(s);
        }
        for entry in node.entries_mut() {
            entry.set_span(span(entry.span()));
            if let Some(name) = entry.name_mut() {
                let s = span(name.span());
                name.set_span(s);
            }
            if let Some(ty) = entry.ty_mut() {
                let s = span(ty.span());
                ty.set_span(s);
            }
        }
        if let Some(children) = node.children_mut() {
            respan(children, span);
        }
    }
}

fn parse_kdl(parsed: &str, text: &str) -> Result<KdlDocument, Vec<SyntaxError>> {
    KdlDocument::parse_v2(parsed).map_err(|err| {
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
            let line = |offset: usize| lexical::line_of(text, offset);
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
    lexical::line_of(text, offset)
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
            message: format!(
                "commented-out children blocks (`/-{{`, or a slash-dashed node's) nest deeper \
                 than {max} levels"
            ),
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
        LimitError::Disallowed {
            span,
            code_point,
            line,
        } => SyntaxError {
            span,
            message: format!(
                "U+{:04X} ({}) on line {line}: KDL forbids this code point anywhere in a file",
                u32::from(code_point),
                lexical::name_of(code_point)
            ),
            label: "forbidden code point".into(),
            help: Some(if lexical::is_bidi_control(code_point) {
                "a direction control reorders how the text around it is displayed, so the file \
                 would read differently on screen from what runs (\"Trojan Source\"); delete it, \
                 or write it as an escape (`\\u{…}`) inside a quoted string"
                    .into()
            } else if code_point == '\u{feff}' {
                "a byte order mark may only open the file; delete this one".into()
            } else {
                "delete it, or write it as an escape (`\\u{…}`) inside a quoted string".into()
            }),
        },
        LimitError::ReservedWord { span, word } => SyntaxError {
            span,
            message: format!("`{word}` cannot be a bare word"),
            label: "reserved".into(),
            help: Some(format!(
                "write the number as `#{word}`, or the string as `\"{word}\"`"
            )),
        },
        LimitError::SlashdashAfterChildren { span } => SyntaxError {
            span,
            message: "after a children block, `/-` can only comment out another children block"
                .into(),
            label: "not a children block after this".into(),
            help: Some(
                "arguments and properties come before the children block: move it there, or \
                 end the node first"
                    .into(),
            ),
        },
        LimitError::Malformed { span, what } => {
            let (message, label, help) = match what {
                Malformed::String => (
                    "this string is never closed",
                    "opened here",
                    "close it with the same quote (and `#`s) it opened with",
                ),
                Malformed::StringLine => (
                    "a newline inside a single-line string",
                    "the string is still open here",
                    "close the string on its line, write the newline as `\\n`, or use a \
                     multi-line string (`\"\"\"` then a newline)",
                ),
                Malformed::MultiLineOpening => (
                    "`\"\"\"` opens a multi-line string and must be followed by a newline",
                    "no newline after this",
                    "start the text on the next line, or write a single-line string",
                ),
                Malformed::Escape => (
                    "an escape KDL does not know",
                    "this `\\`",
                    "KDL escapes are `\\\"`, `\\\\`, `\\b`, `\\f`, `\\n`, `\\r`, `\\t`, `\\s` and `\\u{…}` (one \
                     to six hex digits); write a backslash as `\\\\`, or use a raw string (`#\"…\"#`)",
                ),
                Malformed::Indent => (
                    "a line of this multi-line string does not start with the closing line's \
                     indentation",
                    "here",
                    "every line of a multi-line string starts with the whitespace before its \
                     closing `\"\"\"`, which stands alone on the last line",
                ),
                Malformed::Comment => (
                    "this block comment is never closed",
                    "opened here",
                    "close it with `*/` (block comments nest: one `*/` for each `/*`)",
                ),
            };
            SyntaxError {
                span,
                message: message.into(),
                label: label.into(),
                help: Some(help.into()),
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::{Finding, Label, Severity};
    use crate::report::{Style, render_human};
    use crate::source::Source;
    use crate::syntax::lexical::NEWLINES;

    fn errors(text: &str) -> Vec<SyntaxError> {
        match parse_document(text, &Limits::default()) {
            Ok(_) => panic!("accepted {text:.40?}"),
            Err(errors) => errors,
        }
    }

    /// After an error kdl resumes where it can: inside a comment, thousands of braces the
    /// pre-scan rightly skipped would be blocks nested past any stack. Run on a thread with the
    /// test harness's small stack, so an overflow fails here rather than passing on a larger one.
    #[test]
    fn braces_in_a_comment_after_an_error_are_no_blocks() {
        let braces = "{".repeat(3000);
        let texts: Vec<String> = ["1.0E", "1e", "0x", "1_e", "#tru"]
            .iter()
            .flat_map(|bad| {
                [
                    format!("a {bad}/*{braces}*/\n"),
                    format!("a {bad}/* x /* {braces} */ */\n"),
                    format!("a {bad}//{braces}\nb\n"),
                    format!("a {bad} /*{braces}\n*/ b\n"),
                ]
            })
            .collect();
        let run = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                for text in &texts {
                    assert!(!errors(text).is_empty(), "{text:.20?}");
                }
            })
            .expect("a thread");
        assert!(run.join().is_ok(), "the parse overflowed or accepted");
    }

    /// The diagnostics as `check` shows them.
    fn shown(text: &str) -> String {
        let source = Source::new("review.kdl", text.to_string());
        let findings: Vec<Finding> = errors(text)
            .into_iter()
            .map(|e| {
                Finding::new(
                    "syntax",
                    Severity::Error,
                    e.message,
                    Label::new(e.span, e.label),
                )
                .maybe_help(e.help)
            })
            .collect();
        render_human(&source, &findings, Style::Plain)
    }

    /// The attacks of a `//` comment ended by a newline other than LF, with each newline: each
    /// is refused by the pre-scan, before the parser sees it.
    #[test]
    fn code_after_any_newline_is_bounded() {
        for nl in NEWLINES {
            let nested = format!(
                "pipeline \"p\"\n//{nl}{}{}",
                "a {".repeat(1_400),
                "}".repeat(1_400)
            );
            assert!(
                errors(&nested)[0].message.contains("nest deeper than 32"),
                "{nl:?}"
            );
            let slashdashed = format!("//{nl}{}{}", "a /-{ ".repeat(20), "}".repeat(20));
            assert!(
                errors(&slashdashed)[0].message.contains("slash-dashed"),
                "{nl:?}"
            );
            let lines = format!("//{nl}{}", format!("a 1{nl}").repeat(1_000_000));
            assert!(errors(&lines)[0].message.contains("tokens"), "{nl:?}");
        }
    }

    /// kdl resumes after an error where a value could end, inside a string too: braces in a
    /// string after an error were read as children blocks past any bound (a stack overflow at
    /// 1,400). Every such file is refused, with no more than the pre-scan counted.
    #[test]
    fn errors_before_a_string_do_not_open_it() {
        let braces = "{ ".repeat(100_000);
        for text in [
            format!("=\"x {braces}\""),
            format!("=#\"x {braces}\"#"),
            format!("a 1x\"{braces}\""),
            format!("a #true\"{braces}\""),
            format!("a \"a\"\"{braces}\""),
            format!("a (x\"{braces}\")1"),
            format!("a; =\"{braces}\""),
            format!("=\"\"\"\n  x {braces}\n  \"\"\"\n{}", "a {\n".repeat(20)),
            format!("a \"\\q {braces}\""),
            format!("a \"\"\"\n  x\n y {braces}\n  \"\"\""),
        ] {
            errors(&text);
        }
    }

    /// What the kdl crate accepts and KDL v2 forbids is refused.
    #[test]
    fn what_kdl_lets_through_is_refused() {
        for text in [
            "pipeline \"p\" // \u{202e} comment\n",
            "pipeline \"p\" /* \u{2066} */\n",
            "pipeline \"p\" // \0\n",
            "pipeline \"p\" // \u{8}\n",
            "pipeline \"p\"\n// \u{feff}\n",
            "pipeline \"p\u{7f}\"\n",
            "pipeline p\u{7f}\n",
            "pipeline -inf\n",
            "pipeline \"p\" { } /-x\n",
        ] {
            assert!(
                KdlDocument::parse_v2(text).is_ok(),
                "kdl now refuses {text:?}"
            );
            errors(text);
        }
    }

    /// A slashdash straight after a value is valid KDL v2; kdl wants a space, which the syntax
    /// layer adds without moving a span.
    #[test]
    fn slashdash_straight_after_a_value() {
        let text = "node \"string\"/-1 \"b\"/-foo=1 {}/-{ x }\nnext x/-y z\n";
        let doc = parse_document(text, &Limits::default()).expect("valid KDL v2");
        let spans: Vec<(usize, usize)> = doc
            .nodes()
            .iter()
            .flat_map(|n| {
                std::iter::once(n.span())
                    .chain(n.entries().iter().map(|e| e.span()))
                    .map(|s| (s.offset(), s.len()))
            })
            .collect();
        let at = |s: &str| text.find(s).unwrap_or(usize::MAX);
        assert_eq!(
            spans,
            vec![
                (0, at("\nnext")),
                (at("\"string\""), 8),
                (at("\"b\""), 3),
                (at("next"), at(" z\n") + 2 - at("next")),
                (at("x/-"), 1),
                (at(" z") + 1, 1),
            ]
        );
        // An error after such a slashdash points where it is in the file as written.
        let broken = "a \"s\"/-1 \"s\"/-2 1x\n";
        assert_eq!(
            errors(broken)[0].span.offset,
            broken.find("1x").unwrap_or_default()
        );
    }

    #[test]
    fn new_diagnostics() {
        insta::assert_snapshot!(
            [
                "pipeline \"p\"\r\nstage \"a\" // \u{202e} } stage \"b\"\n",
                "pipeline \"p\"\nstage \"a\" uses=\"run\" {\n  command \"ls\u{7f}\"\n}\n",
                "pipeline \"p\"\n// ok\n\u{feff}stage \"a\"\n",
                "pipeline \"p\"\nstage \"a\" timeout=-inf\n",
                "pipeline \"p\"\nstage \"a\" { } /-uses=\"run\"\n",
                "pipeline \"p\"\nstage \"a {\n}\n",
                "pipeline \"p\"\nstage #\"a\n",
                "pipeline \"p\"\nstage \"\"\"a\"\"\"\n",
                "pipeline \"p\"\n/* stage \"a\"\n",
            ]
            .map(shown)
            .join("\n")
        );
    }
}
