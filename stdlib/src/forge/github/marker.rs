//! The hidden metadata marker of the one review comment per pull request and pipeline (and
//! project, where bound), and finding "our" comment among a pull request's comments.
//!
//! The marker is one HTML comment line, invisible in the rendered comment:
//!
//! ```text
//! <!-- reviewflow:v1 pipeline=enroll-review project=web head=<sha> run=<run id> conversation=<blob id> -->
//! ```
//!
//! A marker written since counts were kept ends with what the review published, by severity
//! (error.warning.info), all and new, so that a re-run on the same head is judged by the verdict
//! of the review it finds (`--fail-on`, docs/executor.md); a marker without them is still read:
//!
//! ```text
//! <!-- reviewflow:v1 pipeline=enroll-review project=web head=<sha> run=<run id> conversation=<blob id> findings=3.1.0 new=1.0.0 -->
//! ```
//!
//! A marker written since run orders were kept ends with the CI run that posted it, `order=<run
//! id>.<attempt>` (GitHub's `GITHUB_RUN_ID` and `GITHUB_RUN_ATTEMPT`, GitLab's pipeline and job
//! ids), after the counts when there are counts; a newer run of the same head is never replaced
//! by an older one ([`crate::forge::order`]). A marker without it is read as older than any run:
//!
//! ```text
//! <!-- reviewflow:v1 pipeline=enroll-review project=web head=<sha> run=<run id> conversation=<blob id> findings=3.1.0 new=1.0.0 order=9876543210.2 -->
//! ```
//!
//! A marker written since costs were kept carries the change's running total of what its model
//! reviews spent (`docs/github.md`, "Costs and budgets"), `spent=<in>.<out>.<cached>.<cost>`: tokens
//! in, out and cached, and the cost in millionths of a dollar, `-` when a vendor did not report it.
//! It goes after the counts and before the order; a marker without it is still read:
//!
//! ```text
//! <!-- reviewflow:v1 pipeline=enroll-review project=web head=<sha> run=<run id> conversation=<blob id> findings=3.1.0 new=1.0.0 spent=120000.8000.0.412300 order=9876543210.2 -->
//! ```
//!
//! A marker that names no head, `head=-`, is of a change no review was posted for yet: a run
//! whose review did not run keeps the change's total spent in it (`docs/github.md`, "Costs and
//! budgets"), with no conversation and no counts. The next posted review replaces it:
//!
//! ```text
//! <!-- reviewflow:v1 pipeline=enroll-review project=web head=- run=<run id> conversation=- spent=120000.8000.0.412300 order=9876543210.2 -->
//! ```
//!
//! `conversation` names the sealed conversation the review kept by its blob id (`blob-` and the
//! SHA-256 of the sealed bytes, 69 characters; [`crate::conversation::blob_id`]).
//!
//! Every field but the counts is always present and in this order; an unbound project, a missing
//! head or a missing conversation is written `-`, so `-` alone is never a value. Values are restricted to
//! `[A-Za-z0-9._-]` (see [`Marker::new`]): no space, `=` or `>` can occur in one, so a value can
//! neither close the HTML comment nor inject another field, and parsing is a strict split.
//!
//! The line after the marker keeps the baseline of finding identity, the fingerprints of the
//! posted findings ([`baseline_of_body`], `docs/findings.md`):
//!
//! ```text
//! <!-- reviewflow:baseline {"version":1,"complete":true,"findings":[…]} -->
//! ```
//!
//! The marker is trusted only on a comment whose author is trusted ([`find_ours`]): anyone who
//! can comment on a pull request can paste a marker line.

use thiserror::Error;

use crate::forge::{PublishedCounts, RunOrder};
use crate::reviewer::usage::{Usage, Usd};
use crate::stages::published::Counts;

/// The marker format this module writes and the only one it reads.
pub const MARKER_VERSION: u32 = 1;

/// The authors whose comments may carry our marker when the caller names none: the
/// `GITHUB_TOKEN` identity of GitHub Actions.
pub const DEFAULT_TRUSTED_AUTHORS: &[&str] = &["github-actions[bot]"];

/// Longest pipeline or project name.
pub const MAX_NAME: usize = 64;
/// Longest run or conversation id.
pub const MAX_ID: usize = 128;

const PREFIX: &str = "<!-- reviewflow:v";
const SUFFIX: &str = " -->";
/// The written form of an absent project or conversation.
const NONE: &str = "-";
/// No marker line is longer than this: a cheap bound before splitting a line of untrusted text.
const MAX_LINE: usize =
    256 + 2 * MAX_NAME + 2 * MAX_ID + 64 + COUNTS_ROOM + SPENT_ROOM + ORDER_ROOM;
