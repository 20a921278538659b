//! Redaction of secret values from child output, on whole buffers and on streams of chunks.
//!
//! A [`Redactor`] is built once per run from every secret value the run knows. It replaces each
//! occurrence of a value's trimmed form, of its JSON-escaped form, and of its standard and
//! URL-safe base64 encodings (padded, unpadded, and embedded at any offset inside a longer
//! encoded blob) with the marker `[redacted:<name>]`. The marker names the secret, never its
//! bytes, so a log reader learns which credential almost leaked. Values shorter than
//! [`MIN_SECRET_LEN`] bytes after trimming are not redacted (see there); [`Redactor::skipped`]
//! lists them so the caller can warn.
//!
//! Matching is leftmost-longest: where patterns overlap, the longest one starting first wins, so
//! an unpadded encoding never leaves the padding of the padded one behind.
//!
//! A [`RedactingStream`] applies the same replacement to output that arrives in arbitrary
//! chunks: it holds back only the tail of the data that could still be the start of a secret
//! (at most the longest pattern's length minus one byte), so a value split across two reads is
//! still replaced, and memory stays bounded however long a line grows.

mod variants;

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use aho_corasick::automaton::Automaton as _;
use aho_corasick::nfa::contiguous;
use aho_corasick::{AhoCorasick, Anchored, MatchKind};
use zeroize::{Zeroize as _, Zeroizing};

pub use variants::MIN_SECRET_LEN;

/// Why a redactor could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RedactError {
    /// The patterns exceed what the matcher can hold (many very large values).
    #[error("the secret values are too large to search for ({patterns} patterns, {bytes} bytes)")]
    TooLarge {
        /// Number of patterns derived from the values.
        patterns: usize,
        /// Their total size in bytes.
        bytes: usize,
        /// The matcher's own explanation.
        #[source]
        source: aho_corasick::BuildError,
    },
}

/// Replaces every known secret value (and its usual encodings) in output. Cheap to clone.
#[derive(Clone)]
pub struct Redactor {
    inner: Arc<Inner>,
}

struct Inner {
    /// `None` when no secret is long enough to redact.
    matcher: Option<Matcher>,
    /// Names of all secrets, indexed by secret number.
    names: Vec<String>,
    /// Names of the secrets that are too short to redact.
    skipped: Vec<String>,
}

struct Matcher {
    /// Leftmost-longest search over all patterns.
    search: AhoCorasick,
    /// The same patterns, walked anchored to find a tail that may still grow into a match.
    prefixes: contiguous::NFA,
    /// The marker of each pattern, by pattern id.
    markers: Vec<Arc<[u8]>>,
    /// Length of the longest pattern.
    max_len: usize,
}

impl Redactor {
    /// Builds a redactor from `(name, value)` pairs. Names appear in markers; values never leave.
    pub fn new<N, V>(secrets: impl IntoIterator<Item = (N, V)>) -> Result<Self, RedactError>
    where
        N: Into<String>,
        V: AsRef<[u8]>,
    {
        let mut names = Vec::new();
        let mut skipped = Vec::new();
        let mut patterns: Vec<Zeroizing<Vec<u8>>> = Vec::new();
        let mut markers: Vec<Arc<[u8]>> = Vec::new();
        for (name, value) in secrets {
            let name = name.into();
            let found = variants::variants(value.as_ref());
            if found.is_empty() {
                skipped.push(name.clone());
            } else {
                let marker: Arc<[u8]> = marker(&name).into();
                markers.extend(std::iter::repeat_n(marker, found.len()));
                patterns.extend(found);
            }
            names.push(name);
        }
        let matcher = if patterns.is_empty() {
            None
        } else {
            Some(Matcher::build(&patterns, markers)?)
        };
        Ok(Self {
            inner: Arc::new(Inner {
                matcher,
                names,
                skipped,
            }),
        })
    }

    /// A redactor that changes nothing (a run without secrets).
    pub fn empty() -> Self {
        Self {
            inner: Arc::new(Inner {
                matcher: None,
                names: Vec::new(),
                skipped: Vec::new(),
            }),
        }
    }

    /// Names of the secrets whose values are too short to be redacted.
    pub fn skipped(&self) -> &[String] {
        &self.inner.skipped
    }

    /// Length of the longest pattern searched for (0 when there is none).
    pub fn max_pattern_len(&self) -> usize {
        self.inner.matcher.as_ref().map_or(0, |m| m.max_len)
    }

