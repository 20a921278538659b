//! GitHub Actions: what to mask, a stage's group and annotations, and the run summary for
//! `$GITHUB_STEP_SUMMARY`.

use std::io::Write as _;
use std::path::PathBuf;

use base64::Engine as _;

use super::console::human;
use super::manifest::Manifest;
use super::outcome::Outcome;
use crate::exec::secret::SecretValue;
use crate::github::{escape_message, escape_property};
use crate::graph::Dag;

/// The strings to give `::add-mask::` for these values: each value, each of its non-empty lines
/// (a mask applies to one line), its trimmed form and its standard base64 encoding.
pub fn mask_lines<'a>(values: impl IntoIterator<Item = &'a SecretValue>) -> Vec<String> {
    let mut out = Vec::new();
    for v in values {
        let bytes = v.expose_secret();
        if let Ok(text) = std::str::from_utf8(bytes) {
            for line in text.lines() {
                let t = line.trim();
                if !t.is_empty() {
                    out.push(t.to_string());
                }
            }
        }
        out.push(base64::engine::general_purpose::STANDARD.encode(bytes));
        let trimmed = bytes.trim_ascii();
        if trimmed.len() != bytes.len() && !trimmed.is_empty() {
            out.push(base64::engine::general_purpose::STANDARD.encode(trimmed));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The level of an annotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    Error,
    Warning,
}

/// One annotation line: `::error title=<title>::<message>` (`::warning …`), or without the
/// title. The title is escaped as a property (`%`, CR, LF, `:`, `,`), the message as a message
/// (`%`, CR, LF), so neither can end the command or start another.
pub(crate) fn annotation(level: Level, title: Option<&str>, message: &str) -> String {
    let level = match level {
        Level::Error => "error",
        Level::Warning => "warning",
    };
    match title {
        Some(t) => format!(
            "::{level} title={}::{}\n",
            escape_property(t),
            escape_message(message)
        ),
        None => format!("::{level}::{}\n", escape_message(message)),
    }
}

/// A group titled `title` holding `lines`, with workflow commands stopped around them: the lines
/// are untrusted (a child's output, status text), and while commands are stopped the runner
/// reads `::…::` in them as text. Only `::<token>::` resumes them, and `token` is drawn when the
/// group is printed, after the lines were written.
pub(crate) fn group(title: &str, lines: &[String], token: &str) -> String {
    let mut out = format!(
        "::group::{}\n::stop-commands::{token}\n",
        escape_message(title)
    );
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out.push_str(&format!("::{token}::\n::endgroup::\n"));
    out
}

/// The run summary: status, a mermaid graph coloured by outcome, a table of durations.
pub fn step_summary(manifest: &Manifest, dag: &Dag) -> String {
    let mut s = format!(
        "## reviewflow run `{}`: {}\n\n",
        manifest.run_id,
        manifest.status.name()
    );
    if let Some(p) = &manifest.parent {
        s.push_str(&format!("Resumed from run `{p}`.\n\n"));
    }
    if let Some(r) = &manifest.reason {
        s.push_str(&format!("{}\n\n", cell(r)));
    }
    s.push_str("```mermaid\ngraph LR\n");
    for (i, st) in manifest.stages.iter().enumerate() {
        s.push_str(&format!(
            "  s{i}[\"{}\"]:::{}\n",
            st.name.replace('"', "#quot;"),
            class(st.outcome)
        ));
    }
    for (from, to, _) in dag.edges() {
        s.push_str(&format!("  s{from} --> s{to}\n"));
    }
    for (name, colour) in [
        ("succeeded", "fill:#2da44e,color:#fff"),
        ("reused", "fill:#0969da,color:#fff"),
        ("fellback", "fill:#bf8700,color:#fff"),
        ("skipped", "fill:#8c959f,color:#fff"),
        ("failed", "fill:#cf222e,color:#fff"),
        ("cancelled", "fill:#6e7781,color:#fff"),
        ("notrun", "fill:#eaeef2,color:#57606a"),
    ] {
        s.push_str(&format!("  classDef {name} {colour}\n"));
    }
    s.push_str("```\n\n| stage | outcome | duration | reason |\n|---|---|---|---|\n");
    for st in &manifest.stages {
        s.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            cell(&st.name),
            st.outcome.name(),
            human(std::time::Duration::from_millis(st.duration_ms)),
            st.reason.as_deref().map(cell).unwrap_or_default()
        ));
    }
    s.push('\n');
    s
}

fn class(o: Outcome) -> &'static str {
    match o {
        Outcome::Succeeded => "succeeded",
        Outcome::Reused => "reused",
        Outcome::FellBack => "fellback",
        Outcome::Skipped => "skipped",
        Outcome::Failed => "failed",
        Outcome::Cancelled => "cancelled",
        Outcome::NotRun => "notrun",
    }
}

/// Text safe in a markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// Appends `text` to the summary file. Blocking: run it off the runtime's threads.
pub fn append_summary(path: PathBuf, text: String) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(text.as_bytes())
}
