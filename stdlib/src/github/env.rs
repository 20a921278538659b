//! What GitHub Actions tells a step about its run, from the environment and the event payload
//! file (`GITHUB_EVENT_PATH`). Read through a lookup function so that tests need no process
//! environment.

use reviewflow_engine::run::nofollow;

use super::{DEFAULT_API_URL, Repository};

/// The largest event payload read.
pub const MAX_EVENT_BYTES: u64 = 25 << 20;
/// github.com, the default of `GITHUB_SERVER_URL`.
pub const DEFAULT_SERVER_URL: &str = "https://github.com";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionsEnv {
    /// `GITHUB_API_URL`, default `https://api.github.com`.
    pub api_url: String,
    /// `GITHUB_SERVER_URL`, default `https://github.com`.
    pub server_url: String,
    /// `GITHUB_REPOSITORY` (required).
    pub repository: Repository,
    pub event_name: Option<String>,
    pub run_id: Option<u64>,
    pub run_attempt: Option<u32>,
    pub sha: Option<String>,
    /// `GITHUB_WORKFLOW_REF`, e.g. `o/r/.github/workflows/build.yaml@refs/heads/main`.
    pub workflow_ref: Option<String>,
    /// The pull request the event is about, from the payload.
    pub pull_request: Option<u64>,
}

impl ActionsEnv {
    /// Reads the variables through `get` (an empty value counts as unset) and the event
    /// payload, if `GITHUB_EVENT_PATH` names one.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<ActionsEnv, String> {
        let var = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let repository = var("GITHUB_REPOSITORY")
            .ok_or("GITHUB_REPOSITORY is not set")?
            .trim()
            .parse::<Repository>()
            .map_err(|e| format!("GITHUB_REPOSITORY: {e}"))?;
        let number = |name: &str| -> Result<Option<u64>, String> {
            var(name)
                .map(|v| {
                    v.trim()
                        .parse::<u64>()
                        .map_err(|_| format!("{name} is not a number: {:?}", short(&v)))
                })
                .transpose()
        };
        let run_attempt = number("GITHUB_RUN_ATTEMPT")?
            .map(|n| u32::try_from(n).map_err(|_| "GITHUB_RUN_ATTEMPT is too large".to_owned()))
            .transpose()?;
        let pull_request = match var("GITHUB_EVENT_PATH") {
            Some(path) => pull_request_of(&read_event(&path)?),
            None => None,
        };
        Ok(ActionsEnv {
            api_url: var("GITHUB_API_URL").unwrap_or_else(|| DEFAULT_API_URL.to_owned()),
            server_url: var("GITHUB_SERVER_URL").unwrap_or_else(|| DEFAULT_SERVER_URL.to_owned()),
            repository,
            event_name: var("GITHUB_EVENT_NAME"),
            run_id: number("GITHUB_RUN_ID")?,
            run_attempt,
            sha: var("GITHUB_SHA"),
            workflow_ref: var("GITHUB_WORKFLOW_REF"),
            pull_request,
        })
    }
}

/// The payload as JSON, at most [`MAX_EVENT_BYTES`], by the reader: a regular file only (a FIFO
/// is never waited on), not a link.
fn read_event(path: &str) -> Result<serde_json::Value, String> {
    let unreadable = |e: std::io::Error| format!("cannot read the event payload {path}: {e}");
    let file = nofollow::open_regular(std::path::Path::new(path)).map_err(unreadable)?;
    let bytes = reviewflow_engine::bounded::read_bounded(file, MAX_EVENT_BYTES).map_err(|e| {
        if e.kind() == std::io::ErrorKind::FileTooLarge {
            format!("the event payload {path} is over {MAX_EVENT_BYTES} bytes")
        } else {
            unreadable(e)
        }
    })?;
    serde_json::from_slice(&bytes).map_err(|e| format!("the event payload {path} is not JSON: {e}"))
}

/// `pull_request.number`, else a top-level `number` (pull_request events), else `issue.number`
/// when the issue is a pull request (`issue_comment` on a pull request), else the input
/// `pull-request` of a `workflow_dispatch` (the workflow `export github` writes asks for it; the
/// payload holds a dispatch's inputs as strings).
fn pull_request_of(event: &serde_json::Value) -> Option<u64> {
    let positive =
        |v: Option<&serde_json::Value>| v.and_then(serde_json::Value::as_u64).filter(|n| *n > 0);
    let dispatched = || {
        event
            .pointer("/inputs/pull-request")
            .and_then(serde_json::Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.parse::<u64>().ok())
            .filter(|n| *n > 0)
            .or_else(|| positive(event.pointer("/inputs/pull-request")))
    };
    positive(event.pointer("/pull_request/number"))
        .or_else(|| positive(event.get("number")))
        .or_else(|| {
            event
                .pointer("/issue/pull_request")
                .filter(|pr| !pr.is_null())
                .and_then(|_| positive(event.pointer("/issue/number")))
        })
        .or_else(dispatched)
}

fn short(text: &str) -> String {
    text.chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::pull_request_of;
    use serde_json::json;

    #[test]
    fn finds_the_pull_request_of_each_event_shape() {
        assert_eq!(
            pull_request_of(&json!({"number": 5, "pull_request": {"number": 5}})),
            Some(5)
        );
        assert_eq!(
            pull_request_of(&json!({"pull_request": {"number": 9}})),
            Some(9)
        );
        assert_eq!(pull_request_of(&json!({"number": 3})), Some(3));
        assert_eq!(
            pull_request_of(&json!({"issue": {"number": 4, "pull_request": {"url": "u"}}})),
            Some(4)
        );
        assert_eq!(pull_request_of(&json!({"issue": {"number": 4}})), None);
        assert_eq!(
            pull_request_of(&json!({"issue": {"number": 4, "pull_request": null}})),
            None
        );
        assert_eq!(pull_request_of(&json!({"ref": "refs/heads/main"})), None);
        assert_eq!(pull_request_of(&json!({"number": "7"})), None);
        assert_eq!(
            pull_request_of(&json!({"inputs": {"pull-request": "12"}, "ref": "refs/heads/main"})),
            Some(12)
        );
        assert_eq!(
            pull_request_of(&json!({"inputs": {"pull-request": 13}})),
            Some(13)
        );
        assert_eq!(
            pull_request_of(&json!({"inputs": {"pull-request": " 14 "}})),
            Some(14)
        );
        for bad in ["0", "-1", "1e3", "", "+4", "99999999999999999999999"] {
            let parsed = pull_request_of(&json!({"inputs": {"pull-request": bad}}));
            assert_eq!(parsed, None, "{bad}");
        }
    }
}
