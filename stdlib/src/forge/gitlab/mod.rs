//! The `gitlab` forge: what `std/post` writes to a merge request, as pure functions. The note
//! and its marker are the GitHub forge's ([`super::github`]: the same marker line, the same
//! body); what differs is here: the commit status that is the honest check, and the
//! `position` of a discussion on a changed line.

mod discussion;
mod status;

pub use discussion::{MAX_DISCUSSIONS, Placed, place};
pub use status::{STATUS_TEXT_MAX_CHARS, StatusState, commit_status};
