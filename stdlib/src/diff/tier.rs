//! Size tiers: how reviewable a change is by its size alone.

use serde::{Deserialize, Serialize};

/// From easy to review (green) to too large to review (black).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Green,
    Yellow,
    Orange,
    Red,
    Black,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Green => "green",
            Tier::Yellow => "yellow",
            Tier::Orange => "orange",
            Tier::Red => "red",
            Tier::Black => "black",
        }
    }
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Inclusive upper bounds of green, yellow, orange and red; anything above red is black.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thresholds {
    /// Lines changed (added + deleted).
    pub lines: [u64; 4],
    /// Files changed.
    pub files: [u64; 4],
}

impl Default for Thresholds {
    /// See the table in the [module documentation](super).
    fn default() -> Self {
        Thresholds {
            lines: [200, 400, 800, 1500],
            files: [10, 25, 50, 100],
        }
    }
}

/// The tier of a change: the worse of its tier by lines and its tier by files.
///
/// Each bound is checked in order (green first); a value above all four is black. Bounds that
/// are not ascending are not rejected: the first bound that holds the value decides.
pub fn tier(lines_changed: u64, files_changed: u64, thresholds: &Thresholds) -> Tier {
    by(lines_changed, &thresholds.lines).max(by(files_changed, &thresholds.files))
}

fn by(value: u64, bounds: &[u64; 4]) -> Tier {
    const TIERS: [Tier; 4] = [Tier::Green, Tier::Yellow, Tier::Orange, Tier::Red];
    bounds
        .iter()
        .zip(TIERS)
        .find(|(bound, _)| value <= **bound)
        .map_or(Tier::Black, |(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_tiers() {
        let t = Thresholds::default();
        let cases = [
            (0, 0, Tier::Green),
            (200, 10, Tier::Green),
            (201, 1, Tier::Yellow),
            (10, 11, Tier::Yellow),
            (400, 25, Tier::Yellow),
            (800, 1, Tier::Orange),
            (1, 50, Tier::Orange),
            (1500, 1, Tier::Red),
            (1, 100, Tier::Red),
            (1501, 1, Tier::Black),
            (1, 101, Tier::Black),
            (u64::MAX, u64::MAX, Tier::Black),
        ];
        for (lines, files, want) in cases {
            assert_eq!(tier(lines, files, &t), want, "{lines} lines, {files} files");
        }
    }

    #[test]
    fn worse_of_both() {
        let t = Thresholds::default();
        assert_eq!(tier(1000, 2, &t), Tier::Red);
        assert_eq!(tier(2, 1000, &t), Tier::Black);
    }

    #[test]
    fn serialises_lowercase() {
        assert_eq!(serde_json::to_string(&Tier::Orange).unwrap(), "\"orange\"");
    }
}
