//! Unique fingerprints: code scanning merges results that share a fingerprint, so two findings
//! that hash alike (three identical conflict markers in one file) must still differ.

use std::collections::{HashMap, HashSet};

/// How repeats of one fingerprint are told apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Numbering {
    /// Every value gets `:<n>`, its occurrence among equal values from 1 (`…:1`, `…:2`): for
    /// recipes that hash what a finding is and can repeat by design.
    Always,
    /// The value as it is, and `:<n>` from the second occurrence on: for identities that are
    /// already unique by construction, where a repeat would be a bug upstream.
    Repeats,
}

/// The fingerprints written so far, per `partialFingerprints` key.
#[derive(Debug, Default)]
pub struct Occurrences {
    /// Occurrences of each (key, value) as computed.
    counts: HashMap<(&'static str, String), usize>,
    /// Each (key, value) as written, to never write one twice.
    written: HashSet<(&'static str, String)>,
}

impl Occurrences {
    /// The value to write for `value` under `key`: never one already written under that key.
    pub fn tag(&mut self, key: &'static str, value: &str, numbering: Numbering) -> String {
        let count = self.counts.entry((key, value.to_owned())).or_insert(0);
        *count += 1;
        let mut n = *count;
        loop {
            let tagged = match numbering {
                Numbering::Repeats if n == 1 => value.to_owned(),
                _ => format!("{value}:{n}"),
            };
            if self.written.insert((key, tagged.clone())) {
                return tagged;
            }
            // Only a value that already looks numbered (`abc:2` next to a repeated `abc`) gets
            // here: take the next number.
            n += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_numbers_from_one() {
        let mut o = Occurrences::default();
        assert_eq!(o.tag("k", "a", Numbering::Always), "a:1");
        assert_eq!(o.tag("k", "a", Numbering::Always), "a:2");
        assert_eq!(o.tag("k", "b", Numbering::Always), "b:1");
        assert_eq!(o.tag("other", "a", Numbering::Always), "a:1");
    }

    #[test]
    fn repeats_numbers_from_the_second() {
        let mut o = Occurrences::default();
        assert_eq!(o.tag("k", "a", Numbering::Repeats), "a");
        assert_eq!(o.tag("k", "a", Numbering::Repeats), "a:2");
        assert_eq!(o.tag("k", "a:2", Numbering::Repeats), "a:2:2");
    }
}
