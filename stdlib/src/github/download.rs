//! Downloading an artifact's zip. GitHub answers `GET …/actions/artifacts/{id}/zip` with a
//! redirect to a short-lived, signed URL on another host (its blob storage). We read that
//! `Location` ourselves and fetch it with the client that holds no token, following at most
//! [`MAX_REDIRECTS`] redirects in all, never from https down to http, and reading the body with
//! a cap (a zip may lie about its size). Messages name the storage host only: the URL's query
//! is a signature.

use http::{Method, Uri};

use super::GithubError;
use super::client::{ACCEPT_JSON, Call, Client, Expect, Reply, Via, route_uri};
use super::error::quote;
use super::link::Origin;

/// The most redirects followed for one download, GitHub's own included.
pub const MAX_REDIRECTS: usize = 3;

impl Client {
    /// The artifact's zip, at most `max_bytes`.
    pub async fn download_artifact(
        &self,
        artifact_id: u64,
        max_bytes: u64,
    ) -> Result<Vec<u8>, GithubError> {
        let route = format!("{}/actions/artifacts/{artifact_id}/zip", self.repo_route());
        let what = format!("artifact {artifact_id}");
        let mut reply = self
            .call(&Call {
                method: Method::GET,
                uri: route_uri(&route)?,
                label: &route,
                accept: ACCEPT_JSON,
                body: None,
                cap: max_bytes,
                expect: Expect::SuccessOrRedirect,
                via: Via::Api,
                what: &what,
            })
            .await?;
        // A relative Location resolves against the API's own URL.
        let mut current: Uri = self.absolute(&route)?;
        let mut current_https = self.api_origin().is_https();
        for _ in 0..MAX_REDIRECTS {
            if !is_redirect(&reply) {
                return Ok(reply.body);
            }
            let next = location(&reply, &current, &what)?;
            let origin = Origin::of(&next).ok_or_else(|| {
                GithubError::Redirect(format!(
                    "the download of {what} redirects to a URL that is not http(s)"
                ))
            })?;
            if current_https && !origin.is_https() {
                return Err(GithubError::Redirect(format!(
                    "the download of {what} redirects from https to http on {}: not followed",
                    quote(&origin.display_host())
                )));
            }
            let label = format!("{} (artifact storage)", quote(&origin.display_host()));
            reply = self
                .call(&Call {
                    method: Method::GET,
                    uri: next.clone(),
                    label: &label,
                    accept: "application/zip",
                    body: None,
                    cap: max_bytes,
                    expect: Expect::SuccessOrRedirect,
                    via: Via::Storage,
                    what: &what,
                })
                .await?;
            current = next;
            current_https = origin.is_https();
        }
        if is_redirect(&reply) {
            return Err(GithubError::Redirect(format!(
                "the download of {what} redirects more than {MAX_REDIRECTS} times: a loop?"
            )));
        }
        Ok(reply.body)
    }
}

fn is_redirect(reply: &Reply) -> bool {
    (300..400).contains(&reply.status)
}

/// The redirect's target, absolute, or resolved against `current` when it is an absolute
/// path (`/x`); anything else is refused.
fn location(reply: &Reply, current: &Uri, what: &str) -> Result<Uri, GithubError> {
    let missing = || {
        GithubError::Redirect(format!(
            "the download of {what} answered {} without a Location",
            reply.status
        ))
    };
    let text = reply
        .headers
        .get(http::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(missing)?;
    let invalid = || {
        GithubError::Redirect(format!(
            "the download of {what} redirects to something that is not a URL"
        ))
    };
    let uri: Uri = text.parse().map_err(|_| invalid())?;
    if uri.scheme().is_some() {
        return Ok(uri);
    }
    if text.starts_with('/') && !text.starts_with("//") {
        let mut parts = current.clone().into_parts();
        parts.path_and_query = uri.path_and_query().cloned();
        return Uri::from_parts(parts).map_err(|_| invalid());
    }
    Err(invalid())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderMap;

    fn reply(location: Option<&str>) -> Reply {
        let mut headers = HeaderMap::new();
        if let Some(l) = location {
            headers.insert(http::header::LOCATION, l.parse().unwrap());
        }
        Reply {
            status: 302,
            headers,
            body: Vec::new(),
        }
    }

    #[test]
    fn resolves_absolute_urls_and_paths() {
        let current: Uri = "https://api.github.com/repos/o/r/actions/artifacts/1/zip"
            .parse()
            .unwrap();
        let abs = location(
            &reply(Some("https://blob.example/c/x.zip?sig=s")),
            &current,
            "a",
        )
        .unwrap();
        assert_eq!(abs.to_string(), "https://blob.example/c/x.zip?sig=s");
        let rel = location(&reply(Some("/other?x=1")), &current, "a").unwrap();
        assert_eq!(rel.to_string(), "https://api.github.com/other?x=1");
        for bad in [None, Some(""), Some("relative/path"), Some("//host/x")] {
            assert!(
                matches!(
                    location(&reply(bad), &current, "a"),
                    Err(GithubError::Redirect(_))
                ),
                "{bad:?}"
            );
        }
    }
}
