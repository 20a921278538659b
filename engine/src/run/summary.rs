//! The run's summary in markdown (status, a mermaid graph coloured by outcome, a table of
//! durations), appended to the file the run's platform keeps for it (docs/platforms.md).

use std::io::Write as _;
use std::path::PathBuf;

use super::console::human;
use super::manifest::Manifest;
use super::outcome::Outcome;
use crate::graph::Dag;

/// The run's summary: status, a mermaid graph coloured by outcome, a table of durations.
pub fn markdown(manifest: &Manifest, dag: &Dag) -> String {
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