/// The two count fields: six numbers of at most 20 digits, their names and separators.
const COUNTS_ROOM: usize = 6 * 20 + 32;
/// The spent field: four numbers of at most 20 digits, its name and separators.
const SPENT_ROOM: usize = 4 * 20 + 16;
/// The order field: two numbers of at most 20 digits, its name and separators.
const ORDER_ROOM: usize = 2 * 20 + 16;

/// A field of a marker that fails its pattern.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("marker field `{field}` is not valid: {reason}")]
pub struct MarkerError {
    pub field: &'static str,
    pub reason: &'static str,
}

/// The metadata of a posted review. Fields are private so that every `Marker` is valid and
/// [`Marker::render`] cannot produce a line that breaks out of the HTML comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    version: u32,
    pipeline: String,
    project: Option<String>,
    /// `None`: no review was posted yet (the marker only keeps the change's total spent).
    head: Option<String>,
    run: String,
    conversation: Option<String>,
    published: Option<PublishedCounts>,
    spent: Option<Usage>,
    order: Option<RunOrder>,
}

impl Marker {
    /// A version-1 marker, every value checked: `pipeline` and `project` match
    /// `[A-Za-z0-9._-]{1,64}`, `head` is 40 or 64 lowercase hex digits (SHA-1 or SHA-256), `run`
    /// and `conversation` match `[A-Za-z0-9._-]{1,128}`; none of them may be `-` alone, which
    /// stands for "none".
    pub fn new(
        pipeline: &str,
        project: Option<&str>,
        head: &str,
        run: &str,
        conversation: Option<&str>,
    ) -> Result<Marker, MarkerError> {
        check_head(head)?;
        Marker::with_head(pipeline, project, Some(head), run, conversation)
    }

    /// A version-1 marker of a change no review was posted for yet (`head=-`): it keeps only
    /// the change's total spent ([`Marker::with_spent`]) and the run's order. The values are
    /// checked as by [`Marker::new`].
    pub fn unreviewed(
        pipeline: &str,
        project: Option<&str>,
        run: &str,
    ) -> Result<Marker, MarkerError> {
        Marker::with_head(pipeline, project, None, run, None)
    }

    fn with_head(
        pipeline: &str,
        project: Option<&str>,
        head: Option<&str>,
        run: &str,
        conversation: Option<&str>,
    ) -> Result<Marker, MarkerError> {
        check_value("pipeline", pipeline, MAX_NAME)?;
        if let Some(p) = project {
            check_value("project", p, MAX_NAME)?;
        }
        if let Some(h) = head {
            check_head(h)?;
        }
        check_value("run", run, MAX_ID)?;
        if let Some(c) = conversation {
            check_value("conversation", c, MAX_ID)?;
        }
        Ok(Marker {
            version: MARKER_VERSION,
            pipeline: pipeline.to_owned(),
            project: project.map(str::to_owned),
            head: head.map(str::to_owned),
            run: run.to_owned(),
            conversation: conversation.map(str::to_owned),
            published: None,
            spent: None,
            order: None,
        })
    }

    /// The same marker with what the review published: numbers only, so no count can break
    /// out of the comment either.
    pub fn with_published(mut self, published: PublishedCounts) -> Marker {
        self.published = Some(published);
        self
    }

    /// The same marker with the change's running total of review costs: numbers only, like the
    /// counts.
    pub fn with_spent(mut self, spent: Option<Usage>) -> Marker {
        self.spent = spent;
        self
    }

    /// The change's running total of review costs; `None` on a marker written before costs were
    /// kept.
    pub fn spent(&self) -> Option<Usage> {
        self.spent
    }

    /// The same marker with the CI run that posts it: numbers only, like the counts.
    pub fn with_order(mut self, order: Option<RunOrder>) -> Marker {
        self.order = order;
        self
    }

    /// The CI run that posted the review; `None` on a marker written before orders were kept or
    /// by a run outside CI.
    pub fn order(&self) -> Option<RunOrder> {
        self.order
    }

    /// What the review published; `None` on a marker written before counts were kept.
    pub fn published(&self) -> Option<PublishedCounts> {
        self.published
    }

