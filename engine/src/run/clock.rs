//! Wall-clock time as RFC 3339 UTC text and run ids (the dates themselves: [`crate::date`]).

use std::time::{SystemTime, UNIX_EPOCH};

use crate::date;

/// `2026-11-03T15:37:02.123Z`.
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    date::rfc3339_millis(unix_seconds(d.as_secs()), d.subsec_millis())
}

pub fn now() -> String {
    rfc3339(SystemTime::now())
}

/// `20261103T153702Z`: the time part of a run id.
pub fn compact(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    date::compact(unix_seconds(secs))
}

/// Seconds since the epoch as the date module counts them (past year 292 billion: clamped).
fn unix_seconds(secs: u64) -> i64 {
    i64::try_from(secs).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn known_dates() {
        let t = UNIX_EPOCH + Duration::from_millis(1_793_720_222_123);
        assert_eq!(rfc3339(t), "2026-11-03T15:37:02.123Z");
        assert_eq!(compact(t), "20261103T153702Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }
}
