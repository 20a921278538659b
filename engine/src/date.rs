//! Proleptic Gregorian dates in UTC without a date library: days since 1970-01-01 to and from
//! a civil date (Howard Hinnant's public-domain algorithms), and the RFC 3339 text the run
//! records, the forges and their API clients write and read.

/// Days since 1970-01-01 (negative before it) → (year, month 1..=12, day 1..=31).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    // Both fit: the day is 1..=31 and the month 1..=12 by construction.
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// (year, month 1..=12, day) → days since 1970-01-01. A day past the month's end counts on
/// into the next month (`02-31` is `03-02` or `03-03`).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let (m, d) = (i64::from(month), i64::from(day));
    let y = if m <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A whole second in UTC, split into its civil parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

impl Utc {
    /// The second `secs` after 1970-01-01T00:00:00Z (before it when negative).
    pub fn from_unix(secs: i64) -> Utc {
        let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
        // 0..86_400, so it fits.
        let rem = secs.rem_euclid(86_400) as u32;
        Utc {
            year,
            month,
            day,
            hour: rem / 3600,
            minute: rem % 3600 / 60,
            second: rem % 60,
        }
    }

    /// `YYYY-MM-DD`.
    pub fn date(&self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }

    /// `hh:mm:ss`.
    pub fn time(&self) -> String {
        format!("{:02}:{:02}:{:02}", self.hour, self.minute, self.second)
    }
}

/// `YYYY-MM-DDThh:mm:ssZ` for Unix seconds.
pub fn rfc3339(secs: i64) -> String {
    let t = Utc::from_unix(secs);
    format!("{}T{}Z", t.date(), t.time())
}

/// `YYYY-MM-DDThh:mm:ss.mmmZ` for Unix seconds and the milliseconds past them (0..1000).
pub fn rfc3339_millis(secs: i64, millis: u32) -> String {
    let t = Utc::from_unix(secs);
    format!("{}T{}.{millis:03}Z", t.date(), t.time())
}

/// `YYYYMMDDThhmmssZ` (RFC 3339's basic form, no separators) for Unix seconds.
pub fn compact(secs: i64) -> String {
    let t = Utc::from_unix(secs);
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

/// Unix seconds of an RFC 3339 timestamp: `Z` or a `±HH:MM` offset, optional fractional
/// seconds (ignored), `T`, `t` or a space between date and time. `None` for anything else.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = text.get(range)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    // A leap second (:60) is accepted as the next second.
    if second > 60 {
        return None;
    }
    let mut rest = text.get(19..)?;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let ob = rest.as_bytes();
            if ob.len() != 6 || !matches!(ob[0], b'+' | b'-') || ob[3] != b':' {
                return None;
            }
            let hours: i64 = rest.get(1..3)?.parse().ok()?;
            let minutes: i64 = rest.get(4..6)?.parse().ok()?;
            let sign = if ob[0] == b'-' { -1 } else { 1 };
            sign * (hours * 3600 + minutes * 60)
        }
    };
    let days = days_from_civil(i64::from(year), month, day);
    let clock = i64::from(hour * 3600 + minute * 60 + second);
    Some(days * 86_400 + clock - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_millis(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(compact(0), "19700101T000000Z");
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
    }

    #[test]
    fn leap_days() {
        // 2000 is a leap year (divisible by 400), 2100 is not (by 100), 2024 is (by 4).
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(days_from_civil(2000, 2, 29), 11_016);
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        assert_eq!(days_from_civil(2100, 3, 1), 47_541);
        assert_eq!(civil_from_days(47_540), (2100, 2, 28));
        assert_eq!(civil_from_days(47_541), (2100, 3, 1));
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(951_868_799), "2000-02-29T23:59:59Z");
    }

    #[test]
    fn before_the_epoch() {
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(civil_from_days(-719_468), (0, 3, 1));
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
        assert_eq!(Utc::from_unix(-86_401).date(), "1969-12-30");
    }

    #[test]
    fn every_day_round_trips() {
        // From 1000-ish to 3000-ish: each day follows the one before it.
        let mut previous = civil_from_days(-354_000);
        for days in -353_999..=400_000 {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
            let next_day = (y, m, d) == (previous.0, previous.1, previous.2 + 1);
            let next_month = d == 1 && (y, m) == (previous.0, previous.1 + 1);
            let next_year = (m, d) == (1, 1) && y == previous.0 + 1;
            assert!(
                next_day || next_month || next_year,
                "{previous:?} then {y}-{m}-{d}"
            );
            previous = (y, m, d);
        }
    }

    #[test]
    fn formats() {
        let secs = 1_793_720_222;
        assert_eq!(rfc3339(secs), "2026-11-03T15:37:02Z");
        assert_eq!(rfc3339_millis(secs, 123), "2026-11-03T15:37:02.123Z");
        assert_eq!(compact(secs), "20261103T153702Z");
        assert_eq!(rfc3339(1_767_225_599), "2025-12-31T23:59:59Z");
    }

    #[test]
    fn parses_what_it_formats() {
        for secs in [0, 951_868_799, 1_578_668_362, 1_793_007_210, 4_102_444_800] {
            assert_eq!(parse_rfc3339(&rfc3339(secs)), Some(secs));
            assert_eq!(parse_rfc3339(&rfc3339_millis(secs, 999)), Some(secs));
        }
        assert_eq!(
            parse_rfc3339("2020-01-10T16:59:22+02:00"),
            Some(1_578_668_362)
        );
        assert_eq!(parse_rfc3339("2020-01-10 14:59:22.5z"), Some(1_578_668_362));
        assert_eq!(parse_rfc3339("2016-12-31T23:59:60Z"), Some(1_483_228_800));
        for bad in [
            "",
            "2020-01-10",
            "2020-13-10T00:00:00Z",
            "2020-01-00T00:00:00Z",
            "2020-01-10T24:00:00Z",
            "2020-01-10T14:59:61Z",
            "2020-01-10T14:59:22",
            "2020-01-10T14:59:22.Z",
            "2020-01-10T14:59:22+0200",
            "+020-01-10T14:59:22Z",
            "2020-01-10T14:59:22Zé",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
