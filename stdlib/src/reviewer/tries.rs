//! The try policy of `std/review`: try 1 resumes the restored conversation, later tries are
//! fresh, and a status line says which ran and why.
//!
//! [`TrySequence`] is the policy as a small state machine: ask it for the next [`Attempt`], run
//! the attempt however you like, hand it the result. [`run_tries`] (async) and
//! [`run_tries_blocking`] drive it with a closure. Nothing here starts a process, so the policy is
//! tested with plain closures.
//!
//! Rules (see `docs/reviewers.md`):
//! - with a conversation, try 1 is resumed and every later try fresh; without one, all are fresh;
//! - any failure of a try is followed by the next try, if one is left;
//! - a resumed try whose review says it did not resume is a refused resume: a failure;
//! - a fresh try whose review says it resumed is a failure too (nothing was given to resume);
//! - a cancelled try ends the sequence, and so does a failure no later try could better
//!   ([`TryFailure::ends_tries`]: every account of the reviewer at its limit).
//!
//! Status lines carry no stage name: the caller prefixes them (`review: …`).

use std::fmt;
use std::future::Future;

use super::conversation::Conversation;

/// Tries when the stage does not say.
pub const DEFAULT_TRIES: u32 = 2;

/// The most tries a stage may ask for.
pub const MAX_TRIES: u32 = 5;

/// Longest failure reason kept, in characters: reasons quote a reviewer's error output.
const MAX_REASON_CHARS: usize = 300;

/// Whether a try continued the restored conversation or started from nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TryKind {
    Resumed,
    Fresh,
}

impl TryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TryKind::Resumed => "resumed",
            TryKind::Fresh => "fresh",
        }
    }
}

impl fmt::Display for TryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a try ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TryOutcome {
    /// It produced the review.
    Reviewed,
    /// It ended without a review; [`TryReport::reason`] says why.
    Failed,
    /// The run was cancelled during it.
    Cancelled,
}

/// One try, after the fact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TryReport {
    /// 1, 2, …
    pub number: u32,
    pub kind: TryKind,
    pub outcome: TryOutcome,
    /// Why it failed (one line); `None` for a review.
    pub reason: Option<String>,
    /// What it spent, when the reviewer or its proxy reported it ([`Self::number`]'s
    /// [`TrySequence::note_usage`]).
    pub usage: Option<super::usage::Usage>,
}

/// One try to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    pub number: u32,
    pub kind: TryKind,
    /// The conversation to resume: `Some` exactly when `kind` is [`TryKind::Resumed`].
    pub resume: Option<Conversation>,
}

/// What a successful try reports about itself.
pub trait Reviewed {
    /// Whether the review continued the conversation it was given.
    fn resumed(&self) -> bool;
}

/// Why a try failed.
pub trait TryFailure: fmt::Display {
    /// True when the run was cancelled: no further try runs.
    fn is_cancelled(&self) -> bool {
        false
    }

    /// True when no later try could do better (every account of the reviewer reached its
    /// limit): the sequence ends with it.
    fn ends_tries(&self) -> bool {
        false
    }
}

impl TryFailure for String {}

/// The review of the try that succeeded, with every try's report.
#[derive(Debug)]
pub struct Tried<T> {
    pub review: T,
    /// The successful try was a resumed one.
    pub resumed: bool,
    pub reports: Vec<TryReport>,
}

/// No try produced a review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReviewed {
    pub reports: Vec<TryReport>,
    /// The last try was cancelled (rather than every try failing).
    pub cancelled: bool,
}

/// The try policy as a state machine.
#[derive(Debug)]
pub struct TrySequence {
    max: u32,
    resume: Option<Conversation>,
    reports: Vec<TryReport>,
    finished: bool,
}

impl TrySequence {
    /// A sequence of at most `tries` tries (clamped to 1..=[`MAX_TRIES`]), the first resuming
    /// `resume` when there is one.
    pub fn new(tries: u32, resume: Option<Conversation>) -> Self {
        Self {
            max: tries.clamp(1, MAX_TRIES),
            resume,
            reports: Vec::new(),
            finished: false,
        }
    }

