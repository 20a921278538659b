//! `reviewflow run --fail-on`: the exit status from what the run published. One rule for every
//! forge: it reads each `std/post` stage's `published` output as the run kept it, never a forge's
//! files or comments. A run that published no review (the review fell back, was skipped or gated
//! out, no post ran) is "not reviewed", never a run with no findings (docs/executor.md, "Failing
//! the run on findings"). A run that `std/gather` stopped because its head was already reviewed
//! is judged by the verdict of that review, as the forge keeps it: a re-run passes what passed
//! and fails what failed.

use std::path::{Path, PathBuf};

use reviewflow_engine::model::{Pipeline, Value};
use reviewflow_engine::nofollow;
use reviewflow_engine::run::{Manifest, Outcome, StageRecord};
use reviewflow_stdlib::forge::PublishedCounts;
use reviewflow_stdlib::rules::Severity;
use reviewflow_stdlib::stages::published::{Counts, Published};

use crate::cli::FailOn;

/// A published finding at or above `--fail-on`.
pub const EXIT_FINDINGS: u8 = 3;
/// Not reviewed, under `--fail-on error|warning`.
pub const EXIT_NOT_REVIEWED: u8 = 4;

/// The `std/post` kind whose output is judged.
const POST: &str = "std/post";
/// The kind that stops a run whose head was already reviewed.
const GATHER: &str = "std/gather";

/// The review the forge shows as last posted, read after a stage stopped the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastPosted {
    /// The head it is of.
    pub head: String,
    pub run: Option<String>,
    /// Its counts; `None` when the record or marker keeps none (written before they were kept).
    pub published: Option<PublishedCounts>,
}
/// More than any `published` the stage writes (a few hundred bytes): a bound, not a size.
const MAX_PUBLISHED_BYTES: u64 = 64 * 1024;

/// What `--fail-on` decided.
#[derive(Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Lines for stderr, each ending with a line break.
    pub lines: String,
    /// The process's exit status: the run's own when it is not 0 (a failure, an interruption),
    /// else the verdict's.
    pub exit: u8,
}

/// The options, as given.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// `None`: not given (never, or error with `--fail-on-new`).
    pub fail_on: Option<FailOn>,
    pub new_only: bool,
}

impl Rule {
    /// Whether the rule may change the exit status (`--fail-on error|warning`): the run's end
    /// line then leaves the exit to the verdict line.
    pub fn decides_exit(self) -> bool {
        self.level() != FailOn::Never
    }

    fn level(self) -> FailOn {
        match (self.fail_on, self.new_only) {
            (Some(level), _) => level,
            (None, true) => FailOn::Error,
            (None, false) => FailOn::Never,
        }
    }
}

/// What one post stage published, or why nothing counts as reviewed.
enum PostState {
    Reviewed(Published),
    /// The post did not run because the head was already reviewed: the line that says so, and
    /// what that review published.
    ReviewedBefore(String, PublishedCounts),
    /// Why not; the counts of what it published anyway (a review that did not run publishes
    /// none in practice, but the rule does not depend on it).
    NotReviewed(String, Option<Published>),
}

/// Judges the run that ended with `run_exit` under `rule`: a line per `std/post` stage, then
/// the verdict.
pub fn judge(
    pipeline: &Pipeline,
    manifest: &Manifest,
    run_dir: &Path,
    last: Option<&LastPosted>,
    rule: Rule,
    run_exit: u8,
) -> Verdict {
    let level = rule.level();
    let posts: Vec<&StageRecord> = manifest.stages.iter().filter(|s| s.kind == POST).collect();
    let mut lines = String::new();
    let mut not_reviewed = false;
    let mut blocking: u64 = 0;
    if posts.is_empty() {
        // A pipeline that publishes nothing is not a review: say so only when it was asked for.
        if level == FailOn::Never {
            return Verdict {
                lines,
                exit: run_exit,
            };
        }
        lines.push_str(
            "not reviewed: the pipeline has no `std/post` stage: nothing was published\n",
        );
        not_reviewed = true;
    }
    for post in posts {
        let counted = match state_of(pipeline, manifest, run_dir, last, post) {
            PostState::Reviewed(p) => Some(p),
            PostState::ReviewedBefore(line, counts) => {
                lines.push_str(&format!("{}\n", one_line(&line)));
                let counts = if rule.new_only {
                    &counts.new
                } else {
                    &counts.findings
                };
                blocking = blocking.saturating_add(at_or_above(counts, level));
                continue;
            }
            PostState::NotReviewed(why, p) => {
                lines.push_str(&format!("not reviewed: {}\n", one_line(&why)));
                not_reviewed = true;
                p
            }
        };
        if let Some(p) = counted {
            lines.push_str(&format!(
                "{}: published {} (new: {})\n",
                post.name, p.findings, p.new
            ));
            let counts = if rule.new_only { &p.new } else { &p.findings };
            blocking = blocking.saturating_add(at_or_above(counts, level));
        }
    }
    let (line, exit) = decide(rule, blocking, not_reviewed, run_exit);
    if let Some(line) = line {
        lines.push_str(&line);
    }
    Verdict { lines, exit }
}

