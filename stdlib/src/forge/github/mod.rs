//! The `github` forge: what `std/post` writes to a pull request (the review comment and its
//! metadata marker, the check run, inline comments), as pure functions over GitHub's limits.
//!
//! No HTTP here: these functions build request bodies and read listed comments; the client
//! that sends them (and handles GitHub's rate limits and errors) lives elsewhere.

mod annotations;
mod body;
mod conclusion;
mod inline;
mod marker;

pub(crate) use marker::marker_line;

pub use annotations::{
    ANNOTATION_MESSAGE_MAX_BYTES, Annotation, AnnotationLevel, Batches,
    MAX_ANNOTATIONS_PER_REQUEST, annotations, batches,
};
pub use body::{
    ANNOTATION_TITLE_MAX_CHARS, CHECK_TEXT_MAX_CHARS, CHECK_TITLE_MAX_CHARS, COMMENT_MAX_CHARS,
    char_count, comment_body, fit, fit_line,
};
pub use conclusion::{BlockOn, CheckConclusion, Conclusion, ReviewState, conclude};
pub use inline::{
    FilterMode, Inline, InlineComment, ReviewEvent, ReviewRequest, Side, Suggested, inline,
    suggestion_block, thread_finding,
};
pub use marker::{
    CommentInfo, DEFAULT_TRUSTED_AUTHORS, MARKER_VERSION, MAX_ID, MAX_NAME, Marker, MarkerError,
    Ours, baseline_of_body, default_trusted_authors, find_ours,
};
