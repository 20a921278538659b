//! The local forge: a git checkout stands for the forge. The change under review is a git range
//! of the checkout ([`Change`], resolved once); "posting" a review writes it to
//! `.reviewflow/forge/<change id>/` as markdown, JSON, rdjsonl and SARIF, with a `posted.json`
//! record that the next run reads back ([`LocalForge::last_posted`]) the way a hosted forge's
//! comment marker is read. [`filter_findings`] cross-checks a reviewer's findings against the
//! diff before they are posted.
//!
//! Everything here is blocking (git and file I/O); async callers use a blocking thread.
//! `docs/local-forge.md` describes the folder and each file.

mod author;
pub mod baseline;
mod change;
mod commit;
pub mod dialogue;
mod error;
mod filter;
pub mod formats;
pub mod github;
pub mod gitlab;
pub mod identity;
mod ids;
pub mod local;
pub mod order;
mod ranges;
mod record;
mod remote;
pub mod response;
mod review;
pub mod spent;

pub use author::{AuthorMismatch, BOT_SUFFIX, CommitAuthor, check_author};
pub use baseline::{Baseline, BaselineError, BaselineFinding, Dialogue};
pub use change::{Change, MAX_REPO_NAME, open_change, repo_name};
pub use commit::{MAX_BODY_BYTES, MAX_TITLE_CHARS, Message, author_name, message};
pub use dialogue::{Decision, Verdict, converse};
pub use error::LocalForgeError;
pub use filter::{Filtered, filter_findings, filter_findings_in};
pub use formats::Format;
pub use identity::{HeadFiles, fingerprint_all, read_head_files};
pub use ids::{MAX_CHANGE_ID, MAX_ID, MAX_REVIEWER, check_change_id, check_id, check_reviewer};
pub use local::{
    DEFAULT_FORGE_DIR, GITIGNORE, Kept, LocalForge, Posted, RESPONSES_FILE, TotalKept,
    pipeline_component,
};
pub use order::{RunOrder, Superseded};
pub use ranges::{FileRanges, ranges_of};
pub use record::{
    MAX_RECORD_BYTES, PostedFile, PostedReview, PublishedCounts, RECORD_FILE, RECORD_VERSION,
    RecordError,
};
pub use remote::{
    IdentityError, MAX_IDENTITY, RepoSource, check_identity, origin_url, remote_identity,
    repo_identity,
};
pub use response::{Response, ResponseKind, Responses, finding_id};
pub use review::{FindingState, Review, ReviewFinding, StateCounts};
