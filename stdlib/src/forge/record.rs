//! `posted.json`: the record of the review posted for a change, the local counterpart of the
//! metadata marker a pull-request comment carries on a hosted forge. The next run reads it to
//! find the head the last review was of and the conversation to resume.
//!
//! It also keeps the baseline of finding identity (`docs/findings.md`): the fingerprints of the
//! review's findings, which the next review is compared with. A record without one (written
//! before baselines were kept) means no baseline.
//!
//! It is read as hostile input: unknown fields, a wrong version, an id outside its pattern, a
//! head that is not a full SHA, a file name other than the fixed ones, or a change id other
//! than its folder's make the whole record an error, never a partly trusted value.

use serde::{Deserialize, Serialize};

use super::LocalForgeError;
use super::baseline::{Baseline, BaselineError};
use super::formats::Format;
use super::ids::{MAX_ID, check_change_id, check_id, check_reviewer};
use crate::git::Sha;
use crate::stages::published::Counts;

/// Version of the record's layout.
pub const RECORD_VERSION: u32 = 1;
/// The record's file name in the change's folder.
pub const RECORD_FILE: &str = "posted.json";
/// Largest record read, in bytes: the baseline's budget
/// ([`super::baseline::LOCAL_BASELINE_BYTES`]) and room for the rest.
pub const MAX_RECORD_BYTES: u64 = 2 * 1024 * 1024;

/// The review last posted for a change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostedReview {
    /// [`RECORD_VERSION`].
    pub version: u32,
    pub change_id: String,
    pub base: Sha,
    /// The head the review is of: where the next since-last-review diff starts.
    pub head: Sha,
    pub run_id: String,
    /// The sealed conversation the review kept, by its blob id (`blob-<sha-256 of the sealed
    /// bytes>`, [`crate::conversation::blob_id`]); `None` when it kept none.
    pub conversation_id: Option<String>,
    pub reviewer: String,
    /// UTC, `YYYY-MM-DDThh:mm:ssZ`.
    pub posted_at: String,
    /// Number of findings posted.
    pub findings: u64,
    /// The files of this post, each with its digest, so a reader can tell them from the files
    /// of a newer post that is being written.
    pub files: Vec<PostedFile>,
    /// The fingerprints of the posted findings, for the next review to compare with; absent in
    /// a record written before baselines were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
    /// The posted findings counted by severity, all and new: the verdict a re-run on the same
    /// head reads back (`--fail-on`); absent in a record written before counts were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<PublishedCounts>,
    /// The change's running total of what its reviews spent, this one included (`docs/local-
    /// forge.md`, "Costs and budgets"); absent in a record written before costs were kept, or by
    /// a pipeline that reports no cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent: Option<crate::reviewer::usage::Usage>,
}

/// What a posted review published, by severity: the same counts as `std/post`'s `published`
/// output (docs/executor.md, "What `std/post` published").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedCounts {
    pub findings: Counts,
    pub new: Counts,
}

impl PublishedCounts {
    /// The counts of a review that posted `findings`.
    pub fn of(findings: &[crate::forge::ReviewFinding]) -> Self {
        let p = crate::stages::published::Published::of(findings, None);
        PublishedCounts {
            findings: p.findings,
            new: p.new,
        }
    }
}

/// One file of a post.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostedFile {
    pub format: Format,
    /// Always [`Format::file_name`] of `format`.
    pub name: String,
    /// SHA-256 of the file's bytes, 64 lowercase hex digits.
    pub sha256: String,
    pub bytes: u64,
}

impl PostedReview {
    /// Checks every field; `change_id` is the folder the record was found in.
    pub fn validate(&self, change_id: &str) -> Result<(), RecordError> {
        if self.version != RECORD_VERSION {
            return Err(RecordError::Version(self.version));
        }
        check_change_id(&self.change_id)?;
        if self.change_id != change_id {
            return Err(RecordError::OtherChange);
        }
        check_id("run id", &self.run_id, MAX_ID)?;
        if let Some(id) = &self.conversation_id {
            check_id("conversation id", id, MAX_ID)?;
        }
        check_reviewer(&self.reviewer)?;
        if !is_timestamp(&self.posted_at) {
            return Err(RecordError::Timestamp);
        }
        let mut seen = Vec::new();
        for file in &self.files {
            if file.name != file.format.file_name() {
                return Err(RecordError::FileName {
                    name: super::error::echo(&file.name),
                    format: file.format,
                });
            }
            if file.sha256.len() != 64
                || !file
                    .sha256
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            {
                return Err(RecordError::Digest {
                    name: file.name.clone(),
                });
            }
            if seen.contains(&file.format) {
                return Err(RecordError::Twice {
                    name: file.name.clone(),
                });
            }
            seen.push(file.format);
        }
        if let Some(baseline) = &self.baseline {
            baseline.validate()?;
        }
        Ok(())
    }