    /// The next try to run, announcing it on `status` when it is the first; `None` when the
    /// sequence is over.
    pub fn next_attempt(&mut self, status: &mut dyn FnMut(String)) -> Option<Attempt> {
        let done = self.reports.len() as u32;
        if self.finished || done >= self.max {
            return None;
        }
        let number = done + 1;
        let resume = if number == 1 {
            self.resume.clone()
        } else {
            None
        };
        if number == 1 {
            status(match &resume {
                Some(conversation) => format!("resuming {}", conversation.describe()),
                None => "no conversation of an earlier review: a fresh review".to_owned(),
            });
        }
        let kind = if resume.is_some() {
            TryKind::Resumed
        } else {
            TryKind::Fresh
        };
        Some(Attempt {
            number,
            kind,
            resume,
        })
    }

    /// Records how `attempt` ended and reports it on `status`. Returns the review when the try
    /// produced one (the sequence is then over).
    pub fn record<T: Reviewed, E: TryFailure>(
        &mut self,
        attempt: &Attempt,
        result: Result<T, E>,
        status: &mut dyn FnMut(String),
    ) -> Option<T> {
        let failure = match result {
            Ok(review) => match (attempt.kind, review.resumed()) {
                (TryKind::Resumed, true) | (TryKind::Fresh, false) => {
                    self.push(attempt, TryOutcome::Reviewed, None);
                    self.finished = true;
                    status(format!(
                        "reviewed (try {}, {})",
                        attempt.number, attempt.kind
                    ));
                    return Some(review);
                }
                (TryKind::Resumed, false) => (
                    "the reviewer did not resume the conversation (a refused resume)".to_owned(),
                    false,
                ),
                (TryKind::Fresh, true) => (
                    "the result says resumed, but there was nothing to resume".to_owned(),
                    false,
                ),
            },
            Err(error) if error.is_cancelled() => {
                self.push(attempt, TryOutcome::Cancelled, Some(error.to_string()));
                self.finished = true;
                status(format!(
                    "cancelled (try {}, {})",
                    attempt.number, attempt.kind
                ));
                return None;
            }
            Err(error) => (error.to_string(), error.ends_tries()),
        };
        let (failure, last) = failure;
        let reason = one_line(&failure);
        let left = !last && (self.reports.len() as u32 + 1) < self.max;
        let then = if left {
            match attempt.kind {
                TryKind::Resumed => "a fresh review",
                TryKind::Fresh => "another fresh review",
            }
        } else if last && (self.reports.len() as u32 + 1) < self.max {
            "no further try"
        } else {
            "no try left"
        };
        status(format!(
            "the {} review ended without a review ({reason}): {then}",
            attempt.kind
        ));
        self.push(attempt, TryOutcome::Failed, Some(reason));
        if !left {
            self.finished = true;
            let n = self.reports.len();
            status(format!(
                "no review after {n} {}",
                if n == 1 { "try" } else { "tries" }
            ));
        }
        None
    }

    /// The tries not run yet, the one [`Self::next_attempt`] gave included until it is
    /// recorded.
    pub fn left(&self) -> u32 {
        self.max.saturating_sub(self.reports.len() as u32)
    }

    /// Every try so far.
    pub fn reports(&self) -> &[TryReport] {
        &self.reports
    }

    /// Ends the sequence: the reports, and whether it ended by cancellation.
    pub fn into_not_reviewed(self) -> NotReviewed {
        let cancelled = self
            .reports
            .last()
            .is_some_and(|r| r.outcome == TryOutcome::Cancelled);
        NotReviewed {
            reports: self.reports,
            cancelled,
        }
    }

    fn push(&mut self, attempt: &Attempt, outcome: TryOutcome, reason: Option<String>) {
        self.reports.push(TryReport {
            number: attempt.number,
            kind: attempt.kind,
            outcome,
            reason: reason.map(|r| one_line(&r)),
            usage: None,
        });
    }

    /// Notes what try `number` spent, once it is recorded.
    pub fn note_usage(&mut self, number: u32, usage: Option<super::usage::Usage>) {
        if let Some(report) = self.reports.iter_mut().find(|r| r.number == number) {
            report.usage = usage;
        }
    }
}

/// Runs the tries, awaiting `run_one` for each, until one produces a review. The future is
/// `Send` when `run_one` and its futures are.
pub async fn run_tries<T, E, F, Fut>(
    tries: u32,
    resume: Option<Conversation>,
    status: &mut (dyn FnMut(String) + Send),
    mut run_one: F,
) -> Result<Tried<T>, NotReviewed>
where
    T: Reviewed,
    E: TryFailure,
    F: FnMut(Attempt) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut sequence = TrySequence::new(tries, resume);
    while let Some(attempt) = sequence.next_attempt(status) {
        let result = run_one(attempt.clone()).await;
        if let Some(review) = sequence.record(&attempt, result, status) {
            return Ok(Tried {
                review,
                resumed: attempt.kind == TryKind::Resumed,
                reports: sequence.reports,
            });
        }
    }
    Err(sequence.into_not_reviewed())
}

