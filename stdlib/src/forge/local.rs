//! The local forge: the change is a git range of a checkout, and posting writes the review to
//! `<dir>/<change id>/<pipeline>/` (by default `<checkout>/.reviewflow/forge/<change id>/<pipeline>/`):
//! one review per change and pipeline, as GitHub keeps one comment per pull request and pipeline,
//! so two pipelines reviewing one change never read or replace each other's record.
//!
//! A post renders every file first, stages each beside its destination, checks that the
//! change's head has not moved, moves the files into place, and writes `posted.json` last. So
//! until the new record is in place, the record names the previous review, and its digests tell
//! which files are its own. When the head moved, nothing is replaced and the error says so.
//!
//! The folder is inside the checkout, which holds the change under review: a record that git
//! tracks came with the change and is refused, and no symbolic link on the way is followed.

use reviewflow_engine::hex::encode as hex;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use reviewflow_engine::nofollow;
use sha2::{Digest, Sha256};

use super::LocalForgeError;
use super::baseline::Baseline;
use super::change::{Change, open_change};
use super::formats::Format;
use super::ids::{MAX_ID, check_change_id, check_id, check_reviewer};
use super::record::RecordError;
use super::record::{
    MAX_RECORD_BYTES, PostedFile, PostedReview, PublishedCounts, RECORD_FILE, RECORD_VERSION,
    timestamp, to_bytes,
};
use super::review::Review;
use crate::git::{self, Sha};
use crate::store::atomic::{atomic_rename, atomic_write, temp_path_in};

/// The forge folder, relative to the checkout.
pub const DEFAULT_FORGE_DIR: &str = ".reviewflow/forge";

/// The author's responses to a change's last review, beside its record.
pub const RESPONSES_FILE: &str = "responses.md";

/// The forge folder's `.gitignore`.
pub const GITIGNORE: &str = "# Posted reviews of the local forge: not part of the repository.\n*\n";

/// A checkout used as a forge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalForge {
    /// The git checkout holding the change.
    pub checkout: PathBuf,
    /// Where reviews are posted: one folder per change.
    pub dir: PathBuf,
    /// The folder of one pipeline's reviews inside a change's ([`pipeline_component`]); `None`
    /// for the change's folder itself (a forge opened without a pipeline).
    pub pipeline: Option<String>,
}

/// The folder a pipeline's reviews take inside a change's: its name, when that is a safe
/// folder name (letters, digits, `.`, `_`, `-`, starting with a letter or digit, at most 64
/// bytes, as every name the language admits but a long one is); otherwise its first safe
/// characters and a digest of the whole name, so that two names never share a folder.
pub fn pipeline_component(name: &str) -> String {
    if check_id("pipeline", name, 64).is_ok() {
        return name.to_owned();
    }
    let safe: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(40)
        .collect();
    let digest = hex(&Sha256::digest(name.as_bytes()));
    let safe = safe.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    if safe.is_empty() {
        format!("p-{}", &digest[..16])
    } else {
        format!("{safe}-{}", &digest[..16])
    }
}

/// What [`LocalForge::keep_total`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TotalKept {
    /// No review was posted for the change: there is no record to keep a total in.
    NoRecord,
    /// The record already keeps that total.
    Unchanged,
    /// The record's `spent` was rewritten.
    Written,
}

/// What a post keeps with the review besides its files (`posted.json`) and adds to `review.md`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// The fingerprints the next review is compared with (`docs/findings.md`).
    pub baseline: Option<Baseline>,
    /// The change's running total of what its reviews spent, this one included.
    pub spent: Option<crate::reviewer::usage::Usage>,
    /// The line under `review.md` that says what the review cost
    /// ([`crate::forge::spent::footer`]).
    pub footer: Option<String>,
}

/// What a post wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted {
    /// The change's folder.
    pub dir: PathBuf,
    /// The record now in `posted.json`.
    pub record: PostedReview,
    /// The files written, in [`Format::ALL`] order, the record last.
    pub files: Vec<PathBuf>,
    /// Where a person reads the review: `review.md` when written, else the first file.
    pub location: PathBuf,
}

impl LocalForge {
    /// A forge posting to `<checkout>/.reviewflow/forge`.
    pub fn new(checkout: impl Into<PathBuf>) -> Self {
        let checkout = checkout.into();
        let dir = checkout.join(DEFAULT_FORGE_DIR);
        LocalForge {
            checkout,
            dir,
            pipeline: None,
        }
    }

    /// A forge posting to `dir`.
    pub fn with_dir(checkout: impl Into<PathBuf>, dir: impl Into<PathBuf>) -> Self {
        LocalForge {
            checkout: checkout.into(),
            dir: dir.into(),
            pipeline: None,
        }
    }

