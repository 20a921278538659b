//! The files a local post writes, one writer per format. Each takes the review and returns the
//! file's bytes; none touches the disk.
//!
//! | format     | file             | what it is |
//! |------------|------------------|------------|
//! | `markdown` | `review.md`      | the comment and the findings, for people |
//! | `json`     | `review.json`    | the whole review, for programs |
//! | `rdjsonl`  | `review.rdjsonl` | one reviewdog diagnostic per line, for `reviewdog -f=rdjsonl` |
//! | `sarif`    | `review.sarif`   | SARIF 2.1.0, for code scanning |

mod json;
mod markdown;
mod rdjsonl;
mod sarif;

use serde::{Deserialize, Serialize};

use super::LocalForgeError;
use super::review::Review;

pub(crate) use markdown::comment_with_findings;

/// Every schema of a file the forge writes, for `reviewflow schema`: (file name, schema).
pub fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    vec![("review.schema.json", json::schema())]
}
pub use sarif::fingerprint;

/// A file format of the local forge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Markdown,
    Json,
    Rdjsonl,
    Sarif,
}

impl Format {
    pub const ALL: [Format; 4] = [
        Format::Markdown,
        Format::Json,
        Format::Rdjsonl,
        Format::Sarif,
    ];

    /// The name `std/post`'s `formats` child uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Markdown => "markdown",
            Format::Json => "json",
            Format::Rdjsonl => "rdjsonl",
            Format::Sarif => "sarif",
        }
    }

    /// The file it is written to, in the change's folder.
    pub fn file_name(self) -> &'static str {
        match self {
            Format::Markdown => "review.md",
            Format::Json => "review.json",
            Format::Rdjsonl => "review.rdjsonl",
            Format::Sarif => "review.sarif",
        }
    }

    /// The format written to `name`, if it is one of the fixed names.
    pub fn from_file_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.file_name() == name)
    }

    /// The bytes of `review` of change `change_id` by `pipeline` (the forge's name for the
    /// pipeline's folder, when it keeps one per pipeline) in this format.
    pub fn render(
        self,
        change_id: &str,
        pipeline: Option<&str>,
        review: &Review,
    ) -> Result<Vec<u8>, LocalForgeError> {
        match self {
            Format::Markdown => Ok(markdown::render(review).into_bytes()),
            Format::Json => json::render(change_id, review),
            Format::Rdjsonl => rdjsonl::render(review),
            Format::Sarif => sarif::render(review, pipeline),
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| format!("unknown format `{s}` (markdown, json, rdjsonl, sarif)"))
    }
}
