//! The detectors, one line each. Adding one: a file, a [`DetectorId`] variant, a line here.

use super::{Detector, DetectorId};

pub static DETECTORS: &[&dyn Detector] = &[
    &super::jwt::Jwt,
    &super::github::Github,
    &super::anthropic::Anthropic,
    &super::openai::Openai,
    &super::aws::Aws,
    &super::private_key::PrivateKey,
    &super::secret_value::SecretValue,
];

/// The detector with this id.
pub fn get(id: DetectorId) -> Option<&'static dyn Detector> {
    DETECTORS.iter().copied().find(|d| d.id() == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_holds_every_id_once_in_order() {
        let ids: Vec<_> = DETECTORS.iter().map(|d| d.id()).collect();
        assert_eq!(ids, DetectorId::ALL.to_vec());
    }

    #[test]
    fn ids_round_trip() {
        for id in DetectorId::ALL {
            assert_eq!(id.as_str().parse::<DetectorId>(), Ok(id));
            let json = serde_json::to_string(&id).unwrap();
            assert_eq!(json, format!("\"{}\"", id.as_str()));
        }
        assert!("nope".parse::<DetectorId>().is_err());
    }
}
