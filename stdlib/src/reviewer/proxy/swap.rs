//! The one place the key is written: the authentication header of a request on its way out.
//!
//! The reviewer holds a [`StandIn`] in place of its key. A request passes only when every
//! authentication header it carries (`x-api-key: <stand-in>`, `Authorization: Bearer
//! <stand-in>`, the form an OAuth token takes too) is exactly a stand-in, and then that header,
//! and nothing else, gets the key: not the body, not the URL, not another header, so a prompt
//! that quotes the stand-in goes out quoting the stand-in.

use std::fmt;
use std::sync::Arc;

use super::accounts::AccountPool;
use crate::reviewer::prompt::{RandomError, random_hex};
use http::HeaderMap;
use http::header::{AUTHORIZATION, CONNECTION, HeaderName, HeaderValue};

/// The header Anthropic's API reads its key from.
const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");
/// The scheme of `Authorization` that carries a key or an OAuth token.
const BEARER: &[u8] = b"Bearer ";

/// What a reviewer holds instead of its key: `reviewflow-` and 128 random bits, new for each
/// try, worth nothing once the try's proxy is gone. `Debug` hides it: while the try runs it
/// opens the proxy.
#[derive(Clone, PartialEq, Eq)]
pub struct StandIn(String);

impl StandIn {
    /// A fresh stand-in from the operating system's random number generator.
    pub fn generate() -> Result<Self, RandomError> {
        Ok(Self(format!("reviewflow-{}", random_hex()?)))
    }

    /// The text the reviewer gets.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for StandIn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StandIn([hidden])")
    }
}

/// The accounts of one variable and the stand-in that unlocks them: the key written is the
/// pool's current account's.
pub(super) struct Credential {
    pub stand_in: StandIn,
    pub accounts: Arc<AccountPool>,
}

/// An account a request was sent with: its pool and its index there.
#[derive(Clone)]
pub(super) struct Used {
    pub pool: Arc<AccountPool>,
    pub index: usize,
}

/// Why a request's authentication was refused. Carries no header value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AuthRefusal {
    /// No `x-api-key` and no `Authorization` header.
    Missing,
    /// A header that is not exactly a stand-in.
    NotTheStandIn,
    /// The key cannot be written in a header (a line break in it).
    UnusableKey,
    /// Every account of the stand-in was refused for its limit earlier in the run.
    Limited,
}

impl AuthRefusal {
    pub(super) fn reason(self) -> &'static str {
        match self {
            Self::Missing => "it carried no credential",
            Self::NotTheStandIn => "its credential was not the try's stand-in",
            Self::UnusableKey => "the key cannot be written in a header",
            Self::Limited => "every account of its credential has reached its limit",
        }
    }
}

/// Swaps each stand-in in the authentication headers for the key of its pool's current
/// account, or refuses the request. Returns the accounts used.
pub(super) fn swap_credentials(
    headers: &mut HeaderMap,
    credentials: &[Credential],
) -> Result<Vec<Used>, AuthRefusal> {
    let mut found = false;
    let mut used: Vec<Used> = Vec::new();
    for name in [X_API_KEY, AUTHORIZATION] {
        let bearer = name == AUTHORIZATION;
        let values: Vec<HeaderValue> = headers.get_all(&name).iter().cloned().collect();
        if values.is_empty() {
            continue;
        }
        found = true;
        headers.remove(&name);
        for value in values {
            let given = if bearer {
                strip_bearer(value.as_bytes()).ok_or(AuthRefusal::NotTheStandIn)?
            } else {
                value.as_bytes()
            };
            let credential = credentials
                .iter()
                .find(|c| same(given, c.stand_in.as_str().as_bytes()))
                .ok_or(AuthRefusal::NotTheStandIn)?;
            let (index, account) = credential.accounts.current().ok_or(AuthRefusal::Limited)?;
            let mut out = Vec::with_capacity(BEARER.len() + account.key.len());
            if bearer {
                out.extend_from_slice(BEARER);
            }
            out.extend_from_slice(account.key.expose_secret());
            let mut swapped =
                HeaderValue::from_bytes(&out).map_err(|_| AuthRefusal::UnusableKey)?;
            zeroize::Zeroize::zeroize(&mut out);
            // Kept out of HPACK tables and of any debug print of the request.
            swapped.set_sensitive(true);
            headers.append(&name, swapped);
            if !used
                .iter()
                .any(|u| Arc::ptr_eq(&u.pool, &credential.accounts))
            {
                used.push(Used {
                    pool: Arc::clone(&credential.accounts),
                    index,
                });
            }
        }
    }
    if found {
        Ok(used)
    } else {
        Err(AuthRefusal::Missing)
    }
}

