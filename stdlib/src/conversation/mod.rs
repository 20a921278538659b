//! A review's conversation as it is kept between reviews: a bundle (a small header naming the
//! review it belongs to, then the conversation's bytes), sealed in the envelope and kept in a
//! store. [`seal`] makes and keeps one; [`restore`] finds the one the posted review names.

mod bundle;
mod restore;
mod seal;

pub use bundle::{BUNDLE_VERSION, BundleError, BundleHeader, MAX_HEADER_BYTES, read_bundle};
pub use restore::{RestoreOutcome, RestoreRequest, restore};
pub use seal::{SealError, SealRequest, seal_file, seal_tombstone};
