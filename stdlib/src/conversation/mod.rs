//! A review's conversation as it is kept between reviews: a bundle (a small header naming the
//! review it belongs to, then the conversation's bytes), sealed in the envelope and kept in a
//! store. [`seal`] makes and keeps one; [`restore`] finds the one the posted review names by its
//! [`blob_id`].

mod blob_id;
mod bundle;
mod pack;
mod restore;
mod seal;

pub use blob_id::{BLOB_ID_PREFIX, blob_id, parse_blob_id};
pub use bundle::{
    BUNDLE_VERSION, BundleError, BundleHeader, MAX_HEADER_BYTES, Packing, read_bundle,
};
pub use pack::{PackError, pack_folder, unpack_folder};
pub use restore::{RestoreOutcome, RestoreRequest, restore};
pub use seal::{
    MIN_KEY_BYTES, SealError, SealRequest, conversation_id, read_conversation, seal_bytes,
    seal_file, seal_tombstone, short_key,
};