/// The token of `Bearer <token>` (the scheme in any letter case, one space).
fn strip_bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, token) = value.split_at_checked(BEARER.len())?;
    scheme.eq_ignore_ascii_case(BEARER).then_some(token)
}

/// Equal bytes, compared in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Headers about one connection (RFC 9110 §7.6.1), and those `Connection` names: they describe
/// the hop from the reviewer, or from the API, and are not forwarded.
pub(super) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    ] {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reviewer::proxy::Account;
    use reviewflow_engine::exec::secret::SecretValue;

    fn credential() -> (Credential, String) {
        let stand_in = StandIn::generate().unwrap();
        let text = stand_in.as_str().to_owned();
        let accounts = AccountPool::new(vec![Account::new(
            "anthropic-key",
            SecretValue::from("sk-real-key"),
        )]);
        (
            Credential {
                stand_in,
                accounts: Arc::new(accounts),
            },
            text,
        )
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(
                HeaderName::from_bytes(n.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn the_stand_in_becomes_the_key_in_the_authentication_header_only() {
        let (c, s) = credential();
        let mut h = headers(&[
            ("x-api-key", &s),
            ("x-note", &s),
            ("anthropic-version", "2023-06-01"),
        ]);
        swap_credentials(&mut h, &[c]).unwrap();
        assert_eq!(h["x-api-key"], "sk-real-key");
        assert!(h["x-api-key"].is_sensitive());
        assert_eq!(h["x-note"], s.as_str(), "another header keeps the stand-in");

        let (c, s) = credential();
        let mut h = headers(&[("authorization", &format!("bearer {s}"))]);
        swap_credentials(&mut h, &[c]).unwrap();
        assert_eq!(h["authorization"], "Bearer sk-real-key");
    }

    #[test]
    fn the_key_is_the_current_accounts_and_none_once_all_are_limited() {
        let stand_in = StandIn::generate().unwrap();
        let s = stand_in.as_str().to_owned();
        let pool = Arc::new(AccountPool::new(vec![
            Account::new("first", SecretValue::from("sk-first")),
            Account::new("second", SecretValue::from("sk-second")),
        ]));
        let cs = [Credential {
            stand_in,
            accounts: Arc::clone(&pool),
        }];
        let mut h = headers(&[("x-api-key", &s)]);
        let used = swap_credentials(&mut h, &cs).unwrap();
        assert_eq!(h["x-api-key"], "sk-first");
        assert_eq!(used.iter().map(|u| u.index).collect::<Vec<_>>(), [0]);
        pool.skip(0);
        let mut h = headers(&[("x-api-key", &s)]);
        let used = swap_credentials(&mut h, &cs).unwrap();
        assert_eq!(h["x-api-key"], "sk-second");
        assert_eq!(used.iter().map(|u| u.index).collect::<Vec<_>>(), [1]);
        pool.skip(1);
        let mut h = headers(&[("x-api-key", &s)]);
        assert_eq!(
            swap_credentials(&mut h, &cs).err(),
            Some(AuthRefusal::Limited)
        );
    }

    #[test]
    fn anything_but_the_stand_in_is_refused() {
        let (c, s) = credential();
        let cs = [c];
        let refused = |pairs: &[(&str, &str)]| swap_credentials(&mut headers(pairs), &cs).err();
        assert_eq!(refused(&[]), Some(AuthRefusal::Missing));
        assert_eq!(
            refused(&[("x-api-key", "sk-other")]),
            Some(AuthRefusal::NotTheStandIn)
        );
        assert_eq!(
            refused(&[("x-api-key", &format!("{s} "))]),
            Some(AuthRefusal::NotTheStandIn)
        );
        assert_eq!(
            refused(&[("authorization", &format!("Basic {s}"))]),
            Some(AuthRefusal::NotTheStandIn)
        );
        // One good header does not carry a second, foreign one.
        assert_eq!(
            refused(&[("x-api-key", &s), ("authorization", "Bearer sk-other")]),
            Some(AuthRefusal::NotTheStandIn)
        );
        assert_eq!(
            refused(&[("x-api-key", &s), ("x-api-key", "sk-other")]),
            Some(AuthRefusal::NotTheStandIn)
        );
    }

    #[test]
    fn hop_by_hop_headers_stop_here() {
        let mut h = headers(&[
            ("connection", "keep-alive, x-secret-hop"),
            ("x-secret-hop", "1"),
            ("upgrade", "websocket"),
            ("proxy-authorization", "Basic x"),
            ("content-type", "application/json"),
        ]);
        strip_hop_by_hop(&mut h);
        let names: Vec<&str> = h.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["content-type"]);
    }
}
