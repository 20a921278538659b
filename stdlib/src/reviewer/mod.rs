//! The reviewers of `std/review`: the logic the stage calls to turn a change into a comment,
//! findings and a conversation.
//!
//! - [`run_command_reviewer`] runs any program that speaks the protocol of `docs/reviewers.md`:
//!   a folder per try with the prompt ([`prompt`], untrusted inputs fenced by a per-try nonce),
//!   the inputs and the conversation to resume; the program writes a `result.json` that
//!   [`result`] validates strictly.
//! - [`run_rules_reviewer`] is the built-in deterministic reviewer over [`crate::rules`]; its
//!   conversation is a JSON [`transcript`] that grows when resumed.
//! - [`model`] drives the Claude Code and Codex CLIs: a private home per try, the restored
//!   session placed where the CLI resumes it, the answer's findings block parsed.
//! - [`tries`] holds the policy both share: try 1 resumes the restored conversation, later tries
//!   are fresh, and status lines say which ran and why. It is generic over what runs one try.

pub mod budget;
mod command;
pub(crate) mod conversation;
pub mod cost;
pub mod declared_env;
mod error;
pub mod instructions;
pub mod kinds;
pub mod model;
mod outcome;
pub mod program;
pub mod prompt;
pub mod proxy;
pub mod result;
mod rules;
mod secret_env;
mod summary;
pub mod transcript;
pub mod tries;
mod try_folder;
pub mod usage;

pub use command::{CommandReviewer, NO_MODEL_KEY_FOR_BUDGET, run_command_reviewer};
pub use conversation::{Conversation, ConversationError};
pub use error::ReviewerError;
pub use outcome::{ReviewEvent, ReviewInput, ReviewOutcome};
pub use result::{ResultError, ReviewFinding, ReviewResult};
pub use rules::{RulesReviewer, run_rules_reviewer};
pub use secret_env::SecretEnv;
pub use transcript::{Transcript, TranscriptError};
pub use tries::{TryKind, TryOutcome, TryReport};
pub use try_folder::check_input_names;
