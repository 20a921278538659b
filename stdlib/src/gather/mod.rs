//! The logic of `std/gather`: what is under review.
//!
//! The change's SHAs are resolved once ([`crate::forge::open_change`]) and used for everything
//! after. The diff base..head is read with a size limit (`max-bytes`; over it is an error, with
//! the sizes) and cut to a path (relative, inside the repository). The since-last-review diff
//! runs from the head the last posted review names to the head, cut to the same path; when that
//! commit is gone or no longer an ancestor of the head (an amend, a rebase), it is the whole
//! diff and [`Gathered::since_note`] says so. Changed-line ranges per file serve later filters
//! ([`crate::forge::filter_findings_in`]); the size tier goes through a [`Gate`] that passes,
//! warns or halts.
//!
//! Blocking (git runs as a child process); the stage calls it on a blocking thread.

mod bounded;
mod error;
mod gate;
pub mod notes;
mod path;
mod run;

pub use error::GatherError;
pub use gate::{Gate, GateOutcome};
pub use path::{MAX_PATH, normalise_path};
pub use run::{DEFAULT_MAX_BYTES, GatherConfig, Gathered, Parts, assemble, gather, gather_change};