/// [`run_tries`] for a reviewer that runs in the calling thread.
pub fn run_tries_blocking<T, E, F>(
    tries: u32,
    resume: Option<Conversation>,
    status: &mut dyn FnMut(String),
    mut run_one: F,
) -> Result<Tried<T>, NotReviewed>
where
    T: Reviewed,
    E: TryFailure,
    F: FnMut(Attempt) -> Result<T, E>,
{
    let mut sequence = TrySequence::new(tries, resume);
    while let Some(attempt) = sequence.next_attempt(status) {
        let result = run_one(attempt.clone());
        if let Some(review) = sequence.record(&attempt, result, status) {
            return Ok(Tried {
                review,
                resumed: attempt.kind == TryKind::Resumed,
                reports: sequence.reports,
            });
        }
    }
    Err(sequence.into_not_reviewed())
}

/// `text` on one line (control characters become spaces), at most [`MAX_REASON_CHARS`] long.
fn one_line(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_REASON_CHARS)
        .collect();
    if text.chars().count() > MAX_REASON_CHARS {
        out.push('…');
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Review(bool);

    impl Reviewed for Review {
        fn resumed(&self) -> bool {
            self.0
        }
    }

    #[derive(Debug)]
    struct Cancel;

    impl fmt::Display for Cancel {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("cancelled")
        }
    }

    impl TryFailure for Cancel {
        fn is_cancelled(&self) -> bool {
            true
        }
    }

    fn conversation() -> Conversation {
        Conversation::new("/c").with_id("abc").with_head("1a2b")
    }

    /// Runs the sequence with scripted results; returns the kinds tried, the lines, the result.
    fn script(
        tries: u32,
        resume: Option<Conversation>,
        results: Vec<Result<Review, String>>,
    ) -> (
        Vec<TryKind>,
        Vec<String>,
        Result<Tried<Review>, NotReviewed>,
    ) {
        let mut results = results.into_iter();
        let mut kinds = Vec::new();
        let mut lines = Vec::new();
        let out = run_tries_blocking(tries, resume, &mut |l| lines.push(l), |attempt| {
            assert_eq!(attempt.resume.is_some(), attempt.kind == TryKind::Resumed);
            kinds.push(attempt.kind);
            results.next().expect("a scripted result")
        });
        (kinds, lines, out)
    }

    #[test]
    fn resumed_review_on_the_first_try() {
        let (kinds, lines, out) = script(2, Some(conversation()), vec![Ok(Review(true))]);
        assert_eq!(kinds, [TryKind::Resumed]);
        assert_eq!(
            lines,
            [
                "resuming the conversation abc of the review of 1a2b",
                "reviewed (try 1, resumed)"
            ]
        );
        let tried = out.unwrap();
        assert!(tried.resumed);
        assert_eq!(tried.reports.len(), 1);
    }

    #[test]
    fn failed_resume_is_followed_by_a_fresh_try() {
        let (kinds, lines, out) = script(
            2,
            Some(conversation()),
            vec![Err("exited with status 1".into()), Ok(Review(false))],
        );
        assert_eq!(kinds, [TryKind::Resumed, TryKind::Fresh]);
        assert_eq!(
            lines[1],
            "the resumed review ended without a review (exited with status 1): a fresh review"
        );
        assert_eq!(lines[2], "reviewed (try 2, fresh)");
        let tried = out.unwrap();
        assert!(!tried.resumed);
        assert_eq!(tried.reports[0].outcome, TryOutcome::Failed);
        assert_eq!(tried.reports[1].outcome, TryOutcome::Reviewed);
    }

    #[test]
    fn refused_resume_counts_as_a_failure() {
        let (kinds, lines, out) = script(
            2,
            Some(conversation()),
            vec![Ok(Review(false)), Ok(Review(false))],
        );
        assert_eq!(kinds, [TryKind::Resumed, TryKind::Fresh]);
        assert!(lines[1].contains("refused resume"), "{lines:?}");
        assert!(!out.unwrap().resumed);
    }

    /// A failure no later try could better (every account at its limit) ends the sequence.
    #[test]
    fn a_failure_that_ends_the_tries_is_not_followed_by_another() {
        #[derive(Debug)]
        struct Limited;
        impl fmt::Display for Limited {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("every account has reached its limit")
            }
        }
        impl TryFailure for Limited {
            fn ends_tries(&self) -> bool {
                true
            }
        }
        let mut lines = Vec::new();
        let mut ran = 0;
        let out = run_tries_blocking(3, None, &mut |l| lines.push(l), |_| {
            ran += 1;
            Err::<Review, _>(Limited)
        });
        assert_eq!(ran, 1);
        assert_eq!(
            lines[1..],
            [
                "the fresh review ended without a review (every account has reached its limit): no further try",
                "no review after 1 try",
            ]
        );
        assert!(!out.unwrap_err().cancelled);
    }

    #[test]
    fn a_fresh_try_claiming_to_resume_fails() {
        let (_, lines, out) = script(1, None, vec![Ok(Review(true))]);
        assert!(lines[1].contains("nothing to resume"), "{lines:?}");
        assert_eq!(lines[2], "no review after 1 try");
        let not = out.unwrap_err();
        assert!(!not.cancelled);
    }

    #[test]
    fn without_a_conversation_both_tries_are_fresh() {
        let (kinds, lines, out) = script(
            2,
            None,
            vec![Err("timed out".into()), Err("timed out".into())],
        );
        assert_eq!(kinds, [TryKind::Fresh, TryKind::Fresh]);
        assert_eq!(
            lines,
            [
                "no conversation of an earlier review: a fresh review",
                "the fresh review ended without a review (timed out): another fresh review",
                "the fresh review ended without a review (timed out): no try left",
                "no review after 2 tries",
            ]
        );
        assert_eq!(out.unwrap_err().reports.len(), 2);
    }

    #[test]
    fn one_try_with_a_conversation_only_resumes() {
        let (kinds, _, out) = script(1, Some(conversation()), vec![Err("no".into())]);
        assert_eq!(kinds, [TryKind::Resumed]);
        assert!(out.is_err());
    }

    #[test]
    fn tries_are_clamped() {
        let (kinds, _, _) = script(0, None, vec![Err("x".into())]);
        assert_eq!(kinds.len(), 1);
        let (kinds, _, _) = script(99, None, (0..10).map(|_| Err("x".into())).collect());
        assert_eq!(kinds.len() as u32, MAX_TRIES);
    }

    #[test]
    fn cancellation_ends_the_sequence() {
        let mut lines = Vec::new();
        let mut runs = 0;
        let out = run_tries_blocking(2, Some(conversation()), &mut |l| lines.push(l), |_| {
            runs += 1;
            Err::<Review, _>(Cancel)
        });
        assert_eq!(runs, 1);
        let not = out.unwrap_err();
        assert!(not.cancelled);
        assert_eq!(not.reports[0].outcome, TryOutcome::Cancelled);
        assert_eq!(lines.last().unwrap(), "cancelled (try 1, resumed)");
    }

    #[test]
    fn reasons_are_one_bounded_line() {
        let long = format!("line one\nline two\x1b[31m{}", "x".repeat(1000));
        let (_, lines, out) = script(1, None, vec![Err(long)]);
        let reason = out.unwrap_err().reports[0].reason.clone().unwrap();
        assert!(!reason.contains('\n') && !reason.contains('\x1b'));
        assert!(reason.chars().count() <= MAX_REASON_CHARS + 1);
        assert!(!lines[1].contains('\n'));
    }

    #[test]
    fn status_names_what_is_known_of_the_conversation() {
        let plain = Conversation::new("/c");
        let (_, lines, _) = script(1, Some(plain), vec![Ok(Review(true))]);
        assert_eq!(lines[0], "resuming the restored conversation");
    }

    #[tokio::test]
    async fn the_async_driver_follows_the_same_policy() {
        let mut lines = Vec::new();
        let mut seen = Vec::new();
        let out = run_tries(2, Some(conversation()), &mut |l| lines.push(l), |attempt| {
            seen.push(attempt.kind);
            async move {
                match attempt.kind {
                    TryKind::Resumed => Err("exited with status 1".to_owned()),
                    TryKind::Fresh => Ok(Review(false)),
                }
            }
        })
        .await
        .unwrap();
        assert_eq!(seen, [TryKind::Resumed, TryKind::Fresh]);
        assert!(!out.resumed);
        assert_eq!(lines.last().unwrap(), "reviewed (try 2, fresh)");
    }
}
