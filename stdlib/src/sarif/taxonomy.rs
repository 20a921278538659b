//! What code scanning reads of a rule besides its text, in one place (`docs/sarif.md`, "How code
//! scanning files alerts"): `properties.tags`, `properties.security-severity` and
//! `properties.precision`.
//!
//! A check's rule ([`check_rule`]):
//!
//! - **tags**: `security` for a check whose principle is about trust, authority, coverage,
//!   labels or suppressions (principles 1 to 6 of `docs/checks.md`), `correctness` for one about
//!   what the file means (principle 7); then the principle's name as a tag;
//! - **security-severity** (a security rule only: code scanning shows a result as a security
//!   alert when its rule has both): from the check's severity, `error` 8.0 (high), `warning`
//!   5.0 (medium), `info` 2.0 (low);
//! - **precision**: from the confidence the rule's findings in the log declare, the lowest of
//!   them (`high`, `medium`, `low`); none when a finding declares none or the rule has none in
//!   the log, because a precision nobody declared is not claimed.
//!
//! A review's rule ([`review_rule`]) declares no principle: `tags` is `security` and it has a
//! `security-severity` when the rule says its findings are security findings (the `rules`
//! reviewer's `credential`), and it has no properties otherwise.

use serde_json::{Map, Value};

use super::log::Level;
use reviewflow_engine::check::Principle;
use reviewflow_engine::finding::{Confidence, Severity};

/// The tag of a rule code scanning files as a security alert.
pub const SECURITY: &str = "security";

/// The properties of a check's rule: its principle, its severity, and the confidence of its
/// findings in the log (`None` when any declares none or there are none).
pub fn check_rule(
    principle: Principle,
    severity: Severity,
    confidence: Option<Confidence>,
) -> Map<String, Value> {
    let mut properties = Map::new();
    let security = principle != Principle::OneSourceOfTruth;
    let kind = if security { SECURITY } else { "correctness" };
    properties.insert(
        "tags".into(),
        Value::from(vec![kind.to_owned(), tag(principle.name())]),
    );
    if security {
        properties.insert(
            "security-severity".into(),
            security_severity(Level::from(severity)).into(),
        );
    }
    if let Some(c) = confidence {
        properties.insert("precision".into(), precision(c).into());
    }
    properties
}

/// A name as a tag: lowercase words joined by `-` (`allow-lists, not deny-lists` →
/// `allow-lists-not-deny-lists`).
fn tag(name: &str) -> String {
    name.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join("-")
}

/// The properties of a review's rule at `level`: a security rule's, or none.
pub fn review_rule(security: bool, level: Level) -> Map<String, Value> {
    let mut properties = Map::new();
    if security {
        properties.insert("tags".into(), Value::from(vec![SECURITY]));
        properties.insert("security-severity".into(), security_severity(level).into());
    }
    properties
}

/// GitHub's bands: 9.0 and over critical, 7.0 high, 4.0 medium, below that low.
fn security_severity(level: Level) -> &'static str {
    match level {
        Level::Error => "8.0",
        Level::Warning => "5.0",
        Level::Note => "2.0",
    }
}

fn precision(confidence: Confidence) -> &'static str {
    match confidence {
        Confidence::High => "high",
        Confidence::Medium => "medium",
        Confidence::Low => "low",
    }
}

/// The lower of two confidences.
pub fn lower(a: Confidence, b: Confidence) -> Confidence {
    match (a, b) {
        (Confidence::Low, _) | (_, Confidence::Low) => Confidence::Low,
        (Confidence::Medium, _) | (_, Confidence::Medium) => Confidence::Medium,
        _ => Confidence::High,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_principle_has_a_tag_and_a_kind() {
        for p in Principle::ALL {
            let props = check_rule(p, Severity::Warning, None);
            let tags = props["tags"].as_array().expect("tags");
            assert_eq!(tags.len(), 2);
            assert!(!tags[1].as_str().unwrap_or_default().is_empty());
            assert_eq!(
                props.contains_key("security-severity"),
                tags[0] == SECURITY,
                "{p}"
            );
            assert!(!props.contains_key("precision"));
        }
        assert_eq!(
            tag("check and run have one source of truth"),
            "check-and-run-have-one-source-of-truth"
        );
    }

    #[test]
    fn the_lowest_confidence_wins() {
        assert_eq!(
            lower(Confidence::High, Confidence::Medium),
            Confidence::Medium
        );
        assert_eq!(lower(Confidence::Low, Confidence::High), Confidence::Low);
        assert_eq!(lower(Confidence::High, Confidence::High), Confidence::High);
    }
}
