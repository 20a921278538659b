//! When a failed call is tried again, and after how long. Pure functions of the answer, the
//! policy and the clock, so that every rule is unit-tested here.
//!
//! - 5xx, timeouts and broken connections: exponential backoff with jitter (only for idempotent
//!   calls: a `POST` that timed out may have created its comment).
//! - 429, and 403 when it is a rate limit: `Retry-After` seconds if given; else with
//!   `x-ratelimit-remaining: 0`, until `x-ratelimit-reset`; else (a secondary limit without a
//!   header) at least a minute, capped by `max_wait`. GitHub did nothing, so any method retries.
//! - Any other 4xx: never.
//!
//! A wait longer than `max_wait` is not waited: the call fails with "rate limited until …".

use std::time::{Duration, SystemTime};

use http::HeaderMap;

use super::RetryPolicy;
use super::clock;

/// GitHub's advice for a secondary limit that names no time: wait at least a minute.
const SECONDARY_MIN_WAIT: Duration = Duration::from_secs(60);

/// What to do after a failed try.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Retry(Duration),
    /// Retryable, but only after `until`, later than `max_wait` allows.
    TooLong(SystemTime),
    Stop,
}

/// Whether an error answer is GitHub's rate limit, primary or secondary.
pub(crate) fn is_rate_limit(status: u16, headers: &HeaderMap, message: &str) -> bool {
    status == 429
        || (status == 403
            && (header(headers, "x-ratelimit-remaining") == Some("0")
                || headers.contains_key("retry-after")
                || message
                    .to_ascii_lowercase()
                    .contains("secondary rate limit")))
}

/// After an error status. `failures` counts the failed tries so far, this one included.
pub(crate) fn after_status(
    policy: &RetryPolicy,
    failures: u32,
    status: u16,
    headers: &HeaderMap,
    message: &str,
    idempotent: bool,
    now: SystemTime,
) -> Verdict {
    let retry_after = header(headers, "retry-after")
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let wait = if is_rate_limit(status, headers, message) {
        let reset = header(headers, "x-ratelimit-reset").and_then(|v| v.trim().parse::<i64>().ok());
        let exhausted = header(headers, "x-ratelimit-remaining") == Some("0");
        match (retry_after, exhausted, reset) {
            (Some(wait), _, _) => wait,
            (None, true, Some(reset)) => clock::from_unix(reset)
                .duration_since(now)
                .unwrap_or(Duration::ZERO),
            // A secondary limit that names no time: "at least a minute", never past max_wait.
            _ => backoff(policy, failures)
                .max(SECONDARY_MIN_WAIT)
                .min(policy.max_wait),
        }
    } else if status >= 500 && idempotent {
        retry_after.unwrap_or_else(|| backoff(policy, failures))
    } else {
        return Verdict::Stop;
    };
    if wait > policy.max_wait {
        Verdict::TooLong(now + wait)
    } else {
        Verdict::Retry(wait)
    }
}

/// After a try that got no answer (a timeout, a broken connection).
pub(crate) fn after_transport(policy: &RetryPolicy, failures: u32, idempotent: bool) -> Verdict {
    if idempotent {
        Verdict::Retry(backoff(policy, failures))
    } else {
        Verdict::Stop
    }
}

/// `base_delay * 2^(failures-1)`, capped by `max_wait`, then drawn uniformly from its upper
/// half so that clients that failed together do not retry together.
pub(crate) fn backoff(policy: &RetryPolicy, failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(20);
    let full = policy
        .base_delay
        .saturating_mul(1 << doublings)
        .min(policy.max_wait);
    let half = full / 2;
    let span = u64::try_from((full - half).as_nanos()).unwrap_or(u64::MAX);
    // No randomness is no reason to fail a call: fall back to the full delay.
    let jitter = match getrandom::u64() {
        Ok(r) if span > 0 => r % span,
        _ => span,
    };
    half + Duration::from_nanos(jitter)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(100),
            max_wait: Duration::from_secs(60),
        }
    }

    fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, v.parse().unwrap());
        }
        map
    }

    fn now() -> SystemTime {
        clock::from_unix(1_800_000_000)
    }

    #[test]
    fn server_errors_back_off_only_when_idempotent() {
        let h = HeaderMap::new();
        match after_status(&policy(), 1, 502, &h, "", true, now()) {
            Verdict::Retry(d) => {
                assert!(d >= Duration::from_millis(50) && d <= Duration::from_millis(100))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            after_status(&policy(), 1, 502, &h, "", false, now()),
            Verdict::Stop
        );
    }

    #[test]
    fn other_client_errors_never_retry() {
        let h = HeaderMap::new();
        for status in [400, 401, 403, 404, 409, 410, 422] {
            assert_eq!(
                after_status(&policy(), 1, status, &h, "Not Found", true, now()),
                Verdict::Stop
            );
        }
    }

    #[test]
    fn retry_after_is_honoured_on_any_retried_status() {
        let h = headers(&[("retry-after", "7".into())]);
        for status in [429, 403, 503] {
            assert_eq!(
                after_status(&policy(), 1, status, &h, "", true, now()),
                Verdict::Retry(Duration::from_secs(7))
            );
        }
    }

    #[test]
    fn primary_limit_waits_for_the_reset() {
        let h = headers(&[
            ("x-ratelimit-remaining", "0".into()),
            ("x-ratelimit-reset", "1800000005".into()),
        ]);
        assert_eq!(
            after_status(
                &policy(),
                1,
                403,
                &h,
                "API rate limit exceeded",
                false,
                now()
            ),
            Verdict::Retry(Duration::from_secs(5))
        );
        let past = headers(&[
            ("x-ratelimit-remaining", "0".into()),
            ("x-ratelimit-reset", "1799999990".into()),
        ]);
        assert_eq!(
            after_status(&policy(), 1, 403, &past, "", true, now()),
            Verdict::Retry(Duration::ZERO)
        );
        let far = headers(&[
            ("x-ratelimit-remaining", "0".into()),
            ("x-ratelimit-reset", "1800003600".into()),
        ]);
        assert_eq!(
            after_status(&policy(), 1, 403, &far, "", true, now()),
            Verdict::TooLong(clock::from_unix(1_800_003_600))
        );
    }

    #[test]
    fn secondary_limit_without_a_time_waits_a_minute_capped() {
        let h = HeaderMap::new();
        let msg = "You have exceeded a secondary rate limit. Please wait a few minutes.";
        assert_eq!(
            after_status(&policy(), 1, 403, &h, msg, true, now()),
            Verdict::Retry(Duration::from_secs(60))
        );
        let short = RetryPolicy {
            max_wait: Duration::from_secs(2),
            ..policy()
        };
        assert_eq!(
            after_status(&short, 1, 429, &h, "", true, now()),
            Verdict::Retry(Duration::from_secs(2))
        );
        assert!(is_rate_limit(403, &h, msg));
        assert!(!is_rate_limit(
            403,
            &h,
            "Resource not accessible by integration"
        ));
    }

    #[test]
    fn transport_failures_retry_only_idempotent_calls() {
        assert!(matches!(
            after_transport(&policy(), 2, true),
            Verdict::Retry(_)
        ));
        assert_eq!(after_transport(&policy(), 2, false), Verdict::Stop);
    }

    #[test]
    fn backoff_doubles_within_bounds() {
        for failures in 1..=12 {
            let full = Duration::from_millis(100)
                .saturating_mul(1 << (failures - 1))
                .min(Duration::from_secs(60));
            let d = backoff(&policy(), failures);
            assert!(d >= full / 2 && d <= full, "{failures}: {d:?}");
        }
    }
}