    pub fn version(&self) -> u32 {
        self.version
    }
    pub fn pipeline(&self) -> &str {
        &self.pipeline
    }
    pub fn project(&self) -> Option<&str> {
        self.project.as_deref()
    }
    /// The head commit the posted review is of; `None` when no review was posted yet.
    pub fn head(&self) -> Option<&str> {
        self.head.as_deref()
    }
    pub fn run(&self) -> &str {
        &self.run
    }
    pub fn conversation(&self) -> Option<&str> {
        self.conversation.as_deref()
    }

    /// The marker line, without a line break. Put it on the first line of the comment body
    /// ([`Marker::parse_body`] takes the first marker line).
    pub fn render(&self) -> String {
        let counts = self.published.map_or_else(String::new, |p| {
            format!(
                " findings={} new={}",
                render_counts(&p.findings),
                render_counts(&p.new)
            )
        });
        let spent = self
            .spent
            .map_or_else(String::new, |u| format!(" spent={}", render_spent(&u)));
        let order = self
            .order
            .map_or_else(String::new, |o| format!(" order={o}"));
        format!(
            "{PREFIX}{} pipeline={} project={} head={} run={} conversation={}{counts}{spent}{order}{SUFFIX}",
            self.version,
            self.pipeline,
            self.project.as_deref().unwrap_or(NONE),
            self.head.as_deref().unwrap_or(NONE),
            self.run,
            self.conversation.as_deref().unwrap_or(NONE),
        )
    }

    /// The marker of a comment body: the **first** line that is exactly a marker, from the start
    /// of the line to its end (a trailing `\r` aside, as GitHub may store CRLF line breaks).
    ///
    /// The first, not the last: reviewflow writes its marker on the first line, and what
    /// follows is review text, which may quote untrusted input (a reviewer can be prompted to
    /// print a marker line). Taking the last one would let that text override the real head,
    /// run or conversation. An indented or quoted line, or a marker inside other text, is not
    /// a marker line.
    pub fn parse_body(body: &str) -> Option<Marker> {
        marker_line(body).map(|(_, m)| m)
    }

    /// Parses one line that must be exactly a marker.
    pub fn parse_line(line: &str) -> Option<Marker> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.len() > MAX_LINE {
            return None;
        }
        let rest = line.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
        let mut parts = rest.split(' ');
        // Exactly `1`: `01` would parse to the same number but is not what we write.
        if parts.next()? != MARKER_VERSION.to_string() {
            return None;
        }
        let mut field =
            |name: &str| -> Option<&str> { parts.next()?.strip_prefix(name)?.strip_prefix('=') };
        let pipeline = field("pipeline")?;
        let project = field("project")?;
        let head = field("head")?;
        let run = field("run")?;
        let conversation = field("conversation")?;
        // Both counts or neither (a marker written before counts were kept), then the spent
        // total or nothing (one written before costs were kept), then the order or nothing (one
        // written before orders were kept), and nothing else.
        let mut rest = parts.collect::<Vec<_>>();
        let order = match rest.last().and_then(|p| p.strip_prefix("order=")) {
            Some(o) => {
                let order = RunOrder::parse(o)?;
                rest.pop();
                Some(order)
            }
            None => None,
        };
        let spent = match rest.last().and_then(|p| p.strip_prefix("spent=")) {
            Some(s) => {
                let spent = parse_spent(s)?;
                rest.pop();
                Some(spent)
            }
            None => None,
        };
        let published = match rest[..] {
            [] => None,
            [findings, new] => Some(PublishedCounts {
                findings: parse_counts(findings.strip_prefix("findings=")?)?,
                new: parse_counts(new.strip_prefix("new=")?)?,
            }),
            _ => return None,
        };
        let optional = |v: &str| (v != NONE).then(|| v.to_owned());
        let (project, head, conversation) =
            (optional(project), optional(head), optional(conversation));
        let marker = Marker::with_head(
            pipeline,
            project.as_deref(),
            head.as_deref(),
            run,
            conversation.as_deref(),
        )
        .ok()?;
        // A marker with no head keeps a total only: it has no review to name a conversation
        // of or to count.
        if marker.head.is_none() && (marker.conversation.is_some() || published.is_some()) {
            return None;
        }
        let marker = match published {
            Some(p) => marker.with_published(p),
            None => marker,
        };
        Some(marker.with_spent(spent).with_order(order))
    }

    /// Whether this marker belongs to `pipeline` and `project` (both compared exactly; an
    /// unbound project matches only an unbound project).
    pub fn matches(&self, pipeline: &str, project: Option<&str>) -> bool {
        self.pipeline == pipeline && self.project.as_deref() == project
    }
}