/// The verdict line (none under `never`) and the exit status, from the count of blocking
/// findings and whether any post did not review.
fn decide(rule: Rule, blocking: u64, not_reviewed: bool, run_exit: u8) -> (Option<String>, u8) {
    let Some(threshold) = threshold(rule.level()) else {
        return (None, run_exit);
    };
    let flag = if rule.new_only {
        format!("--fail-on {threshold} --fail-on-new")
    } else {
        format!("--fail-on {threshold}")
    };
    let which = if rule.new_only {
        "new published finding"
    } else {
        "published finding"
    };
    // A blocking finding is known even when another post did not review: 3 wins over 4.
    let (said, asked) = if blocking > 0 {
        let plural = if blocking == 1 { "" } else { "s" };
        (
            format!("{blocking} {which}{plural} at or above {threshold}"),
            EXIT_FINDINGS,
        )
    } else if not_reviewed {
        ("not reviewed".to_string(), EXIT_NOT_REVIEWED)
    } else {
        (format!("no {which} at or above {threshold}"), 0)
    };
    // The run's own status wins. The line is the process's last: it states the exit returned,
    // whoever decided it.
    let exit = if run_exit != 0 { run_exit } else { asked };
    (Some(format!("{flag}: {said} (exit {exit})\n")), exit)
}

fn threshold(level: FailOn) -> Option<&'static str> {
    match level {
        FailOn::Error => Some("error"),
        FailOn::Warning => Some("warning"),
        FailOn::Never => None,
    }
}

fn at_or_above(counts: &Counts, level: FailOn) -> u64 {
    match level {
        FailOn::Error => counts.at_or_above(Severity::Error),
        FailOn::Warning => counts.at_or_above(Severity::Warning),
        FailOn::Never => 0,
    }
}

fn state_of(
    pipeline: &Pipeline,
    manifest: &Manifest,
    run_dir: &Path,
    last: Option<&LastPosted>,
    post: &StageRecord,
) -> PostState {
    match post.outcome {
        Outcome::Succeeded | Outcome::Reused => {}
        Outcome::NotRun if manifest.stopped.is_some() => {
            if let Some(before) = reviewed_before(manifest, last, &post.name) {
                return before;
            }
            // The console said the stop and its reason once, just above: not again.
            let stage = manifest.stopped.as_ref().map_or("", |s| s.stage.as_str());
            return PostState::NotReviewed(
                format!(
                    "`{}` did not run: `{stage}` stopped the run (this run published no verdict; `--force` reviews the head again)",
                    post.name
                ),
                None,
            );
        }
        other => {
            let mut why = match &post.reason {
                Some(r) => format!("`{}` {}: {r}", post.name, did(other)),
                None => format!("`{}` {}", post.name, did(other)),
            };
            // A post gated on the review (`when="review.commented"`) is skipped when the review
            // fell back: the review's reason is the one a reader needs.
            let producers = producers_not_run(pipeline, manifest, &post.name);
            if !producers.is_empty() {
                why = format!("{why} — {}", producers.join("; "));
            }
            return PostState::NotReviewed(why, None);
        }
    }
    let published = match read_published(run_dir, post) {
        Ok(p) => p,
        Err(e) => {
            return PostState::NotReviewed(
                format!("`{}` left no record of what it published ({e})", post.name),
                None,
            );
        }
    };
    if published.reviewed {
        return PostState::Reviewed(published);
    }
    // The post says its review did not run; the producers it publishes say why.
    let producers = producers_not_run(pipeline, manifest, &post.name);
    let why = if producers.is_empty() {
        published
            .reason
            .clone()
            .unwrap_or_else(|| "the review did not run".into())
    } else {
        producers.join("; ")
    };
    PostState::NotReviewed(
        format!("`{}` published no review: {why}", post.name),
        Some(published),
    )
}

/// The verdict of the review last posted for this head, when `std/gather` stopped the run
/// because the head is the one that review names: only then is that review this head's. A
/// record or marker without counts gives none, and the run is not reviewed.
fn reviewed_before(
    manifest: &Manifest,
    last: Option<&LastPosted>,
    post: &str,
) -> Option<PostState> {
    let stop = manifest.stopped.as_ref()?;
    let stage = manifest.stage(&stop.stage)?;
    let head = manifest.identity.commits.get("head")?;
    let last = last?;
    if stage.kind != GATHER || &last.head != head {
        return None;
    }
    let Some(counts) = last.published else {
        return Some(PostState::NotReviewed(
            format!(
                "`{post}` did not run: `{}` stopped the run, and the review last posted for this head keeps no counts (this run published no verdict; `--force` reviews the head again)",
                stop.stage
            ),
            None,
        ));
    };
    let run = last
        .run
        .as_deref()
        .map_or_else(String::new, |r| format!(" (run {r})"));
    Some(PostState::ReviewedBefore(
        format!(
            "{post}: did not run: `{}` stopped the run; the review last posted for this head{run} published {} (new: {})",
            stop.stage, counts.findings, counts.new
        ),
        counts,
    ))
}

