//! GitHub's limit on the results of a run, and which results a log keeps past it: the callers
//! rank their results (lower first), and the earliest of each rank are kept until the limit.

use serde_json::{Map, Value};

use super::log::{Level, LogBuilder};

/// The most results a run holds: GitHub code scanning refuses a run with more.
pub const MAX_RESULTS: usize = 25_000;

/// How many results of each rank a log still has room for.
#[derive(Debug)]
pub struct Quota {
    room: Vec<usize>,
    left_out: usize,
}

impl Quota {
    /// The quota of a log whose results have these ranks (in any order).
    pub fn new(ranks: impl IntoIterator<Item = usize>) -> Self {
        let mut counts: Vec<usize> = Vec::new();
        for rank in ranks {
            if counts.len() <= rank {
                counts.resize(rank + 1, 0);
            }
            counts[rank] += 1;
        }
        let total: usize = counts.iter().sum();
        let mut room = MAX_RESULTS;
        let room = counts
            .into_iter()
            .map(|n| {
                let kept = n.min(room);
                room -= kept;
                kept
            })
            .collect();
        Quota {
            room,
            left_out: total.saturating_sub(MAX_RESULTS),
        }
    }

    /// Whether a result of `rank` is kept (and counted against the room left).
    pub fn take(&mut self, rank: usize) -> bool {
        match self.room.get_mut(rank) {
            Some(left) if *left > 0 => {
                *left -= 1;
                true
            }
            _ => false,
        }
    }

    /// How many results the log leaves out.
    pub fn left_out(&self) -> usize {
        self.left_out
    }

    /// Says in the log how many results it left out, when it left any: `resultsLeftOut` in
    /// `properties` (the run's, which it extends) and a `warning` notification.
    pub fn report(&self, log: &mut LogBuilder, properties: &mut Map<String, Value>, kept: &str) {
        if self.left_out == 0 {
            return;
        }
        properties.insert("resultsLeftOut".into(), self.left_out.into());
        log.notification(
            Level::Warning,
            &format!(
                "{} results left out: code scanning accepts at most {MAX_RESULTS} in a run; {kept}",
                self.left_out
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_ranks_fill_the_room_first() {
        let ranks = std::iter::repeat_n(2, 3)
            .chain(std::iter::repeat_n(0, MAX_RESULTS - 1))
            .chain([1, 1]);
        let mut quota = Quota::new(ranks);
        assert_eq!(quota.left_out(), 4);
        assert!(quota.take(1));
        assert!(!quota.take(1), "one of rank 1 fits");
        assert!(!quota.take(2));
        assert!(!quota.take(7), "a rank nobody counted has no room");
        assert!((0..MAX_RESULTS - 1).all(|_| quota.take(0)));
        assert!(!quota.take(0));
    }

    #[test]
    fn under_the_limit_everything_is_kept() {
        let mut quota = Quota::new([0, 3, 3]);
        assert_eq!(quota.left_out(), 0);
        assert!(quota.take(3) && quota.take(3) && quota.take(0));
        assert!(!quota.take(3));
    }
}
