//! GitHub's timestamps (`2026-10-26T09:33:30Z`) to and from Unix seconds, without a date crate:
//! errors name the time a rate limit ends, and artifacts are ordered by `created_at`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reviewflow_engine::date;

/// `YYYY-MM-DDTHH:MM:SSZ` for a point in time (UTC, whole seconds).
pub fn format_utc(time: SystemTime) -> String {
    let secs = match time.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    };
    date::rfc3339(secs)
}

/// Unix seconds of an RFC 3339 timestamp as GitHub writes them: `Z` or a `±HH:MM` offset,
/// optional fractional seconds (ignored). `None` for anything else.
pub use date::parse_rfc3339;

/// A point in time from Unix seconds (negative ones clamp to the epoch).
pub fn from_unix(secs: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for (text, secs) in [
            ("1970-01-01T00:00:00Z", 0),
            ("2020-01-10T14:59:22Z", 1_578_668_362),
            ("2026-10-26T09:33:30Z", 1_793_007_210),
            ("2000-02-29T23:59:59Z", 951_868_799),
        ] {
            assert_eq!(parse_rfc3339(text), Some(secs), "{text}");
            assert_eq!(format_utc(from_unix(secs)), text);
        }
    }

    #[test]
    fn offsets_and_fractions() {
        assert_eq!(
            parse_rfc3339("2020-01-10T16:59:22+02:00"),
            Some(1_578_668_362)
        );
        assert_eq!(
            parse_rfc3339("2020-01-10T14:59:22.123Z"),
            Some(1_578_668_362)
        );
        for bad in [
            "",
            "2020-01-10",
            "2020-13-10T00:00:00Z",
            "2020-01-10T14:59:22",
            "x".repeat(25).as_str(),
            "2020-01-10T14:59:22.Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
