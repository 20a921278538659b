//! The rules, one line each. Adding one: a file, a [`RuleId`] variant, a line here.

use super::{Rule, RuleId};

pub static RULES: &[&dyn Rule] = &[
    &super::conflict_marker::ConflictMarker,
    &super::credential::Credential,
    &super::debug_leftover::DebugLeftover,
    &super::todo_added::TodoAdded,
    &super::binary_file::BinaryFile,
    &super::oversized_file::OversizedFile,
    &super::trailing_whitespace::TrailingWhitespace,
];

/// The rule with this id.
pub fn get(id: RuleId) -> Option<&'static dyn Rule> {
    RULES.iter().copied().find(|r| r.id() == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_holds_every_id_once_in_order() {
        let ids: Vec<_> = RULES.iter().map(|r| r.id()).collect();
        assert_eq!(ids, RuleId::ALL.to_vec());
    }

    #[test]
    fn ids_round_trip() {
        for id in RuleId::ALL {
            assert_eq!(id.as_str().parse::<RuleId>(), Ok(id));
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(json, format!("\"{}\"", id.as_str()));
        }
        assert!("nope".parse::<RuleId>().is_err());
    }
}
