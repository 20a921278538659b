//! Findings as GitHub Actions workflow commands (`--format github`): one
//! `::error file=…,line=…,endLine=…,col=…,endColumn=…,title=…::message` line per finding, which
//! the runner turns into an annotation on the file.
//!
//! - Levels: error → `::error`, warning → `::warning`, info → `::notice`. Allowed (suppressed)
//!   findings are not printed: an annotation cannot say it was allowed, and the other formats
//!   keep them.
//! - Every command is one line: the message and property values are escaped as the runner
//!   expects (`%`, CR and LF in both; `:` and `,` as well in properties), so text taken from the
//!   pipeline file can never end a command or start another.
//! - Lines and columns are 1-based; columns count characters and `endColumn` is exclusive. The
//!   columns are given only when the span starts and ends on one line, because annotations
//!   ignore or reject columns that span lines. A span ending with its line's newline ends on
//!   that line.
//! - The message is the finding's message, then its help on a new line.
//! - GitHub shows at most [`ANNOTATIONS_PER_LEVEL`] annotations of each level per step and drops
//!   the rest silently. So only the first ten of a level are printed, and one closing `::notice::`
//!   per level says how many more there were. Those closing notices are notices themselves: room
//!   is kept for them by printing fewer finding notices when they would not all fit.

use std::fmt::Write as _;

use reviewflow_engine::Source;
use reviewflow_engine::finding::{Finding, Severity};

/// How many annotations of one level GitHub shows per step.
pub const ANNOTATIONS_PER_LEVEL: usize = 10;

/// The workflow commands of the unsuppressed findings of every file, in order, newline-terminated.
pub fn workflow_commands(files: &[(&Source, &[Finding])]) -> String {
    let live: Vec<(&Source, &Finding)> = files
        .iter()
        .flat_map(|(source, findings)| findings.iter().map(move |f| (*source, f)))
        .filter(|(_, f)| f.suppressed.is_none())
        .collect();
    let count = |s: Severity| live.iter().filter(|(_, f)| f.severity == s).count();
    let budget = Budget::new(
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info),
    );

    let mut out = String::new();
    let mut printed = [0usize; 3];
    for (source, finding) in &live {
        let slot = slot(finding.severity);
        if printed[slot] < budget.shown[slot] {
            printed[slot] += 1;
            command(&mut out, source, finding);
        }
    }
    for (slot, word) in [(0, "error"), (1, "warning"), (2, "notice")] {
        let hidden = budget.total[slot] - budget.shown[slot];
        if hidden > 0 {
            let plural = if hidden == 1 { "" } else { "s" };
            let _ = writeln!(
                out,
                "::notice::{hidden} more {word}{plural} not annotated (GitHub shows at most \
                 {ANNOTATIONS_PER_LEVEL} {word}s per step)"
            );
        }
    }
    out
}

/// How many findings of each level (error, warning, notice) there are and how many are printed.
struct Budget {
    total: [usize; 3],
    shown: [usize; 3],
}

impl Budget {
    fn new(errors: usize, warnings: usize, notices: usize) -> Self {
        let total = [errors, warnings, notices];
        let errors_shown = errors.min(ANNOTATIONS_PER_LEVEL);
        let warnings_shown = warnings.min(ANNOTATIONS_PER_LEVEL);
        let closing = usize::from(errors > errors_shown) + usize::from(warnings > warnings_shown);
        // Closing notices share the notice limit with finding notices.
        let notices_shown = if notices + closing <= ANNOTATIONS_PER_LEVEL {
            notices
        } else {
            ANNOTATIONS_PER_LEVEL - closing - 1
        };
        Self {
            total,
            shown: [errors_shown, warnings_shown, notices_shown],
        }
    }
}

fn slot(severity: Severity) -> usize {
    match severity {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Info => 2,
    }
}

fn command(out: &mut String, source: &Source, finding: &Finding) {
    let name = match finding.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    };
    let span = finding.primary.span;
    let text = source.text();
    let start = source.position(span.offset);
    let mut end_offset = span.offset.saturating_add(span.len);
    if span.len > 0 && text.get(..end_offset).is_some_and(|t| t.ends_with('\n')) {
        end_offset -= 1;
    }
    let end = source.position(end_offset.max(span.offset));

    let _ = write!(
        out,
        "::{name} file={},line={},endLine={}",
        escape_property(&source.name().replace('\\', "/")),
        start.line,
        end.line
    );
    if start.line == end.line {
        let _ = write!(out, ",col={},endColumn={}", start.column, end.column);
    }
    let mut message = finding.message.clone();
    if let Some(help) = &finding.help {
        message.push('\n');
        message.push_str(help);
    }
    let _ = writeln!(
        out,
        ",title={}::{}",
        escape_property(&format!("reviewflow({})", finding.check)),
        escape_message(&message)
    );
}

/// Escapes a command's message: `%`, CR and LF.
pub fn escape_message(text: &str) -> String {
    escape(text, false)
}

/// Escapes a command's property value: as a message, plus `:` and `,`.
pub fn escape_property(text: &str) -> String {
    escape(text, true)
}

fn escape(text: &str, property: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            ':' if property => out.push_str("%3A"),
            ',' if property => out.push_str("%2C"),
            c => out.push(c),
        }
    }
    out
}
