//! What a reviewer is given (inputs) and what it gives back (the outcome), and the events it
//! reports while it runs.

use std::path::PathBuf;

use reviewflow_engine::exec::process::Stream;

use super::result::ReviewFinding;
use super::tries::TryReport;

/// One input of the review: a named blob, fenced in the prompt when `untrusted`.
#[derive(Clone, PartialEq, Eq)]
pub struct ReviewInput {
    /// The file name under `inputs/` and the name in the fence (`gather.diff`).
    pub name: String,
    /// The exact bytes.
    pub bytes: Vec<u8>,
    /// True for content from the change (the diff, the pull request's text).
    pub untrusted: bool,
}

impl ReviewInput {
    /// An input from the change, fenced as untrusted.
    pub fn untrusted(name: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            name: name.into(),
            bytes: bytes.into(),
            untrusted: true,
        }
    }

    /// An input the pipeline itself produced.
    pub fn trusted(name: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            name: name.into(),
            bytes: bytes.into(),
            untrusted: false,
        }
    }
}

impl std::fmt::Debug for ReviewInput {
    // The bytes may be large, and a diff may hold a credential: show only their size.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReviewInput")
            .field("name", &self.name)
            .field("bytes", &format_args!("{} bytes", self.bytes.len()))
            .field("untrusted", &self.untrusted)
            .finish()
    }
}

/// A finished review: the stage's outputs, and how each try went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReviewOutcome {
    /// The review comment (markdown), redacted of the run's secrets.
    pub comment: String,
    /// The findings, messages redacted of the run's secrets.
    pub findings: Vec<ReviewFinding>,
    /// The reviewer's answers to the author's refutations, reasons redacted likewise.
    pub decisions: Vec<crate::forge::Decision>,
    /// The conversation the successful try left (a file or folder), to be scanned and sealed.
    pub conversation: Option<PathBuf>,
    /// The reviewer wrote a comment (always true for a successful review: a blank comment is
    /// no review).
    pub commented: bool,
    /// The review continued the restored conversation.
    pub resumed: bool,
    /// No findings.
    pub clean: bool,
    /// Every try, in order; the last one produced this review.
    pub tries: Vec<TryReport>,
    /// What the reviewer reported of itself, for the manifest (`reviewer.model`, …).
    pub facts: Vec<(String, String)>,
}

/// Something to show while a review runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReviewEvent {
    /// A status line (`review: resuming the conversation …`).
    Status(String),
    /// A line of the reviewer program's output, already redacted.
    Output {
        /// The try that printed it.
        try_number: u32,
        /// Standard output or standard error.
        stream: Stream,
        /// The line, without its newline, lossily decoded.
        line: String,
    },
}
