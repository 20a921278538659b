//! What makes two lenses' findings one: the same path, the same line and end line (or both about
//! the whole file), and the same normalised rule — the rule without its lens prefix, in lower
//! case; for a finding with no rule, its message in lower case with whitespace collapsed.

/// The identity of a finding within one aggregation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    path: String,
    line: Option<u32>,
    end_line: Option<u32>,
    what: String,
}

impl Key {
    /// The key of a finding of lens `lens` (whose rule is `lens/rule`, or `lens` alone).
    pub fn new(
        lens: &str,
        path: &str,
        line: Option<u32>,
        end_line: Option<u32>,
        rule: Option<&str>,
        message: &str,
    ) -> Self {
        let rule = rule
            .map(|r| {
                if r == lens {
                    ""
                } else {
                    r.strip_prefix(lens)
                        .and_then(|r| r.strip_prefix('/'))
                        .unwrap_or(r)
                }
            })
            .unwrap_or_default();
        let what = if rule.is_empty() {
            let mut m = String::from("message:");
            for word in message.split_whitespace() {
                if m.len() > "message:".len() {
                    m.push(' ');
                }
                m.push_str(&word.to_lowercase());
            }
            m
        } else {
            format!("rule:{}", rule.to_ascii_lowercase())
        };
        Self {
            path: path.to_owned(),
            line,
            end_line,
            what,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lens_prefixes_and_case_do_not_count() {
        let a = Key::new("adv", "a.rs", Some(3), None, Some("adv/Injection"), "x");
        let b = Key::new("eng", "a.rs", Some(3), None, Some("eng/injection"), "y");
        assert_eq!(a, b);
        let c = Key::new("adv", "a.rs", Some(4), None, Some("adv/injection"), "x");
        assert_ne!(a, c);
        let m1 = Key::new("adv", "a.rs", None, None, Some("adv"), "Unsafe   call");
        let m2 = Key::new("eng", "a.rs", None, None, None, "unsafe call");
        assert_eq!(m1, m2);
    }
}