/// The baseline of finding identity a comment body keeps (`docs/findings.md`): only the line
/// right after its first marker line, where reviewflow writes it and before any review text (so
/// text a reviewer was prompted to print cannot stand in for it). `None` when that line is not
/// a valid baseline line. Trust the result only from a comment [`find_ours`] found.
pub fn baseline_of_body(body: &str) -> Option<crate::forge::Baseline> {
    let (range, _) = marker_line(body)?;
    let rest = body.get(range.end..)?;
    let rest = rest.strip_prefix('\r').unwrap_or(rest);
    let rest = rest.strip_prefix('\n')?;
    let line = rest.split('\n').next()?;
    crate::forge::baseline::parse_line(line)
}

/// The byte range of the first marker line of `body` (without its line break) and its marker.
pub(crate) fn marker_line(body: &str) -> Option<(std::ops::Range<usize>, Marker)> {
    let mut start = 0;
    for line in body.split_inclusive('\n') {
        let text = line.strip_suffix('\n').unwrap_or(line);
        if let Some(m) = Marker::parse_line(text) {
            let text = text.strip_suffix('\r').unwrap_or(text);
            return Some((start..start + text.len(), m));
        }
        start += line.len();
    }
    None
}

fn check_value(field: &'static str, v: &str, max: usize) -> Result<(), MarkerError> {
    let err = |reason| Err(MarkerError { field, reason });
    if v.is_empty() {
        return err("empty");
    }
    if v.len() > max {
        return err("too long");
    }
    if v == NONE {
        return err("`-` alone stands for none");
    }
    if !v
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return err("only A-Z, a-z, 0-9, `.`, `_` and `-` are allowed");
    }
    Ok(())
}

/// `error.warning.info`.
fn render_counts(c: &Counts) -> String {
    format!("{}.{}.{}", c.error, c.warning, c.info)
}

/// Exactly what [`render_counts`] writes: three decimal numbers without a sign or a leading zero.
fn parse_counts(v: &str) -> Option<Counts> {
    let mut parts = v.split('.');
    let mut number = || -> Option<u64> {
        let p = parts.next()?;
        let canonical = !p.is_empty()
            && p.bytes().all(|b| b.is_ascii_digit())
            && (p == "0" || !p.starts_with('0'));
        canonical.then(|| p.parse().ok()).flatten()
    };
    let counts = Counts {
        error: number()?,
        warning: number()?,
        info: number()?,
    };
    parts.next().is_none().then_some(counts)
}

/// `in.out.cached.micro-dollars`, the cost `-` when it is unknown.
fn render_spent(u: &Usage) -> String {
    let cost = u
        .cost_usd
        .map_or_else(|| NONE.to_owned(), |c| c.0.to_string());
    format!(
        "{}.{}.{}.{cost}",
        u.input_tokens, u.output_tokens, u.cached_tokens
    )
}

/// Exactly what [`render_spent`] writes: four canonical decimal numbers, the last one or `-`.
fn parse_spent(v: &str) -> Option<Usage> {
    let mut parts = v.split('.');
    let mut next = || parts.next();
    let (input, output, cached, cost) = (next()?, next()?, next()?, next()?);
    if next().is_some() {
        return None;
    }
    Some(Usage {
        input_tokens: canonical_number(input)?,
        output_tokens: canonical_number(output)?,
        cached_tokens: canonical_number(cached)?,
        cost_usd: match cost {
            NONE => None,
            micros => Some(Usd(canonical_number(micros)?)),
        },
    })
}

/// A decimal number as we write it: digits only, no sign, no leading zero.
fn canonical_number(p: &str) -> Option<u64> {
    let canonical =
        !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && (p == "0" || !p.starts_with('0'));
    canonical.then(|| p.parse().ok()).flatten()
}

fn check_head(v: &str) -> Result<(), MarkerError> {
    if !matches!(v.len(), 40 | 64) {
        return Err(MarkerError {
            field: "head",
            reason: "not 40 or 64 hex digits",
        });
    }
    if !v.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(MarkerError {
            field: "head",
            reason: "not lowercase hex",
        });
    }
    Ok(())
}

/// A comment of a pull request as the forge lists it (`GET …/issues/{n}/comments`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentInfo {
    pub id: u64,
    pub body: String,
    /// `user.login`.
    pub author_login: String,
    /// `user.type`: `"Bot"` or `"User"` (or `"Organization"`).
    pub author_type: String,
    pub created_at: Option<String>,
}