    /// Parses and validates a record's bytes.
    pub fn parse(bytes: &[u8], change_id: &str) -> Result<Self, RecordError> {
        let record: PostedReview = serde_json::from_slice(bytes).map_err(RecordError::Json)?;
        record.validate(change_id)?;
        Ok(record)
    }
}

/// Why a posted-review record is not trusted: how it was found, or what it holds.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("it is not a regular file")]
    NotAFile,
    #[error("git tracks the forge folder, so the record came with the change")]
    Tracked,
    #[error("it is larger than {MAX_RECORD_BYTES} bytes")]
    TooLarge,
    #[error("not a valid record: {0}")]
    Json(#[source] serde_json::Error),
    #[error("version {0} is not {RECORD_VERSION}")]
    Version(u32),
    /// An id outside its pattern (boxed: the local forge's error holds this one).
    #[error(transparent)]
    Id(Box<LocalForgeError>),
    #[error("it names another change than its folder")]
    OtherChange,
    #[error("posted_at is not a UTC timestamp YYYY-MM-DDThh:mm:ssZ")]
    Timestamp,
    /// `name` is bounded: it comes from the record.
    #[error("file {name:?} is not the {format} file's name")]
    FileName { name: String, format: Format },
    #[error("the digest of {name} is not SHA-256 hex")]
    Digest { name: String },
    #[error("{name} is listed twice")]
    Twice { name: String },
    #[error(transparent)]
    Baseline(#[from] BaselineError),
}

impl From<LocalForgeError> for RecordError {
    fn from(e: LocalForgeError) -> Self {
        Self::Id(Box::new(e))
    }
}

pub(crate) fn to_bytes(record: &PostedReview) -> Result<Vec<u8>, LocalForgeError> {
    let mut bytes =
        serde_json::to_vec_pretty(record).map_err(|source| LocalForgeError::Encode {
            what: "posted-review record",
            source,
        })?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// Seconds since the Unix epoch as `YYYY-MM-DDThh:mm:ssZ`.
pub fn timestamp(unix_seconds: u64) -> String {
    // Past year 292 billion the date module's seconds stop: clamp, as nothing is that late.
    reviewflow_engine::date::rfc3339(i64::try_from(unix_seconds).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(timestamp(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(timestamp(1_767_225_599), "2025-12-31T23:59:59Z");
        assert!(is_timestamp(&timestamp(4_102_444_800)));
        assert!(!is_timestamp("2025-12-31 23:59:59Z"));
    }

    fn record(spent: Option<crate::reviewer::usage::Usage>) -> PostedReview {
        PostedReview {
            version: RECORD_VERSION,
            change_id: "branch-feature".into(),
            base: Sha::parse(&"1".repeat(40)).unwrap(),
            head: Sha::parse(&"2".repeat(40)).unwrap(),
            run_id: "run-1".into(),
            conversation_id: None,
            reviewer: "reviewflow".into(),
            posted_at: timestamp(0),
            findings: 0,
            files: Vec::new(),
            baseline: None,
            published: None,
            spent,
        }
    }

    #[test]
    fn the_spent_total_is_kept_and_read_back_and_optional() {
        use crate::reviewer::usage::{Usage, Usd};
        let spent = Usage {
            input_tokens: 120_000,
            output_tokens: 8_000,
            cached_tokens: 1_000,
            cost_usd: Some(Usd(412_300)),
        };
        for kept in [
            Some(spent),
            Some(Usage {
                cost_usd: None,
                ..spent
            }),
            None,
        ] {
            let bytes = to_bytes(&record(kept)).unwrap();
            let text = String::from_utf8(bytes.clone()).unwrap();
            // A record without a total says nothing of it, as one written before costs were kept.
            assert_eq!(text.contains("\"spent\""), kept.is_some(), "{text}");
            assert_eq!(
                PostedReview::parse(&bytes, "branch-feature").unwrap(),
                record(kept)
            );
        }
        let text = String::from_utf8(to_bytes(&record(Some(spent))).unwrap()).unwrap();
        assert!(text.contains("\"cost_usd\": 0.4123"), "{text}");
        // A hostile total is refused whole: unknown fields, a negative cost, a count too large.
        for bad in [
            r#""spent": {"input_tokens": 1, "output_tokens": 1, "cached_tokens": 0, "cost_usd": null, "extra": 1}"#,
            r#""spent": {"input_tokens": 1, "output_tokens": 1, "cached_tokens": 0, "cost_usd": -1.0}"#,
            r#""spent": {"input_tokens": -1, "output_tokens": 1, "cached_tokens": 0, "cost_usd": null}"#,
            r#""spent": {"input_tokens": 1e30, "output_tokens": 1, "cached_tokens": 0, "cost_usd": null}"#,
            r#""spent": "in=1 out=1 cached=0 usd=?""#,
        ] {
            let text = String::from_utf8(to_bytes(&record(None)).unwrap())
                .unwrap()
                .replacen("\"version\": 1,", &format!("\"version\": 1, {bad},"), 1);
            assert!(
                PostedReview::parse(text.as_bytes(), "branch-feature").is_err(),
                "{text}"
            );
        }
    }
}
