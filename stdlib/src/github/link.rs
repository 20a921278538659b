//! The `Link` header's `rel="next"` URL, and the origin (scheme, host, port) a URL points at:
//! a next page is followed only on the API's own origin, so the token never leaves it.
//!
//! GitHub's shape: `<https://api.github.com/repositories/1/…?page=2>; rel="next",
//! <https://api.github.com/repositories/1/…?page=5>; rel="last"`.

use http::{HeaderMap, Uri};

/// Scheme, host and port of an absolute URL; the unit a token is confined to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    /// `None` for a relative URL or a scheme other than http(s).
    pub(crate) fn of(uri: &Uri) -> Option<Self> {
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "https" => 443,
            "http" => 80,
            _ => return None,
        };
        let host = uri.host()?.to_ascii_lowercase();
        if host.is_empty() {
            return None;
        }
        Some(Self {
            port: uri.port_u16().unwrap_or(default_port),
            scheme,
            host,
        })
    }

    pub(crate) fn is_https(&self) -> bool {
        self.scheme == "https"
    }

    /// `host` or `host:port`, for messages (never a path or a query).
    pub(crate) fn display_host(&self) -> String {
        let default = if self.is_https() { 443 } else { 80 };
        if self.port == default {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// The `rel="next"` target of every `Link` header, if any; `Err` when a header is not text.
pub(crate) fn next_link(headers: &HeaderMap) -> Result<Option<String>, String> {
    for value in headers.get_all(http::header::LINK) {
        let text = value
            .to_str()
            .map_err(|_| "a Link header that is not text".to_owned())?;
        if let Some(url) = find_rel(text, "next") {
            return Ok(Some(url));
        }
    }
    Ok(None)
}

/// The target of the first link-value whose `rel` holds `rel` (RFC 8288: `rel` may list
/// several space-separated relations, quoted or not).
fn find_rel(text: &str, rel: &str) -> Option<String> {
    let mut rest = text;
    loop {
        let start = rest.find('<')?;
        let after = &rest[start + 1..];
        let end = after.find('>')?;
        let target = &after[..end];
        let params_and_more = &after[end + 1..];
        // Parameters run to the next link-value, which starts with `<` after a comma.
        let params_end = params_and_more
            .match_indices(',')
            .map(|(i, _)| i)
            .find(|&i| params_and_more[i + 1..].trim_start().starts_with('<'))
            .unwrap_or(params_and_more.len());
        let params = &params_and_more[..params_end];
        let matches = params.split(';').any(|param| {
            let Some((key, value)) = param.split_once('=') else {
                return false;
            };
            key.trim().eq_ignore_ascii_case("rel")
                && value
                    .trim()
                    .trim_matches('"')
                    .split_ascii_whitespace()
                    .any(|r| r.eq_ignore_ascii_case(rel))
        });
        if matches {
            return Some(target.trim().to_owned());
        }
        rest = &params_and_more[params_end..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_link(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(http::header::LINK, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn finds_githubs_next() {
        let h = with_link(&[
            "<https://api.github.com/repositories/123/actions/artifacts?name=a&per_page=100&page=2>; rel=\"next\", <https://api.github.com/repositories/123/actions/artifacts?name=a&per_page=100&page=5>; rel=\"last\"",
        ]);
        assert_eq!(
            next_link(&h).unwrap().as_deref(),
            Some(
                "https://api.github.com/repositories/123/actions/artifacts?name=a&per_page=100&page=2"
            )
        );
    }

    #[test]
    fn next_may_come_last_unquoted_or_among_several() {
        let h = with_link(&["<https://x/1?page=1>; rel=\"prev\", <https://x/1?page=3>; rel=next"]);
        assert_eq!(
            next_link(&h).unwrap().as_deref(),
            Some("https://x/1?page=3")
        );
        let h = with_link(&["<https://x/?a=1,2>; rel=\"last next\""]);
        assert_eq!(next_link(&h).unwrap().as_deref(), Some("https://x/?a=1,2"));
        let h = with_link(&[
            "<https://x/1?page=1>; rel=\"prev\"",
            "<https://x/2>; rel=\"next\"",
        ]);
        assert_eq!(next_link(&h).unwrap().as_deref(), Some("https://x/2"));
    }

    #[test]
    fn no_next_on_the_last_page() {
        let h =
            with_link(&["<https://x/1?page=1>; rel=\"first\", <https://x/1?page=4>; rel=\"prev\""]);
        assert_eq!(next_link(&h).unwrap(), None);
        assert_eq!(next_link(&HeaderMap::new()).unwrap(), None);
        assert_eq!(next_link(&with_link(&["garbage"])).unwrap(), None);
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        let o = |s: &str| Origin::of(&s.parse::<Uri>().unwrap());
        assert_eq!(
            o("https://API.github.com/x"),
            o("https://api.github.com:443/y?z")
        );
        assert_ne!(o("https://api.github.com/"), o("http://api.github.com/"));
        assert_ne!(o("http://127.0.0.1:8080/"), o("http://127.0.0.1:8081/"));
        assert_eq!(o("/relative"), None);
        assert_eq!(o("ftp://host/x"), None);
        assert_eq!(
            o("http://127.0.0.1:8080/").unwrap().display_host(),
            "127.0.0.1:8080"
        );
    }
}
