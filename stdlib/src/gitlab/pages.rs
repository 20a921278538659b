//! Paginated listings. GitLab says where the next page is two ways, and both are read: the
//! `Link` header's absolute `rel="next"` URL (followed only on the API's own origin, so the
//! token stays there), else `X-Next-Page`'s number (the same URL with `page=` set; GitLab leaves
//! it empty on the last page, and out on a listing too large to count). A page is never read
//! twice, and at most `max_pages` are read.

use std::collections::HashSet;

use http::{Method, Uri};
use serde::de::DeserializeOwned;

use super::GitlabError;
use super::client::{Client, MAX_JSON_BYTES};
use crate::github::error::quote;
use crate::github::link::{Origin, next_link};

/// The most pages any listing may ask for.
pub const MAX_PAGES: usize = 1000;

/// How a listing ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Paging {
    /// Pages read.
    pub pages: usize,
    /// Whether the last page was reached (not the cap, not an early stop).
    pub complete: bool,
}

impl Client {
    /// The items of a listing whose pages are JSON arrays, up to `max_pages` pages and
    /// `max_bytes` bytes of pages in all (each page is also under the client's own cap). After
    /// each page `enough` is asked, with every item so far, whether to stop reading.
    pub async fn get_pages<T: DeserializeOwned>(
        &self,
        route: &str,
        max_pages: usize,
        max_bytes: u64,
        mut enough: impl FnMut(&[T]) -> bool,
    ) -> Result<(Vec<T>, Paging), GitlabError> {
        if max_pages == 0 || max_pages > MAX_PAGES {
            return Err(GitlabError::Pagination(format!(
                "{max_pages} pages asked for: between 1 and {MAX_PAGES}"
            )));
        }
        let mut items: Vec<T> = Vec::new();
        let mut uri = self.absolute(route)?;
        let mut label = route.to_owned();
        let mut seen = HashSet::new();
        seen.insert(uri.to_string());
        let mut left = max_bytes;
        for read in 1..=max_pages {
            let reply = self
                .call(Method::GET, &uri, &label, None, MAX_JSON_BYTES.min(left))
                .await
                .map_err(|e| match e {
                    GitlabError::TooLarge { .. } => GitlabError::TooLarge {
                        what: format!("the pages of GET {route}"),
                        limit: max_bytes,
                    },
                    e => e,
                })?;
            left = left.saturating_sub(reply.body.len() as u64);
            let page: Vec<T> = serde_json::from_slice(&reply.body)
                .map_err(|e| GitlabError::decode(format!("the page GET {label}"), e))?;
            items.extend(page);
            let next = match next_link(&reply.headers).map_err(GitlabError::Pagination)? {
                Some(link) => Some(self.checked_next(route, &link)?),
                None => match next_page_number(&reply.headers, route)? {
                    Some(n) => Some(with_page(&uri, n)?),
                    None => None,
                },
            };
            let Some(next) = next else {
                return Ok((
                    items,
                    Paging {
                        pages: read,
                        complete: true,
                    },
                ));
            };
            if enough(&items) {
                return Ok((
                    items,
                    Paging {
                        pages: read,
                        complete: false,
                    },
                ));
            }
            if !seen.insert(next.to_string()) {
                return Err(GitlabError::Pagination(format!(
                    "the pages of GET {route} link back to a page already read"
                )));
            }
            // GitLab's text from here on: quoted like any server text.
            label = quote(next.path_and_query().map_or("", |p| p.as_str()));
            uri = next;
        }
        Ok((
            items,
            Paging {
                pages: max_pages,
                complete: false,
            },
        ))
    }

    /// The next page's URL if it is on the API's own origin.
    fn checked_next(&self, route: &str, next: &str) -> Result<Uri, GitlabError> {
        let uri: Uri = next.parse().map_err(|_| {
            GitlabError::Pagination(format!(
                "the next page of GET {route} is not a URL: {:?}",
                quote(next)
            ))
        })?;
        match Origin::of(&uri) {
            Some(origin) if origin == *self.api_origin() => Ok(uri),
            Some(origin) => Err(GitlabError::Pagination(format!(
                "the next page of GET {route} is on {}, not on the API's {}: not followed",
                quote(&origin.display_host()),
                self.api_origin().display_host()
            ))),
            None => Err(GitlabError::Pagination(format!(
                "the next page of GET {route} is not an absolute http(s) URL"
            ))),
        }
    }
}

/// `X-Next-Page`: a page number, or empty on the last page.
fn next_page_number(headers: &http::HeaderMap, route: &str) -> Result<Option<u32>, GitlabError> {
    let Some(value) = headers.get("x-next-page") else {
        return Ok(None);
    };
    let text = value.to_str().unwrap_or_default().trim();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<u32>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(GitlabError::Pagination(format!(
            "the X-Next-Page of GET {route} is not a page number: {:?}",
            quote(text)
        ))),
    }
}

/// `uri` with its `page` query parameter set to `page` (others kept, in order).
fn with_page(uri: &Uri, page: u32) -> Result<Uri, GitlabError> {
    let mut query: Vec<&str> = uri
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("page="))
        .collect();
    let page = format!("page={page}");
    query.push(&page);
    let path_and_query = format!("{}?{}", uri.path(), query.join("&"));
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(path_and_query.parse().map_err(|_| {
        GitlabError::Pagination(format!(
            "cannot write the next page's URL {:?}",
            quote(&path_and_query)
        ))
    })?);
    Uri::from_parts(parts).map_err(|_| {
        GitlabError::Pagination(format!(
            "cannot write the next page's URL {:?}",
            quote(&path_and_query)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_number_replaces_the_page_parameter() {
        let uri: Uri = "https://gitlab.example.com/api/v4/projects/42/merge_requests/7/notes?sort=asc&per_page=100&page=1"
            .parse()
            .unwrap();
        assert_eq!(
            with_page(&uri, 2).unwrap().to_string(),
            "https://gitlab.example.com/api/v4/projects/42/merge_requests/7/notes?sort=asc&per_page=100&page=2"
        );
        let bare: Uri = "http://127.0.0.1:9/api/v4/x".parse().unwrap();
        assert_eq!(
            with_page(&bare, 3).unwrap().to_string(),
            "http://127.0.0.1:9/api/v4/x?page=3"
        );
    }

    #[test]
    fn x_next_page_is_a_number_or_empty() {
        let mut h = http::HeaderMap::new();
        assert_eq!(next_page_number(&h, "/x").unwrap(), None);
        h.insert("x-next-page", "".parse().unwrap());
        assert_eq!(next_page_number(&h, "/x").unwrap(), None);
        h.insert("x-next-page", "4".parse().unwrap());
        assert_eq!(next_page_number(&h, "/x").unwrap(), Some(4));
        for bad in ["0", "-1", "two", "https://elsewhere/"] {
            h.insert("x-next-page", bad.parse().unwrap());
            assert!(next_page_number(&h, "/x").is_err(), "{bad}");
        }
    }
}