/// Our comment on a pull request, and any others that carry the same marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ours<'a> {
    /// The oldest matching comment: the one to update.
    pub ours: &'a CommentInfo,
    /// Its marker.
    pub marker: Marker,
    /// Ids of the newer matching comments (left by a race of two runs), ascending. The caller
    /// may delete them or report them; they are never updated.
    pub duplicates: Vec<u64>,
}

/// The trusted authors as owned strings, for callers that configure none.
pub fn default_trusted_authors() -> Vec<String> {
    DEFAULT_TRUSTED_AUTHORS
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

/// Finds our review comment for `pipeline` and `project` among `comments`.
///
/// Only a comment by one of `trusted_authors` counts: anyone who can comment can post a body
/// with a forged marker (say, naming another head so that a conversation is resumed against
/// the wrong commit). Logins are compared ASCII case-insensitively, as GitHub logins are; a
/// trusted login ending in `[bot]` also requires `author_type == "Bot"`.
///
/// Several matches come from two runs racing to create the comment: the oldest (lowest id,
/// as GitHub assigns ids in creation order; `created_at` is not used) is ours, the rest are
/// [`Ours::duplicates`].
pub fn find_ours<'a>(
    comments: &'a [CommentInfo],
    pipeline: &str,
    project: Option<&str>,
    trusted_authors: &[String],
) -> Option<Ours<'a>> {
    let mut matching: Vec<(&CommentInfo, Marker)> = comments
        .iter()
        .filter(|c| is_trusted(c, trusted_authors))
        .filter_map(|c| Some((c, Marker::parse_body(&c.body)?)))
        .filter(|(_, m)| m.matches(pipeline, project))
        .collect();
    matching.sort_by_key(|(c, _)| c.id);
    let mut rest = matching.into_iter();
    let (ours, marker) = rest.next()?;
    Some(Ours {
        ours,
        marker,
        duplicates: rest.map(|(c, _)| c.id).collect(),
    })
}

