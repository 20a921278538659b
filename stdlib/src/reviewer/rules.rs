//! The `rules` reviewer: the deterministic rules of [`crate::rules`] as a reviewer, with no
//! model, no process and no network.
//!
//! Its conversation is a [`Transcript`]; a resumed review reads the restored one and appends to
//! it, so resuming goes through the same two tries as any reviewer (a restored conversation that
//! is not a rules transcript fails try 1, and try 2 is fresh).

use reviewflow_engine::hex::encode as hex;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::conversation::Conversation;
use super::error::ReviewerError;
use super::outcome::{ReviewEvent, ReviewOutcome};
use super::prompt::random_hex;
use super::result::ReviewFinding;
use super::summary::{SummaryContext, comment};
use super::transcript::{Said, Saw, SeenFile, TRANSCRIPT_FILE, Transcript, Turn};
use super::tries::{Attempt, DEFAULT_TRIES, Reviewed, run_tries_blocking};
use crate::detect::NamedSecret;
use crate::rules::{RulesConfig, review};

/// Settings of the `rules` reviewer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RulesReviewer {
    pub config: RulesConfig,
    /// How many tries (1 to 5; default 2).
    pub tries: u32,
}

impl Default for RulesReviewer {
    fn default() -> Self {
        Self {
            config: RulesConfig::default(),
            tries: DEFAULT_TRIES,
        }
    }
}

/// The review of one try.
struct RulesTry {
    comment: String,
    transcript: PathBuf,
    resumed: bool,
}

impl Reviewed for RulesTry {
    fn resumed(&self) -> bool {
        self.resumed
    }
}

/// Reviews `diff` (a unified diff, as git writes it) with the rules, `secrets` being the run's
/// own secret values for the `credential` rule. The transcript is written to
/// `<workdir>/try-<n>/transcript.json`; a resumed try continues `resume`'s transcript.
pub fn run_rules_reviewer(
    reviewer: &RulesReviewer,
    diff: &[u8],
    secrets: &[NamedSecret],
    resume: Option<Conversation>,
    workdir: &Path,
    mut on_event: impl FnMut(ReviewEvent),
) -> Result<ReviewOutcome, ReviewerError> {
    let parsed = crate::diff::parse(diff);
    let findings: Vec<ReviewFinding> = review(&parsed, secrets, &reviewer.config)
        .iter()
        .map(ReviewFinding::from)
        .collect();
    let saw = Saw {
        diff_sha256: hex(&Sha256::digest(diff)),
        files: parsed
            .files
            .iter()
            .map(|f| SeenFile {
                path: f.path().to_owned(),
                added: f.added_lines(),
                deleted: f.deleted_lines(),
            })
            .collect(),
        unreadable: parsed.problems.len(),
    };
    let totals = parsed.totals();

    let tried = run_tries_blocking(
        reviewer.tries,
        resume,
        &mut |l| on_event(ReviewEvent::Status(l)),
        |attempt: Attempt| -> Result<RulesTry, String> {
            let earlier = match &attempt.resume {
                Some(conversation) => {
                    Some(Transcript::read(&conversation.path).map_err(|e| e.to_string())?)
                }
                None => None,
            };
            let earlier_reviews = earlier.as_ref().map_or(0, |t| {
                t.turns
                    .iter()
                    .filter(|turn| matches!(turn, Turn::Said(_)))
                    .count()
            });
            let comment = comment(
                &findings,
                &SummaryContext {
                    totals,
                    unreadable: parsed.problems.len(),
                    earlier_reviews,
                },
            );
            let id = random_hex().map_err(|e| e.to_string())?;
            let mut transcript = match earlier {
                Some(earlier) => Transcript {
                    id,
                    parent: Some(earlier.id.clone()),
                    ..earlier
                },
                None => Transcript::new(id, None),
            };
            transcript.push_review(
                saw.clone(),
                Said {
                    comment: comment.clone(),
                    findings: findings.clone(),
                },
            );
            let path = write_transcript(workdir, attempt.number, &transcript).map_err(|e| {
                format!(
                    "cannot write the transcript under {}: {e}",
                    workdir.display()
                )
            })?;
            Ok(RulesTry {
                comment,
                transcript: path,
                resumed: attempt.resume.is_some(),
            })
        },
    )?;
    Ok(ReviewOutcome {
        // The rules decide nothing: a refuted finding stays refuted (docs/findings.md).
        decisions: Vec::new(),
        comment: tried.review.comment,
        clean: findings.is_empty(),
        findings,
        conversation: Some(tried.review.transcript),
        commented: true,
        resumed: tried.resumed,
        tries: tried.reports,
        facts: vec![("reviewer.cli".to_owned(), "rules".to_owned())],
    })
}

/// Writes `<workdir>/try-<n>/transcript.json` into a fresh folder; returns its absolute path.
fn write_transcript(workdir: &Path, number: u32, transcript: &Transcript) -> io::Result<PathBuf> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    let dir = std::path::absolute(workdir)?.join(format!("try-{number}"));
    match fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    let path = dir.join(TRANSCRIPT_FILE);
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?
        .write_all(&transcript.to_json())?;
    Ok(path)
}
