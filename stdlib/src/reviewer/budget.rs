//! The time of each try. The tries of a review share the stage's timeout: each gets what is left
//! of it divided by the tries left (this one included), less the grace period, since a try that
//! ran out of time may take that long more to end, so that every try ends before the stage's
//! timeout; but at least half of the division, so that a short timeout still leaves each try time
//! to run. So a try that hangs runs out of its own share and says "timed out", and the next try
//! still has its share to run (docs/reviewers.md, "Two tries").

use std::time::{Duration, Instant};

/// What the tries of one review may take.
#[derive(Clone, Copy, Debug)]
pub struct TryBudget {
    /// When the stage's timeout ends; `None`: the stage has none.
    deadline: Option<Instant>,
    /// A limit of each try besides its share; `None`: none.
    cap: Option<Duration>,
    grace: Duration,
}

impl TryBudget {
    pub fn new(deadline: Option<Instant>, cap: Option<Duration>, grace: Duration) -> Self {
        Self {
            deadline,
            cap,
            grace,
        }
    }

    /// The timeout of the try about to start, with `tries_left` tries (it included) still to
    /// run; `None` when neither the stage nor the reviewer sets one.
    pub fn next(&self, tries_left: u32) -> Option<Duration> {
        let share = self.deadline.map(|d| {
            share(
                d.saturating_duration_since(Instant::now()),
                self.grace,
                tries_left,
            )
        });
        match (share, self.cap) {
            (Some(s), Some(c)) => Some(s.min(c)),
            (s, c) => s.or(c),
        }
    }
}

/// `left` divided by `tries_left`, less `grace`, and at least half of the division.
pub fn share(left: Duration, grace: Duration, tries_left: u32) -> Duration {
    let part = left / tries_left.max(1);
    part.saturating_sub(grace).max(part / 2)
}

/// A try's time as a reason says it: `90s`, `4.5s`, `700ms`.
pub fn say(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else if ms >= 1000 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn each_try_gets_what_is_left_less_the_grace_divided_by_the_tries_left() {
        assert_eq!(share(S(10), S(1), 2), S(4));
        assert_eq!(share(S(10), S(1), 1), S(9));
        assert_eq!(share(S(600), S(10), 2), S(290));
        // Little room for the grace: half of the division.
        assert_eq!(share(S(30), S(10), 2), Duration::from_millis(7500));
        assert_eq!(share(S(1), S(10), 2), Duration::from_millis(250));
        assert_eq!(share(S(6), S(0), 0), S(6));
    }

    #[test]
    fn a_cap_limits_the_share_and_stands_alone_without_a_stage_timeout() {
        let far = Instant::now() + S(3600);
        assert_eq!(
            TryBudget::new(Some(far), Some(S(5)), S(1)).next(2),
            Some(S(5))
        );
        assert_eq!(TryBudget::new(None, Some(S(5)), S(1)).next(2), Some(S(5)));
        assert_eq!(TryBudget::new(None, None, S(1)).next(2), None);
        let share = TryBudget::new(Some(far), None, S(0)).next(2).unwrap();
        assert!(share <= S(1800) && share > S(1790), "{share:?}");
    }

    #[test]
    fn says_a_time_briefly() {
        assert_eq!(say(S(90)), "90s");
        assert_eq!(say(Duration::from_millis(4499)), "4.5s");
        assert_eq!(say(Duration::from_millis(700)), "700ms");
    }
}