    /// `data` with every secret replaced; borrowed when nothing matched.
    pub fn redact<'a>(&self, data: &'a [u8]) -> Cow<'a, [u8]> {
        let Some(matcher) = &self.inner.matcher else {
            return Cow::Borrowed(data);
        };
        let mut matches = matcher.search.find_iter(data).peekable();
        if matches.peek().is_none() {
            return Cow::Borrowed(data);
        }
        let mut out = Vec::with_capacity(data.len());
        let mut last = 0;
        for m in matches {
            out.extend_from_slice(&data[last..m.start()]);
            out.extend_from_slice(&matcher.markers[m.pattern().as_usize()]);
            last = m.end();
        }
        out.extend_from_slice(&data[last..]);
        Cow::Owned(out)
    }

    /// The marker that stands for secret `name`: `[redacted:<name>]`.
    pub fn marker(name: &str) -> String {
        String::from_utf8_lossy(&marker(name)).into_owned()
    }

    /// A stream that redacts data arriving in chunks.
    pub fn stream(&self) -> RedactingStream {
        RedactingStream {
            redactor: self.clone(),
            pending: Vec::new(),
        }
    }
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.inner.names)
            .field("skipped", &self.inner.skipped)
            .field("max_pattern_len", &self.max_pattern_len())
            .finish_non_exhaustive()
    }
}

impl Matcher {
    fn build(
        patterns: &[Zeroizing<Vec<u8>>],
        markers: Vec<Arc<[u8]>>,
    ) -> Result<Self, RedactError> {
        let too_large = |source| RedactError::TooLarge {
            patterns: patterns.len(),
            bytes: patterns.iter().map(|p| p.len()).sum(),
            source,
        };
        let bytes = patterns.iter().map(|p| p.as_slice());
        let search = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(bytes.clone())
            .map_err(too_large)?;
        let prefixes = contiguous::NFA::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(bytes)
            .map_err(too_large)?;
        let max_len = patterns.iter().map(|p| p.len()).max().unwrap_or(0);
        Ok(Self {
            search,
            prefixes,
            markers,
            max_len,
        })
    }

    /// The first position from which `buf` may still be the start of a match once more data
    /// arrives; `buf.len()` when none. Everything before it can be redacted and released now.
    ///
    /// Only the last `max_len - 1` positions can start a proper prefix of a pattern. Each
    /// candidate is walked through the anchored automaton until it dies; a walk that reaches the
    /// end of `buf` alive is such a prefix. The walks share a budget so that output built to
    /// resemble secret prefixes cannot make this quadratic; when it runs out, the whole window
    /// is held back, which is always correct.
    fn hold_from(&self, buf: &[u8]) -> usize {
        let window_start = buf.len().saturating_sub(self.max_len.saturating_sub(1));
        let Ok(start) = self.prefixes.start_state(Anchored::Yes) else {
            return window_start;
        };
        let mut budget = 4 * self.max_len + 64;
        for from in window_start..buf.len() {
            let mut state = start;
            let mut alive = true;
            for &byte in &buf[from..] {
                if budget == 0 {
                    return window_start;
                }
                budget -= 1;
                state = self.prefixes.next_state(Anchored::Yes, state, byte);
                if self.prefixes.is_dead(state) {
                    alive = false;
                    break;
                }
            }
            if alive {
                return from;
            }
        }
        buf.len()
    }
}

/// `[redacted:<name>]`, with anything but printable ASCII in the name replaced by `_` so that a
/// marker never breaks a line or a log format.
fn marker(name: &str) -> Vec<u8> {
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_graphic() { c } else { '_' })
        .collect();
    format!("[redacted:{clean}]").into_bytes()
}

/// Redacts output that arrives in chunks. Feed it with [`push`](Self::push); call
/// [`finish`](Self::finish) at the end of the stream to release the held-back tail.
pub struct RedactingStream {
    redactor: Redactor,
    /// Tail not yet released: it may be the start of a secret. Never longer than the longest
    /// pattern minus one byte.
    pending: Vec<u8>,
}

impl RedactingStream {
    /// Adds `chunk`; returns the redacted output that is now final (possibly empty).
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        let Some(matcher) = &self.redactor.inner.matcher else {
            return chunk.to_vec();
        };
        let mut buf = std::mem::take(&mut self.pending);
        buf.extend_from_slice(chunk);
        let hold = matcher.hold_from(&buf);
        let mut out = Vec::with_capacity(buf.len());
        let mut last = 0;
        // A match starting before `hold` is final: every pattern that could start there lies
        // wholly inside `buf`, so leftmost-longest picks the same match whatever follows.
        for m in matcher.search.find_iter(&buf) {
            if m.start() >= hold {
                break;
            }
            out.extend_from_slice(&buf[last..m.start()]);
            out.extend_from_slice(&matcher.markers[m.pattern().as_usize()]);
            last = m.end();
        }
        let keep = last.max(hold);
        out.extend_from_slice(&buf[last..keep]);
        self.pending = buf[keep..].to_vec();
        buf.zeroize();
        out
    }

    /// Releases the held-back tail, redacted. The stream is empty and reusable afterwards.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut buf = std::mem::take(&mut self.pending);
        let out = self.redactor.redact(&buf).into_owned();
        buf.zeroize();
        out
    }

    /// Bytes currently held back.
    pub fn buffered(&self) -> usize {
        self.pending.len()
    }
}

impl Drop for RedactingStream {
    fn drop(&mut self) {
        self.pending.zeroize();
    }
}

impl fmt::Debug for RedactingStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedactingStream")
            .field("buffered", &self.pending.len())
            .finish_non_exhaustive()
    }
}