/// The past tense of an outcome that is not a success.
fn did(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::FellBack => "fell back",
        Outcome::Skipped => "was skipped",
        Outcome::Failed => "failed",
        Outcome::Cancelled => "was cancelled",
        Outcome::NotRun => "did not run",
        Outcome::Succeeded | Outcome::Reused => "ran",
    }
}

/// The stages whose `comment` or `findings` the post publishes and that did not succeed, each
/// with its outcome and reason: `` `review` fell back: … ``.
fn producers_not_run(pipeline: &Pipeline, manifest: &Manifest, post: &str) -> Vec<String> {
    let Some(stage) = pipeline.stages.iter().find(|s| s.name.value == post) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    let refs = stage
        .children
        .iter()
        .filter(|c| c.name.value == "comment" || c.name.value == "findings")
        .flat_map(|c| c.args.iter())
        .filter_map(|a| match &a.value {
            Value::Reference(r) => Some(r.stage.as_str()),
            _ => None,
        });
    for name in refs {
        let Some(record) = manifest.stage(name) else {
            continue;
        };
        // A producer that did not run either says nothing the post's own reason does not.
        if matches!(
            record.outcome,
            Outcome::Succeeded | Outcome::Reused | Outcome::NotRun
        ) {
            continue;
        }
        let line = match &record.reason {
            Some(r) => format!("`{name}` {}: {r}", did(record.outcome)),
            None => format!("`{name}` {}", did(record.outcome)),
        };
        if !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// The `published` output as the run kept it (in the run directory, which lies in the checkout:
/// opened without following a link, within a bound).
fn read_published(run_dir: &Path, post: &StageRecord) -> Result<Published, String> {
    let record = post
        .outputs
        .get("published")
        .ok_or_else(|| "its `published` output is absent".to_string())?;
    let rel: PathBuf = record
        .file
        .as_deref()
        .map(PathBuf::from)
        .ok_or_else(|| "its `published` output was not kept".to_string())?;
    let file = nofollow::open_regular_beneath(run_dir, &rel)
        .map_err(|e| format!("{}: {e}", rel.display()))?;
    let bytes = reviewflow_engine::bounded::read_bounded(file, MAX_PUBLISHED_BYTES)
        .map_err(|e| format!("{}: {e}", rel.display()))?;
    // The digest the run held in memory when it kept the output: a file changed since (a stage
    // that could write the run directory) is not what was published.
    if reviewflow_engine::run::digest(&record.ty, &bytes) != record.digest {
        return Err(format!(
            "kept output `published` of stage `post` changed after it was kept ({})",
            rel.display()
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", rel.display()))
}

/// A reason as one line of text: a reviewer's error can span several, and a control character
/// (an escape sequence) must not reach the terminal.
fn one_line(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(fail_on: Option<FailOn>, new_only: bool) -> Rule {
        Rule { fail_on, new_only }
    }

    #[test]
    fn never_is_the_default_and_changes_nothing() {
        assert_eq!(decide(rule(None, false), 5, true, 0), (None, 0));
        assert_eq!(
            decide(rule(Some(FailOn::Never), true), 5, true, 1),
            (None, 1)
        );
    }

    #[test]
    fn fail_on_new_alone_is_error() {
        let (line, exit) = decide(rule(None, true), 1, false, 0);
        assert_eq!(exit, EXIT_FINDINGS);
        assert_eq!(
            line.as_deref(),
            Some(
                "--fail-on error --fail-on-new: 1 new published finding at or above error (exit 3)\n"
            )
        );
    }

    #[test]
    fn a_blocking_finding_wins_over_not_reviewed_and_the_run_wins_over_both() {
        let error = rule(Some(FailOn::Error), false);
        assert_eq!(decide(error, 2, true, 0).1, EXIT_FINDINGS);
        assert_eq!(decide(error, 0, true, 0).1, EXIT_NOT_REVIEWED);
        assert_eq!(decide(error, 0, false, 0).1, 0);
        for run_exit in [1, 2, 130, 143] {
            let (line, exit) = decide(error, 2, true, run_exit);
            assert_eq!(exit, run_exit);
            assert!(
                line.as_deref()
                    .is_some_and(|l| l.ends_with(&format!("(exit {run_exit})\n"))),
                "{line:?}"
            );
        }
    }

    #[test]
    fn a_reason_is_one_line_of_text() {
        assert_eq!(one_line("a\nb\x1b[31m c\t"), "a b [31m c");
    }
}
