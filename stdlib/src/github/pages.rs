//! Paginated listings: the first page by route, each next one by the `Link` header's absolute
//! `rel="next"` URL, followed only on the API's own origin (so the token stays there), never
//! twice, and at most `max_pages` pages.

use std::collections::HashSet;

use http::{Method, Uri};
use serde::de::DeserializeOwned;

use super::GithubError;
use super::client::{ACCEPT_JSON, Call, Client, Expect, MAX_JSON_BYTES, Via, route_uri};
use super::error::quote;
use super::link::{Origin, next_link};

/// The most pages any listing may ask for.
pub const MAX_PAGES: usize = 1000;

impl Client {
    /// Every item of a paginated listing, up to `max_pages` pages. `items_field` names the
    /// array in an object page (`"artifacts"` for `{total_count, artifacts: [...]}`); `None`
    /// reads pages that are bare arrays. Reaching `max_pages` stops quietly with what was read.
    pub async fn get_pages<T: DeserializeOwned>(
        &self,
        route: &str,
        items_field: Option<&str>,
        max_pages: usize,
    ) -> Result<Vec<T>, GithubError> {
        if max_pages > MAX_PAGES {
            return Err(GithubError::Pagination(format!(
                "{max_pages} pages asked for, over the cap of {MAX_PAGES}"
            )));
        }
        let mut items = Vec::new();
        let mut uri = route_uri(route)?;
        let mut label = route.to_owned();
        let mut seen = HashSet::new();
        for _ in 0..max_pages {
            let reply = self
                .call(&Call {
                    method: Method::GET,
                    uri: uri.clone(),
                    label: &label,
                    accept: ACCEPT_JSON,
                    body: None,
                    cap: MAX_JSON_BYTES,
                    expect: Expect::Success,
                    via: Via::Api,
                    what: "the page",
                })
                .await?;
            items.extend(page_items::<T>(&reply.body, items_field, &label)?);
            let Some(next) = next_link(&reply.headers).map_err(GithubError::Pagination)? else {
                break;
            };
            let next_uri = self.checked_next(route, &next)?;
            if !seen.insert(next.clone()) {
                return Err(GithubError::Pagination(format!(
                    "the pages of GET {route} link back to a page already read"
                )));
            }
            // GitHub's text from here on: quoted like any server text.
            label = quote(next_uri.path_and_query().map_or("", |p| p.as_str()));
            uri = next_uri;
        }
        Ok(items)
    }

    /// The next page's URL if it is on the API's own origin.
    fn checked_next(&self, route: &str, next: &str) -> Result<Uri, GithubError> {
        let uri: Uri = next.parse().map_err(|_| {
            GithubError::Pagination(format!(
                "the next page of GET {route} is not a URL: {:?}",
                quote(next)
            ))
        })?;
        match Origin::of(&uri) {
            Some(origin) if origin == *self.api_origin() => Ok(uri),
            Some(origin) => Err(GithubError::Pagination(format!(
                "the next page of GET {route} is on {}, not on the API's {}: not followed",
                quote(&origin.display_host()),
                self.api_origin().display_host()
            ))),
            None => Err(GithubError::Pagination(format!(
                "the next page of GET {route} is not an absolute http(s) URL"
            ))),
        }
    }
}

/// The items of one page.
fn page_items<T: DeserializeOwned>(
    body: &[u8],
    items_field: Option<&str>,
    label: &str,
) -> Result<Vec<T>, GithubError> {
    let what = || format!("the page GET {label}");
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| GithubError::decode(what(), e))?;
    let array = match (items_field, value) {
        (None, array @ serde_json::Value::Array(_)) => array,
        (Some(field), serde_json::Value::Object(mut map)) => match map.remove(field) {
            Some(array @ serde_json::Value::Array(_)) => array,
            _ => {
                return Err(GithubError::decode(
                    what(),
                    format!("no `{field}` array in the page"),
                ));
            }
        },
        (None, _) => return Err(GithubError::decode(what(), "the page is not an array")),
        (Some(_), _) => return Err(GithubError::decode(what(), "the page is not an object")),
    };
    serde_json::from_value(array).map_err(|e| GithubError::decode(what(), e))
}

#[cfg(test)]
mod tests {
    use super::page_items;

    #[test]
    fn reads_object_and_array_pages() {
        let v: Vec<u32> = page_items(
            br#"{"total_count":2,"artifacts":[1,2]}"#,
            Some("artifacts"),
            "/x",
        )
        .unwrap();
        assert_eq!(v, [1, 2]);
        let v: Vec<u32> = page_items(b"[3]", None, "/x").unwrap();
        assert_eq!(v, [3]);
        assert!(page_items::<u32>(b"{}", Some("artifacts"), "/x").is_err());
        assert!(page_items::<u32>(b"{\"a\":1}", None, "/x").is_err());
        assert!(page_items::<u32>(b"[\"x\"]", None, "/x").is_err());
        assert!(page_items::<u32>(b"<html>", None, "/x").is_err());
    }
}