fn is_trusted(comment: &CommentInfo, trusted_authors: &[String]) -> bool {
    trusted_authors.iter().any(|t| {
        t.eq_ignore_ascii_case(&comment.author_login)
            && (!t.to_ascii_lowercase().ends_with("[bot]") || comment.author_type == "Bot")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";

    fn marker() -> Marker {
        Marker::new("enroll-review", Some("web"), HEAD, "123-1", Some("conv.1")).unwrap()
    }

    fn comment(id: u64, login: &str, kind: &str, body: &str) -> CommentInfo {
        CommentInfo {
            id,
            body: body.into(),
            author_login: login.into(),
            author_type: kind.into(),
            created_at: None,
        }
    }

    #[test]
    fn renders_and_parses_back() {
        let m = marker();
        let line = m.render();
        assert_eq!(
            line,
            format!(
                "<!-- reviewflow:v1 pipeline=enroll-review project=web head={HEAD} run=123-1 \
                 conversation=conv.1 -->"
            )
        );
        assert_eq!(Marker::parse_line(&line), Some(m));
        let bare = Marker::new("p", None, &"a".repeat(64), "r", None).unwrap();
        let line = bare.render();
        assert!(line.contains("project=- ") && line.contains("conversation=- -->"));
        assert_eq!(Marker::parse_line(&line), Some(bare));
    }

    #[test]
    fn the_published_counts_render_and_parse_back() {
        let counts = |error, warning, info| Counts {
            error,
            warning,
            info,
        };
        let published = PublishedCounts {
            findings: counts(3, 1, 0),
            new: counts(1, 0, 0),
        };
        let m = marker().with_published(published);
        let line = m.render();
        assert!(
            line.ends_with(" conversation=conv.1 findings=3.1.0 new=1.0.0 -->"),
            "{line}"
        );
        assert_eq!(Marker::parse_line(&line), Some(m));
        assert_eq!(
            Marker::parse_line(&line).and_then(|m| m.published()),
            Some(published)
        );
        // A marker written before counts were kept: read, without counts.
        assert_eq!(
            Marker::parse_line(&marker().render()).unwrap().published(),
            None
        );
        for bad in [
            line.replace(" new=1.0.0", ""),
            line.replace("findings=3.1.0", "findings=3.1"),
            line.replace("findings=3.1.0", "findings=03.1.0"),
            line.replace("findings=3.1.0", "findings=-3.1.0"),
            line.replace("findings=3.1.0", "findings=3.1.0.0"),
            line.replace("findings=3.1.0", "findings=3..0"),
            line.replace("new=1.0.0", "new=1.0.99999999999999999999999"),
            line.replace(" findings=3.1.0 new=1.0.0", " new=1.0.0 findings=3.1.0"),
            line.replace(" -->", " extra=1 -->"),
        ] {
            assert_eq!(Marker::parse_line(&bad), None, "{bad}");
        }
    }

    #[test]
    fn the_run_order_renders_and_parses_back() {
        let order = RunOrder {
            run: 9_876_543_210,
            attempt: 2,
        };
        let counted = marker().with_published(PublishedCounts {
            findings: Counts::default(),
            new: Counts::default(),
        });
        for m in [marker(), counted] {
            let ordered = m.clone().with_order(Some(order));
            let line = ordered.render();
            assert!(line.ends_with(" order=9876543210.2 -->"), "{line}");
            assert_eq!(Marker::parse_line(&line), Some(ordered.clone()));
            assert_eq!(
                Marker::parse_line(&line).and_then(|m| m.order()),
                Some(order)
            );
            // A marker written before orders were kept: read, without one.
            assert_eq!(
                Marker::parse_line(&m.render()).and_then(|m| m.order()),
                None
            );
            for bad in [
                line.replace("order=9876543210.2", "order=9876543210"),
                line.replace("order=9876543210.2", "order=09876543210.2"),
                line.replace("order=9876543210.2", "order=1.2 order=1.2"),
                line.replace("order=9876543210.2", "order="),
            ] {
                assert_eq!(Marker::parse_line(&bad), None, "{bad}");
            }
        }
        // The order goes last: before the counts it is no marker.
        let counted = marker()
            .with_published(PublishedCounts {
                findings: Counts::default(),
                new: Counts::default(),
            })
            .with_order(Some(order))
            .render()
            .replace(
                " findings=0.0.0 new=0.0.0 order=9876543210.2",
                " order=9876543210.2 findings=0.0.0 new=0.0.0",
            );
        assert_eq!(Marker::parse_line(&counted), None);
    }

    #[test]
    fn the_spent_total_renders_and_parses_back() {
        let spent = Usage {
            input_tokens: 120_000,
            output_tokens: 8_000,
            cached_tokens: 0,
            cost_usd: Some(Usd(412_300)),
        };
        let unknown = Usage {
            cost_usd: None,
            ..spent
        };
        let order = RunOrder { run: 7, attempt: 1 };
        let counted = marker().with_published(PublishedCounts {
            findings: Counts::default(),
            new: Counts::default(),
        });
        for m in [marker(), counted] {
            let kept = m.clone().with_spent(Some(spent)).with_order(Some(order));
            let line = kept.render();
            assert!(
                line.ends_with(" spent=120000.8000.0.412300 order=7.1 -->"),
                "{line}"
            );
            assert_eq!(Marker::parse_line(&line), Some(kept.clone()));
            assert_eq!(
                Marker::parse_line(&line).and_then(|m| m.spent()),
                Some(spent)
            );
            let unknown = m.clone().with_spent(Some(unknown));
            let line_unknown = unknown.render();
            assert!(
                line_unknown.ends_with(" spent=120000.8000.0.- -->"),
                "{line_unknown}"
            );
            assert_eq!(Marker::parse_line(&line_unknown), Some(unknown));
            // A marker written before costs were kept: read, without a total.
            assert_eq!(
                Marker::parse_line(&m.clone().with_order(Some(order)).render())
                    .and_then(|m| m.spent()),
                None
            );
            for bad in [
                line.replace("spent=120000.8000.0.412300", "spent=120000.8000.0"),
                line.replace("spent=120000.8000.0.412300", "spent=120000.8000.0.412300.1"),
                line.replace("spent=120000.8000.0.412300", "spent=0120000.8000.0.412300"),
                line.replace("spent=120000.8000.0.412300", "spent=-.8000.0.412300"),
                line.replace("spent=120000.8000.0.412300", "spent=120000.8000.0.-1"),
                line.replace(
                    "spent=120000.8000.0.412300",
                    "spent=1.2.3.99999999999999999999999",
                ),
                line.replace("spent=120000.8000.0.412300", "spent=1.2.3.4-->"),
                line.replace("spent=120000.8000.0.412300", "spent=1.2.3.4 spent=1.2.3.4"),
                line.replace("spent=120000.8000.0.412300", "spent="),
                line.replace(
                    " spent=120000.8000.0.412300 order=7.1",
                    " order=7.1 spent=120000.8000.0.412300",
                ),
            ] {
                assert_eq!(Marker::parse_line(&bad), None, "{bad}");
            }
        }
        // Before the counts it is no marker.
        let misplaced = marker()
            .with_published(PublishedCounts {
                findings: Counts::default(),
                new: Counts::default(),
            })
            .with_spent(Some(spent))
            .render()
            .replace(
                " findings=0.0.0 new=0.0.0 spent=120000.8000.0.412300",
                " spent=120000.8000.0.412300 findings=0.0.0 new=0.0.0",
            );
        assert_eq!(Marker::parse_line(&misplaced), None);
        // The largest total still fits the line's bound.
        let most = Usage {
            input_tokens: u64::MAX,
            output_tokens: u64::MAX,
            cached_tokens: u64::MAX,
            cost_usd: Some(Usd(u64::MAX)),
        };
        let full = Marker::new(
            &"p".repeat(MAX_NAME),
            Some(&"w".repeat(MAX_NAME)),
            &"a".repeat(64),
            &"r".repeat(MAX_ID),
            Some(&"c".repeat(MAX_ID)),
        )
        .unwrap()
        .with_published(PublishedCounts {
            findings: Counts {
                error: u64::MAX,
                warning: u64::MAX,
                info: u64::MAX,
            },
            new: Counts {
                error: u64::MAX,
                warning: u64::MAX,
                info: u64::MAX,
            },
        })
        .with_spent(Some(most))
        .with_order(Some(RunOrder {
            run: u64::MAX,
            attempt: u64::MAX,
        }));
        assert_eq!(Marker::parse_line(&full.render()), Some(full));
    }

    #[test]
    fn a_marker_with_no_head_round_trips_and_keeps_only_a_total() {
        let spent = Usage {
            input_tokens: 5,
            output_tokens: 6,
            cached_tokens: 0,
            cost_usd: None,
        };
        let order = Some(RunOrder { run: 3, attempt: 1 });
        let m = Marker::unreviewed("enroll-review", Some("web"), "123-1")
            .unwrap()
            .with_spent(Some(spent))
            .with_order(order);
        let line = m.render();
        assert_eq!(
            line,
            "<!-- reviewflow:v1 pipeline=enroll-review project=web head=- run=123-1 conversation=- spent=5.6.0.- order=3.1 -->"
        );
        let parsed = Marker::parse_line(&line).unwrap();
        assert_eq!((parsed.head(), parsed.spent()), (None, Some(spent)));
        assert_eq!(parsed, m);
        assert_eq!(marker().head(), Some(HEAD));
        // `-` alone is none; `--`, an empty head or a head with a review's parts is no marker.
        for bad in [
            line.replace("head=-", "head=--"),
            line.replace("head=-", "head="),
            line.replace("conversation=-", "conversation=c"),
            line.replace(" spent=", " findings=0.0.0 new=0.0.0 spent="),
        ] {
            assert_eq!(Marker::parse_line(&bad), None, "{bad}");
        }
        assert!(Marker::new("p", None, "-", "r", None).is_err());
        assert!(Marker::new("p", None, "", "r", None).is_err());
        assert!(Marker::unreviewed("p", None, "-").is_err());
    }

    #[test]
    fn a_blob_id_is_a_conversation_value() {
        let id = crate::conversation::blob_id(b"sealed bytes");
        let m = Marker::new("p", Some("web"), HEAD, "r", Some(&id)).unwrap();
        let parsed = Marker::parse_line(&m.render()).unwrap();
        assert_eq!(parsed.conversation(), Some(id.as_str()));
    }

    #[test]
    fn rejects_values_that_could_escape_or_inject() {
        for bad in ["a b", "a-->", "x=y", "", "-", "a\nb", "é", &"a".repeat(65)] {
            assert!(Marker::new(bad, None, HEAD, "r", None).is_err(), "{bad:?}");
        }
        assert!(Marker::new("p", None, HEAD, "r conversation=x", None).is_err());
        assert!(Marker::new("p", None, HEAD, &"r".repeat(129), None).is_err());
        assert!(Marker::new("p", None, HEAD, &"r".repeat(128), None).is_ok());
        assert!(Marker::new("p", None, &HEAD.to_uppercase(), "r", None).is_err());
        assert!(Marker::new("p", None, &HEAD[..39], "r", None).is_err());
        assert!(Marker::new("p", None, HEAD, "r", Some("-")).is_err());
    }

    #[test]
    fn parse_line_is_strict() {
        let line = marker().render();
        assert!(Marker::parse_line(&format!("{line}\r")).is_some());
        for bad in [
            format!(" {line}"),
            format!("{line} "),
            format!("> {line}"),
            line.replace("v1", "v2"),
            line.replace("v1", "v01"),
            line.replace(" run=", " extra=1 run="),
            line.replace(" -->", " extra=1 -->"),
            line.replace("project=web ", ""),
            line.replace("run=123-1", "run="),
            line.replace(' ', "  "),
        ] {
            assert_eq!(Marker::parse_line(&bad), None, "{bad}");
        }
    }

    #[test]
    fn first_marker_line_wins() {
        let ours = marker();
        let forged = Marker::new("enroll-review", Some("web"), &"f".repeat(40), "9", None).unwrap();
        let body = format!(
            "{}\n## Review\ntext {} inline\n{}\n",
            ours.render(),
            forged.render(),
            forged.render()
        );
        assert_eq!(Marker::parse_body(&body), Some(ours.clone()));
        let crlf = format!("intro\r\n{}\r\nmore", ours.render());
        assert_eq!(Marker::parse_body(&crlf), Some(ours.clone()));
        let (range, _) = marker_line(&crlf).unwrap();
        assert_eq!(&crlf[range], ours.render());
        assert_eq!(Marker::parse_body("no marker here"), None);
    }

    #[test]
    fn the_baseline_is_read_only_from_the_line_after_the_marker() {
        use crate::forge::baseline::{Baseline, render_line};
        let baseline = Baseline {
            version: 1,
            complete: true,
            findings: vec![crate::forge::BaselineFinding {
                fingerprint: "a".repeat(32),
                rule: "todo-added".into(),
                severity: None,
                path: "a.rs".into(),
                line: Some(1),
                message: "m".into(),
                moved: None,
                dialogue: None,
            }],
        };
        let line = render_line(&baseline);
        let m = marker().render();
        let body = format!("{m}\n{line}\nreview");
        assert_eq!(baseline_of_body(&body), Some(baseline.clone()));
        let crlf = format!("{m}\r\n{line}\r\nreview");
        assert_eq!(baseline_of_body(&crlf), Some(baseline));
        // Review text that prints a baseline line further down is not the baseline.
        assert_eq!(baseline_of_body(&format!("{m}\nreview\n{line}")), None);
        assert_eq!(baseline_of_body(&format!("{line}\n{m}")), None);
        assert_eq!(baseline_of_body(&m), None);
    }

    #[test]
    fn matches_pipeline_and_project() {
        let m = marker();
        assert!(m.matches("enroll-review", Some("web")));
        assert!(!m.matches("enroll-review", None));
        assert!(!m.matches("enroll-review", Some("api")));
        assert!(!m.matches("other", Some("web")));
        let unbound = Marker::new("enroll-review", None, HEAD, "1", None).unwrap();
        assert!(unbound.matches("enroll-review", None));
        assert!(!unbound.matches("enroll-review", Some("web")));
    }

    #[test]
    fn find_ours_trusts_only_trusted_authors_and_reports_duplicates() {
        let body = format!("{}\nreview", marker().render());
        let other = Marker::new("enroll-review", Some("api"), HEAD, "1", None).unwrap();
        let comments = vec![
            comment(5, "mallory", "User", &body),
            comment(9, "github-actions[bot]", "Bot", &body),
            comment(7, "GitHub-Actions[bot]", "Bot", &body),
            comment(3, "github-actions[bot]", "Bot", &other.render()),
            comment(2, "github-actions[bot]", "User", &body),
            comment(1, "github-actions[bot]", "Bot", "no marker"),
        ];
        let trusted = default_trusted_authors();
        let found = find_ours(&comments, "enroll-review", Some("web"), &trusted).unwrap();
        assert_eq!(found.ours.id, 7);
        assert_eq!(found.duplicates, vec![9]);
        assert_eq!(found.marker, marker());
        let api = find_ours(&comments, "enroll-review", Some("api"), &trusted).unwrap();
        assert_eq!((api.ours.id, api.duplicates.len()), (3, 0));
        assert!(find_ours(&comments, "enroll-review", None, &trusted).is_none());
        assert!(find_ours(&comments, "enroll-review", Some("web"), &[]).is_none());
        let users = vec!["mallory".to_owned()];
        let found = find_ours(&comments, "enroll-review", Some("web"), &users).unwrap();
        assert_eq!(found.ours.id, 5);
    }
}
