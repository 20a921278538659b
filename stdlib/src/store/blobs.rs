//! The one interface every store kind implements, so that `std/restore` and `std/post` work the
//! same on a folder and on a hosted store: list newest first, judge a producer, fetch within a
//! size limit, keep a blob or a tombstone.
//!
//! A listing may not know what an entry holds (a GitHub artifact is a zip: only its download
//! tells a sealed blob from a tombstone), so [`Candidate::kind`] is optional and [`Fetched`]
//! says it for sure.

use reviewflow_engine::run::BoxFuture;

use super::{EntryKind, Producer, StoreError, StoreName};

/// One entry as a store lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// How status lines name it (`artifact 123`, a local entry id).
    pub id: String,
    /// Its size in bytes as the listing says; a fetch checks it again.
    pub size: u64,
    /// What it holds, when the listing tells.
    pub kind: Option<EntryKind>,
    /// Who produced it, as far as the listing tells (`head`, `run`, …).
    pub producer: Producer,
}

/// Whether a candidate's producer passes the store's `trust` rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judgement {
    Trusted,
    /// Not a producer the rules name; the reason is for one status line.
    Untrusted(String),
    /// The producer could not be told (a look-up failed); treated as untrusted.
    Unknown(String),
    /// The store's cap on producer look-ups is spent: the search stops here.
    CapReached(String),
}

/// What a fetch found.
#[derive(Debug)]
pub enum Fetched {
    Blob(Vec<u8>),
    /// "The conversation of this review was not kept", with what its writer recorded.
    Tombstone(Producer),
}

/// What to keep.
#[derive(Clone, Copy, Debug)]
pub enum Keep<'a> {
    Blob(&'a [u8]),
    Tombstone,
}

/// What a keep did, for a status line and the posted review's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    /// The kept entry's id, when the store knows it now (a local entry); an artifact's id is
    /// known only after the workflow's upload step.
    pub id: Option<String>,
    /// One line: what was kept where.
    pub description: String,
}

/// A store of sealed blobs.
pub trait BlobStore: Send + Sync {
    /// The entries kept under `name`, newest first.
    fn list<'a>(&'a self, name: &'a StoreName)
    -> BoxFuture<'a, Result<Vec<Candidate>, StoreError>>;

    /// Whether the candidate's producer is trusted. Called in listing order; a store may cache
    /// and cap the look-ups this needs.
    fn judge<'a>(&'a self, candidate: &'a Candidate) -> BoxFuture<'a, Judgement>;

    /// The candidate's content, refused before download when over `max_bytes`.
    fn fetch<'a>(
        &'a self,
        candidate: &'a Candidate,
        max_bytes: u64,
    ) -> BoxFuture<'a, Result<Fetched, StoreError>>;

    /// Keeps a blob or a tombstone under `name`.
    fn keep<'a>(
        &'a self,
        name: &'a StoreName,
        item: Keep<'a>,
        producer: Producer,
    ) -> BoxFuture<'a, Result<Kept, StoreError>>;
}