    /// The same forge, keeping `pipeline`'s reviews apart from every other pipeline's.
    pub fn for_pipeline(mut self, pipeline: &str) -> Self {
        self.pipeline = Some(pipeline_component(pipeline));
        self
    }

    /// The change under review: `base`/`head` override the defaults of [`git::change_range`].
    pub fn open_change(
        &self,
        base: Option<&str>,
        head: Option<&str>,
    ) -> Result<Change, LocalForgeError> {
        open_change(&self.checkout, base, head)
    }

    /// The folder of a change's reviews, the pipeline's inside it (the id is checked; nothing
    /// is created).
    pub fn change_dir(&self, change_id: &str) -> Result<PathBuf, LocalForgeError> {
        check_change_id(change_id)?;
        let dir = self.dir.join(change_id);
        Ok(match &self.pipeline {
            Some(p) => dir.join(p),
            None => dir,
        })
    }

    /// The review last posted for `change_id`, if any. A record that is malformed, too large,
    /// reached through a symbolic link, or tracked by git is an error.
    pub fn last_posted(&self, change_id: &str) -> Result<Option<PostedReview>, LocalForgeError> {
        let Some((path, bytes)) = self.read_own(change_id, RECORD_FILE, MAX_RECORD_BYTES + 1)?
        else {
            return Ok(None);
        };
        let bad = |reason: RecordError| LocalForgeError::BadRecord { path, reason };
        if bytes.len() as u64 > MAX_RECORD_BYTES {
            return Err(bad(RecordError::TooLarge));
        }
        PostedReview::parse(&bytes, change_id)
            .map(Some)
            .map_err(bad)
    }

    /// The author's responses to the last posted review's findings: the file
    /// [`RESPONSES_FILE`] beside the record, which the person running reviewflow writes
    /// (`docs/local-forge.md`). Read as the record is ([`LocalForge::read_own`]), its first
    /// [`MAX_TEXT_BYTES`]; no file, no responses. Its author is `local`.
    pub fn responses(
        &self,
        change_id: &str,
    ) -> Result<Vec<super::response::Response>, LocalForgeError> {
        use super::response::{MAX_TEXT_BYTES, parse};
        Ok(
            match self.read_own(change_id, RESPONSES_FILE, MAX_TEXT_BYTES as u64)? {
                Some((_, bytes)) => parse(&String::from_utf8_lossy(&bytes), "local", None),
                None => Vec::new(),
            },
        )
    }

