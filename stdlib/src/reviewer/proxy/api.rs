//! The vendors' model APIs: where each lives, and the variable its clients read to be pointed
//! elsewhere. The vendors and their credentials are the contract's (`REVIEWER_KINDS`); this is
//! what the proxy adds to them.

use reviewflow_engine::contract::ReviewerKind;

use super::{Upstream, UpstreamError};
use crate::reviewer::SecretEnv;

/// One vendor's API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelApi {
    /// The vendor, as the contract names it.
    pub vendor: &'static str,
    /// The variable its CLIs and SDKs read for the API's base URL. Declared on a stage, it
    /// names the upstream; the reviewer never gets it (it gets the proxy's).
    pub base_url_var: &'static str,
    /// The vendor's own API.
    pub url: &'static str,
}

/// Every API the proxy knows.
pub const MODEL_APIS: &[ModelApi] = &[
    ModelApi {
        vendor: "anthropic",
        base_url_var: "ANTHROPIC_BASE_URL",
        url: "https://api.anthropic.com",
    },
    ModelApi {
        vendor: "openai",
        base_url_var: "OPENAI_BASE_URL",
        url: "https://api.openai.com/v1",
    },
];

impl ModelApi {
    /// The API of `vendor`.
    pub fn of_vendor(vendor: &str) -> Option<&'static ModelApi> {
        MODEL_APIS.iter().find(|a| a.vendor == vendor)
    }

    /// The API whose key a variable of that name holds, by the contract's table of reviewers
    /// (`ANTHROPIC_API_KEY` → anthropic's).
    pub fn of_credential(kinds: &[ReviewerKind], var: &str) -> Option<&'static ModelApi> {
        kinds
            .iter()
            .filter(|k| k.credentials.contains(&var))
            .find_map(|k| Self::of_vendor(k.vendor?))
    }

    /// Where the proxy forwards for a stage that declares `env`: the base URL it declares
    /// under [`ModelApi::base_url_var`], else the vendor's.
    pub fn upstream(&self, env: &[(String, String)]) -> Result<Upstream, UpstreamError> {
        let declared = env
            .iter()
            .rev()
            .find(|(n, _)| n == self.base_url_var)
            .map(|(_, v)| v.as_str());
        Upstream::parse(declared.unwrap_or(self.url))
    }
}

/// The lines among `secret_env` whose keys a model API's proxy holds instead of the program:
/// each given under a variable the contract names as a model's credential, grouped by API, in
/// the order given.
pub fn model_keys(secret_env: &[SecretEnv]) -> Vec<(&'static ModelApi, Vec<&SecretEnv>)> {
    let kinds = crate::reviewer::kinds::REVIEWER_KINDS;
    let mut out: Vec<(&'static ModelApi, Vec<&SecretEnv>)> = Vec::new();
    for line in secret_env {
        let Some(api) = ModelApi::of_credential(kinds, &line.var) else {
            continue;
        };
        match out.iter_mut().find(|(a, _)| *a == api) {
            Some((_, keys)) => keys.push(line),
            None => out.push((api, vec![line])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_vendor_of_a_model_reviewer_has_its_api() {
        for kind in crate::reviewer::kinds::REVIEWER_KINDS {
            if let Some(vendor) = kind.vendor {
                let api = ModelApi::of_vendor(vendor).expect(vendor);
                assert!(api.upstream(&[]).is_ok(), "{vendor}");
                for var in kind.credentials {
                    assert_eq!(
                        ModelApi::of_credential(crate::reviewer::kinds::REVIEWER_KINDS, var),
                        Some(api)
                    );
                }
            }
        }
    }

    #[test]
    fn model_keys_are_found_by_their_variables_and_grouped_by_api() {
        let s = |v: &str| {
            SecretEnv::one(
                v,
                "k",
                reviewflow_engine::exec::secret::SecretValue::from("k"),
            )
        };
        let lines = [
            s("JIRA_TOKEN"),
            s("OPENAI_API_KEY"),
            s("ANTHROPIC_API_KEY"),
            s("CODEX_API_KEY"),
        ];
        let keys = model_keys(&lines);
        let found: Vec<(&str, Vec<&str>)> = keys
            .iter()
            .map(|(a, k)| (a.vendor, k.iter().map(|l| l.var.as_str()).collect()))
            .collect();
        assert_eq!(
            found,
            [
                ("openai", vec!["OPENAI_API_KEY", "CODEX_API_KEY"]),
                ("anthropic", vec!["ANTHROPIC_API_KEY"]),
            ]
        );
    }

    #[test]
    fn a_declared_base_url_is_the_upstream() {
        let api = ModelApi::of_vendor("anthropic").unwrap();
        let env = [("ANTHROPIC_BASE_URL".into(), "http://127.0.0.1:9/".into())];
        assert_eq!(
            api.upstream(&env).unwrap().to_string(),
            "http://127.0.0.1:9"
        );
        assert_eq!(
            api.upstream(&[]).unwrap().to_string(),
            "https://api.anthropic.com"
        );
        let plain = [("ANTHROPIC_BASE_URL".into(), "http://proxy.corp:8080".into())];
        assert!(api.upstream(&plain).is_err());
    }
}
