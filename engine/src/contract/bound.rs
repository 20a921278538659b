//! The range of a number the file sets. Every integer and duration a stage, forge or store
//! takes is declared with one, so a setting without a range does not build: a limit that does
//! not limit is none (principle 4), and the values a setting admits are an allow-list
//! (principle 3). The compiler refuses a value outside it (the `limit` check), so `check` and
//! `run` refuse it with the same words.

use schemars::JsonSchema;
use serde::Serialize;

use crate::duration::format_duration_ms;

/// What a bounded number counts: how its bounds are written in a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Unit {
    /// A count, a number of lines or tries.
    Count,
    /// A size in bytes.
    Bytes,
    /// A duration in milliseconds.
    Millis,
}

/// The values a number may take, both ends included, and why the file may not go past them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Bound {
    pub min: u64,
    pub max: u64,
    pub unit: Unit,
    /// What the number costs or promises past `max` (or below `min`): shown with the finding.
    pub why: &'static str,
}

impl Bound {
    /// A count from `min` to `max`.
    pub const fn count(min: u64, max: u64, why: &'static str) -> Self {
        Self {
            min,
            max,
            unit: Unit::Count,
            why,
        }
    }

    /// A size in bytes from `min` to `max`.
    pub const fn bytes(min: u64, max: u64, why: &'static str) -> Self {
        Self {
            min,
            max,
            unit: Unit::Bytes,
            why,
        }
    }

    /// A duration from `min` to `max` milliseconds.
    pub const fn millis(min: u64, max: u64, why: &'static str) -> Self {
        Self {
            min,
            max,
            unit: Unit::Millis,
            why,
        }
    }

    pub fn admits(&self, value: u64) -> bool {
        (self.min..=self.max).contains(&value)
    }

    /// One end, as the file would write it: `10`, `64 MiB (67108864)`, `10m`.
    pub fn show(&self, value: u64) -> String {
        match self.unit {
            Unit::Count => value.to_string(),
            Unit::Bytes => match binary(value) {
                Some(short) => format!("{value} ({short})"),
                None => value.to_string(),
            },
            Unit::Millis => format!("\"{}\"", format_duration_ms(value)),
        }
    }

    /// "from 0 to 10", "from 1 to 67108864 (64 MiB)".
    pub fn range(&self) -> String {
        format!("from {} to {}", self.show(self.min), self.show(self.max))
    }
}

/// `64 MiB` for a whole number of KiB, MiB or GiB.
fn binary(value: u64) -> Option<String> {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    UNITS
        .iter()
        .find(|(size, _)| value >= *size && value.is_multiple_of(*size))
        .map(|(size, name)| format!("{} {name}", value / size))
}

#[cfg(test)]
mod tests {
    use super::Bound;

    #[test]
    fn a_bound_admits_both_ends_and_shows_them_as_the_file_writes_them() {
        let tries = Bound::count(1, 5, "");
        assert!(tries.admits(1) && tries.admits(5));
        assert!(!tries.admits(0) && !tries.admits(6));
        assert_eq!(tries.range(), "from 1 to 5");
        let size = Bound::bytes(1, 64 << 20, "");
        assert_eq!(size.range(), "from 1 to 67108864 (64 MiB)");
        let wait = Bound::millis(1_000, 600_000, "");
        assert_eq!(wait.range(), "from \"1s\" to \"10m\"");
    }
}