    /// The first `limit` bytes of `file` in a change's folder, and its path; `None` when there
    /// is no such file. The folder is inside the checkout, which holds the change under review:
    /// a file that is not a regular one, reached through a link, or tracked by git (it came with
    /// the change) is an error.
    fn read_own(
        &self,
        change_id: &str,
        file: &str,
        limit: u64,
    ) -> Result<Option<(PathBuf, Vec<u8>)>, LocalForgeError> {
        let dir = self.change_dir(change_id)?;
        let path = dir.join(file);
        let bad = |reason: RecordError| LocalForgeError::BadRecord {
            path: path.clone(),
            reason,
        };
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(LocalForgeError::Io {
                    action: "inspect",
                    path,
                    source,
                });
            }
            Ok(meta) if !meta.file_type().is_file() => {
                return Err(bad(RecordError::NotAFile));
            }
            Ok(_) => {}
        }
        self.check_real_folders(&dir)?;
        if self.is_tracked(&dir)? {
            return Err(bad(RecordError::Tracked));
        }
        let io_err = |source| LocalForgeError::Io {
            action: "read",
            path: path.clone(),
            source,
        };
        let mut bytes = Vec::new();
        // No link followed, no wait on a FIFO swapped in since the check above.
        nofollow::open_regular(&path)
            .map_err(io_err)?
            .take(limit)
            .read_to_end(&mut bytes)
            .map_err(io_err)?;
        Ok(Some((path, bytes)))
    }

    /// Keeps the change's total spent `total` in the record of the review last posted, for a run
    /// whose review did not run (`docs/local-forge.md`): only `spent` changes, every other field
    /// stays, written as a post writes the record. No record: nothing to keep it in.
    pub fn keep_total(
        &self,
        change_id: &str,
        total: crate::reviewer::usage::Usage,
    ) -> Result<TotalKept, LocalForgeError> {
        let Some(mut record) = self.last_posted(change_id)? else {
            return Ok(TotalKept::NoRecord);
        };
        if record.spent == Some(total) {
            return Ok(TotalKept::Unchanged);
        }
        record.spent = Some(total);
        let dir = self.change_dir(change_id)?;
        // Read through real folders a moment ago; checked again right before the write.
        self.check_real_folders(&dir)?;
        atomic_write(&dir.join(RECORD_FILE), &to_bytes(&record)?)?;
        Ok(TotalKept::Written)
    }

    /// Posts `review` for `change` in every format. See [`LocalForge::post_recorded`].
    pub fn post(
        &self,
        change: &Change,
        review: &Review,
        expected_head: &Sha,
    ) -> Result<Posted, LocalForgeError> {
        self.post_formats(change, review, expected_head, &Format::ALL)
    }

    /// [`LocalForge::post_recorded`] keeping no baseline or total in the record.
    pub fn post_formats(
        &self,
        change: &Change,
        review: &Review,
        expected_head: &Sha,
        formats: &[Format],
    ) -> Result<Posted, LocalForgeError> {
        self.post_recorded(change, review, expected_head, formats, &Kept::default())
    }

    /// Writes `review` in `formats` to the change's folder, then the record.
    ///
    /// Refuses ([`LocalForgeError::HeadMoved`]) when the change's head, resolved again now from what
    /// it was first resolved from, is no longer `expected_head`, and
    /// ([`LocalForgeError::ReviewHeadMismatch`]) when the review is of another head. Files of formats
    /// not written this time are removed after the record, so none is left from an older post.
    /// The record keeps what `kept` holds: the baseline, the fingerprints the next review is
    /// compared with (`docs/findings.md`), and the change's total spent; its footer ends
    /// `review.md`.
    pub fn post_recorded(
        &self,
        change: &Change,
        review: &Review,
        expected_head: &Sha,
        formats: &[Format],
        kept: &Kept,
    ) -> Result<Posted, LocalForgeError> {
        let change_id = change.change_id.as_str();
        check_change_id(change_id)?;
        check_id("run id", &review.run_id, MAX_ID)?;
        if let Some(id) = &review.conversation_id {
            check_id("conversation id", id, MAX_ID)?;
        }
        check_reviewer(&review.reviewer)?;
        if review.head != *expected_head {
            return Err(LocalForgeError::ReviewHeadMismatch {
                review: review.head.clone(),
                expected: expected_head.clone(),
            });
        }
        let mut formats: Vec<Format> = formats.to_vec();
        formats.sort_unstable();
        formats.dedup();

        let rendered = formats
            .iter()
            .map(|f| {
                let mut bytes = f.render(change_id, self.pipeline.as_deref(), review)?;
                if let (Format::Markdown, Some(footer)) = (f, &kept.footer) {
                    // After a blank line: a line right after the findings list would join it.
                    bytes.extend_from_slice(format!("\n{footer}\n").as_bytes());
                }
                Ok((*f, bytes))
            })
            .collect::<Result<Vec<_>, LocalForgeError>>()?;
        self.check_head(change, expected_head)?;

        let dir = self.change_dir(change_id)?;
        // Inside the checkout each folder is created and checked one at a time, never through
        // a link: checking after `create_dir_all` would already have written through one.
        let created = if self.dir.starts_with(&self.checkout) {
            nofollow::ensure_dir_in_checkout(&self.checkout, &dir, 0o755).map(drop)
        } else {
            fs::create_dir_all(&dir)
        };
        if let Err(source) = created {
            // A link or a file on the way is named as such.
            self.check_real_folders(&dir)?;
            return Err(LocalForgeError::Io {
                action: "create",
                path: dir.clone(),
                source,
            });
        }
        self.check_real_folders(&dir)?;
        self.ignore_folder()?;

        let staged = stage(&dir, &rendered)?;
        // Checked again after the slow part, right before anything is replaced.
        if let Err(e) = self.check_head(change, expected_head) {
            unstage(&staged);
            return Err(e);
        }
        let mut files = Vec::with_capacity(rendered.len() + 1);
        let mut posted_files = Vec::with_capacity(rendered.len());
        for ((format, bytes), temp) in rendered.iter().zip(&staged) {
            let path = dir.join(format.file_name());
            if let Err(e) = atomic_rename(temp, &path) {
                unstage(&staged);
                return Err(e.into());
            }
            posted_files.push(PostedFile {
                format: *format,
                name: format.file_name().to_owned(),
                sha256: hex(&Sha256::digest(bytes)),
                bytes: bytes.len() as u64,
            });
            files.push(path);
        }

        let record = PostedReview {
            version: RECORD_VERSION,
            change_id: change_id.to_owned(),
            base: review.base.clone(),
            head: review.head.clone(),
            run_id: review.run_id.clone(),
            conversation_id: review.conversation_id.clone(),
            reviewer: review.reviewer.clone(),
            posted_at: timestamp(now_seconds()),
            findings: review.findings.len() as u64,
            files: posted_files,
            baseline: kept.baseline.clone(),
            published: Some(PublishedCounts::of(&review.findings)),
            spent: kept.spent,
        };
        let record_path = dir.join(RECORD_FILE);
        atomic_write(&record_path, &to_bytes(&record)?)?;
        files.push(record_path);

        for stale in Format::ALL.into_iter().filter(|f| !formats.contains(f)) {
            let path = dir.join(stale.file_name());
            match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(LocalForgeError::Io {
                        action: "remove",
                        path,
                        source: e,
                    });
                }
                _ => {}
            }
        }

        // Formats are sorted, markdown first: the file a person reads, when it is written.
        let location = formats
            .first()
            .map_or_else(|| dir.join(RECORD_FILE), |f| dir.join(f.file_name()));
        Ok(Posted {
            dir,
            record,
            files,
            location,
        })
    }

    /// Puts a `.gitignore` of `*` in the forge folder when it has none, so that `git add -A`
    /// does not commit posted reviews (a tracked record is refused when read).
    fn ignore_folder(&self) -> Result<(), LocalForgeError> {
        let path = self.dir.join(".gitignore");
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Ok(atomic_write(&path, GITIGNORE.as_bytes())?)
            }
            Err(source) => Err(LocalForgeError::Io {
                action: "inspect",
                path,
                source,
            }),
            Ok(_) => Ok(()),
        }
    }

    /// The change's head as it is now, resolved again from the same name.
    fn check_head(&self, change: &Change, expected: &Sha) -> Result<(), LocalForgeError> {
        let current = git::resolve(&self.checkout, &change.range.head_ref)?;
        if current == *expected {
            Ok(())
        } else {
            Err(LocalForgeError::HeadMoved {
                expected: expected.clone(),
                current,
            })
        }
    }

    /// Every folder from the forge folder (or, when it lies inside the checkout, from the
    /// checkout) down to `dir` is a real folder, not a symbolic link.
    fn check_real_folders(&self, dir: &Path) -> Result<(), LocalForgeError> {
        let root = if self.dir.starts_with(&self.checkout) {
            self.checkout.as_path()
        } else {
            self.dir.as_path()
        };
        let mut path = root.to_path_buf();
        let rest = dir.strip_prefix(root).unwrap_or(Path::new(""));
        let check = |p: &Path| match fs::symlink_metadata(p) {
            Ok(meta) if meta.file_type().is_dir() => Ok(()),
            Ok(_) => Err(LocalForgeError::NotAFolder {
                path: p.to_path_buf(),
            }),
            Err(source) => Err(LocalForgeError::Io {
                action: "inspect",
                path: p.to_path_buf(),
                source,
            }),
        };
        if root == self.dir {
            check(&path)?;
        }
        for part in rest.components() {
            path.push(part);
            check(&path)?;
        }
        Ok(())
    }

    /// Whether git tracks any file under `dir` (only when `dir` is inside the checkout).
    fn is_tracked(&self, dir: &Path) -> Result<bool, LocalForgeError> {
        // Spelled differently (relative, through a link), the paths may only match canonical.
        let relative = match dir.strip_prefix(&self.checkout) {
            Ok(relative) => relative.to_path_buf(),
            Err(_) => match (dir.canonicalize(), self.checkout.canonicalize()) {
                (Ok(dir), Ok(checkout)) => match dir.strip_prefix(&checkout) {
                    Ok(relative) => relative.to_path_buf(),
                    Err(_) => return Ok(false),
                },
                _ => return Ok(false),
            },
        };
        let Some(relative) = relative.to_str() else {
            return Ok(false);
        };
        let stdout = crate::git::run_ok(
            &self.checkout,
            "ls-files",
            [
                "-z".to_string(),
                "--".to_string(),
                format!(":(literal){relative}"),
            ],
        )?;
        Ok(!stdout.is_empty())
    }
}

/// Writes each rendered file to a temp file in `dir`; on failure removes those written.
fn stage(dir: &Path, rendered: &[(Format, Vec<u8>)]) -> Result<Vec<PathBuf>, LocalForgeError> {
    let mut staged = Vec::with_capacity(rendered.len());
    for (_, bytes) in rendered {
        let temp = temp_path_in(dir);
        if let Err(e) = atomic_write(&temp, bytes) {
            unstage(&staged);
            return Err(e.into());
        }
        staged.push(temp);
    }
    Ok(staged)
}

fn unstage(staged: &[PathBuf]) {
    for temp in staged {
        // Best effort: a leftover temp file carries the store's temp prefix and is harmless.
        let _ = fs::remove_file(temp);
    }
}

fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
