//! Gathering a change: its diff cut to a path, the diff since the last review, ranges, size.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::gate::{Gate, GateOutcome};
use super::path::normalise_path;
use super::{GatherError, bounded, notes};
use crate::diff::{DiffProblem, Thresholds, Tier, Totals, parse, tier};
use crate::forge::{Change, FileRanges, open_change, ranges_of};
use crate::git::{self, Sha};

/// Default largest diff read: 16 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 16 * 1024 * 1024;

/// What to gather: `std/gather`'s children.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatherConfig {
    /// Cut every diff to files under this path (relative to the repository's top).
    pub path: Option<String>,
    /// Also produce the diff since the last posted review.
    pub since_last_review: bool,
    /// Base revision; default: see [`git::change_range`].
    pub base: Option<String>,
    /// Head revision; default `HEAD`.
    pub head: Option<String>,
    pub gate: Gate,
    /// Largest diff read; a larger one is an error.
    pub max_bytes: u64,
    pub thresholds: Thresholds,
}

impl Default for GatherConfig {
    fn default() -> Self {
        GatherConfig {
            path: None,
            since_last_review: false,
            base: None,
            head: None,
            gate: Gate::default(),
            max_bytes: DEFAULT_MAX_BYTES,
            thresholds: Thresholds::default(),
        }
    }
}

/// What a gather found: `std/gather`'s outputs, and a little more. Every field that comes from
/// the change (diffs, ranges, title, body, branch) is untrusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gathered {
    pub change_id: String,
    pub repo: String,
    pub base: Sha,
    /// Resolved once, at the start: what a post must still find.
    pub head: Sha,
    /// The head the last posted review names, as given.
    pub last_reviewed: Option<Sha>,
    /// The diff base..head cut to the path.
    pub diff: Vec<u8>,
    /// When asked for: the diff last-reviewed..head cut to the path, or the whole `diff`.
    pub since_last_review: Option<Vec<u8>>,
    /// Why `since_last_review` is what it is, when it is not the plain since-last-review diff.
    pub since_note: Option<String>,
    /// Changed-line ranges of `diff`, per file.
    pub ranges: Vec<FileRanges>,
    /// What the diff parser could not read in `diff`.
    pub problems: Vec<DiffProblem>,
    pub totals: Totals,
    pub tier: Tier,
    /// Lines changed (added + deleted).
    pub lines: u64,
    pub files: u64,
    /// The diff is not empty.
    pub changed: bool,
    pub title: String,
    pub body: String,
    pub branch: Option<String>,
    pub gate_outcome: GateOutcome,
}

/// Opens the change in `repo` (base and head from `config`) and gathers it.
pub fn gather(
    repo: &Path,
    config: &GatherConfig,
    last_reviewed: Option<&Sha>,
) -> Result<Gathered, GatherError> {
    let change = open_change(repo, config.base.as_deref(), config.head.as_deref())?;
    gather_change(repo, &change, config, last_reviewed)
}

/// Gathers a change already opened (its SHAs are used; `config.base`/`head` are not read).
///
/// A caller that needs the change id first (to look up the last posted review) opens the
/// change, reads the record, then calls this, so the SHAs are resolved only once.
pub fn gather_change(
    repo: &Path,
    change: &Change,
    config: &GatherConfig,
    last_reviewed: Option<&Sha>,
) -> Result<Gathered, GatherError> {
    let path = config
        .path
        .as_deref()
        .map(normalise_path)
        .transpose()?
        .flatten();
    let (base, head) = (change.base(), change.head());
    let diff = bounded::diff(repo, base, head, path.as_deref(), config.max_bytes)?;

    let (since_last_review, since_note) = if config.since_last_review {
        let (since, note) = since(repo, head, last_reviewed, path.as_deref(), config, &diff)?;
        (Some(since), note)
    } else {
        (None, None)
    };

    Ok(assemble(
        Parts {
            change_id: change.change_id.clone(),
            repo: change.repo.clone(),
            base: base.clone(),
            head: head.clone(),
            title: change.title.clone(),
            body: change.body.clone(),
            branch: change.branch.clone(),
        },
        config,
        last_reviewed,
        diff,
        since_last_review,
        since_note,
    ))
}

/// What a forge resolved about the change, for [`assemble`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parts {
    pub change_id: String,
    pub repo: String,
    pub base: Sha,
    pub head: Sha,
    pub title: String,
    pub body: String,
    pub branch: Option<String>,
}

/// The forge-independent part of a gather: the diff parsed into ranges, totals, a size tier and
/// the gate's verdict. Every forge reads its diffs its own way, then calls this.
pub fn assemble(
    parts: Parts,
    config: &GatherConfig,
    last_reviewed: Option<&Sha>,
    diff: Vec<u8>,
    since_last_review: Option<Vec<u8>>,
    since_note: Option<String>,
) -> Gathered {
    let parsed = parse(&diff);
    let totals = parsed.totals();
    let size = tier(totals.lines_changed(), totals.files, &config.thresholds);
    Gathered {
        change_id: parts.change_id,
        repo: parts.repo,
        base: parts.base,
        head: parts.head,
        last_reviewed: last_reviewed.cloned(),
        changed: !diff.is_empty(),
        ranges: ranges_of(&parsed),
        problems: parsed.problems,
        gate_outcome: config.gate.judge(size, &totals),
        tier: size,
        lines: totals.lines_changed(),
        files: totals.files,
        totals,
        diff,
        since_last_review,
        since_note,
        title: parts.title,
        body: parts.body,
        branch: parts.branch,
    }
}

/// The since-last-review diff and, when it is not the plain one, why.
fn since(
    repo: &Path,
    head: &Sha,
    last_reviewed: Option<&Sha>,
    path: Option<&str>,
    config: &GatherConfig,
    whole: &[u8],
) -> Result<(Vec<u8>, Option<String>), GatherError> {
    let Some(last) = last_reviewed else {
        return Ok((whole.to_vec(), Some(notes::no_review_before())));
    };
    if last == head {
        return Ok((Vec::new(), Some(notes::already_reviewed(head))));
    }
    if git::try_resolve(repo, last.as_str())?.is_none() {
        return Ok((whole.to_vec(), Some(notes::last_head_gone(last))));
    }
    if !git::is_ancestor(repo, last, head)? {
        return Ok((whole.to_vec(), Some(notes::not_an_ancestor(last))));
    }
    let since = bounded::diff(repo, last, head, path, config.max_bytes)?;
    Ok((since, None))
}
