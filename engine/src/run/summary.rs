//! The run's summary in markdown (status, a mermaid graph coloured by outcome, a table of
//! durations, and what the stages that report a cost spent), appended to the file the run's platform keeps for it (docs/platforms.md).

use std::io::Write as _;
use std::path::PathBuf;

use super::console::human;
use super::manifest::{Manifest, StageRecord};
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
    s.push_str(&costs(&manifest.stages));
    s
}

/// The facts a stage records of what it spent (docs/reviewers.md, "Costs and budgets"): this
/// run's total and the change's, kept even when the stage did not finish.
const RUN_COST_FACT: &str = "cost.run";
const CHANGE_COST_FACT: &str = "cost.change";

/// A "Cost" table of the stages that recorded a cost fact; nothing when none did.
fn costs(stages: &[StageRecord]) -> String {
    let rows: Vec<String> = stages
        .iter()
        .filter_map(|st| {
            let run = st.facts.get(RUN_COST_FACT);
            let change = st.facts.get(CHANGE_COST_FACT);
            if run.is_none() && change.is_none() {
                return None;
            }
            let said = |f: Option<&String>| f.map_or_else(|| "—".to_owned(), |f| cell(&said(f)));
            Some(format!(
                "| {} | {} | {} |\n",
                cell(&st.name),
                said(run),
                said(change)
            ))
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut s =
        String::from("### Cost\n\n| stage | this run | the change so far |\n|---|---|---|\n");
    s.extend(rows);
    s.push('\n');
    s
}

/// A cost fact for people: `in=1200 out=80 cached=0 usd=0.0123` as `1,280 tokens (1,200 in, 80
/// out, 0 cached), $0.0123` (`usd=?`: cost not reported); a fact of another shape as it is.
fn said(fact: &str) -> String {
    let mut parts = fact.split(' ');
    let mut field = |name: &str| parts.next()?.strip_prefix(name)?.strip_prefix('=');
    let read = (|| {
        let input: u64 = field("in")?.parse().ok()?;
        let output: u64 = field("out")?.parse().ok()?;
        let cached: u64 = field("cached")?.parse().ok()?;
        let usd = field("usd")?;
        let cost = match usd {
            "?" => "cost not reported".to_owned(),
            usd if !usd.is_empty() && usd.bytes().all(|b| b.is_ascii_digit() || b == b'.') => {
                format!("${usd}")
            }
            _ => return None,
        };
        Some(format!(
            "{} tokens ({} in, {} out, {} cached), {cost}",
            thousands(input.saturating_add(output)),
            thousands(input),
            thousands(output),
            thousands(cached)
        ))
    })();
    match read {
        Some(s) if parts.next().is_none() => s,
        _ => fact.to_owned(),
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, facts: &[(&str, &str)]) -> StageRecord {
        StageRecord {
            name: name.into(),
            kind: "std/review".into(),
            outcome: Outcome::FellBack,
            started_at: None,
            duration_ms: 0,
            reason: None,
            outputs: Default::default(),
            reused_from: None,
            facts: facts
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn the_cost_table_says_each_stage_s_totals() {
        assert_eq!(costs(&[record("gather", &[("reviewer.model", "m")])]), "");
        let table = costs(&[
            record("gather", &[]),
            record(
                "review",
                &[
                    ("cost.run", "in=1200 out=80 cached=0 usd=0.0123"),
                    ("cost.change", "in=45000 out=678 cached=1000 usd=?"),
                ],
            ),
            record("other|one", &[("cost.change", "odd | text")]),
        ]);
        assert_eq!(
            table,
            "### Cost\n\n| stage | this run | the change so far |\n|---|---|---|\n\
             | review | 1,280 tokens (1,200 in, 80 out, 0 cached), $0.0123 | 45,678 tokens (45,000 in, 678 out, 1,000 cached), cost not reported |\n\
             | other\\|one | — | odd \\| text |\n\n"
        );
        assert_eq!(
            said("in=1 out=2 cached=0 usd=0.5 extra=1"),
            "in=1 out=2 cached=0 usd=0.5 extra=1"
        );
        assert_eq!(
            said("in=x out=2 cached=0 usd=1"),
            "in=x out=2 cached=0 usd=1"
        );
    }
}
