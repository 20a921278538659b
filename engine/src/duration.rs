//! Durations as written in pipelines: `"45m"`, `"10s"`, `"1h30m"`, `"500ms"`, `"2d"`.

/// Milliseconds, or `None` when `text` is not a duration. At least one unit; units in any order
/// but each once; the total must fit in a u64 of milliseconds.
pub fn parse_duration_ms(text: &str) -> Option<u64> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total: u64 = 0;
    let mut seen = Vec::new();
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let n: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let factor = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return None,
        };
        if seen.contains(&unit) {
            return None;
        }
        seen.push(unit);
        total = total.checked_add(n.checked_mul(factor)?)?;
    }
    Some(total)
}

/// `ms` written as the file would write it, largest units first: `"10m"`, `"1h30m"`, `"500ms"`.
pub fn format_duration_ms(ms: u64) -> String {
    const UNITS: [(u64, &str); 5] = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1_000, "s"),
        (1, "ms"),
    ];
    if ms == 0 {
        return "0ms".into();
    }
    let mut rest = ms;
    let mut out = String::new();
    for (size, unit) in UNITS {
        if rest >= size {
            out.push_str(&format!("{}{unit}", rest / size));
            rest %= size;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_formatted_duration_parses_back() {
        for ms in [
            1, 500, 1_000, 30_000, 600_000, 5_400_000, 21_600_000, 90_061_001,
        ] {
            assert_eq!(parse_duration_ms(&format_duration_ms(ms)), Some(ms), "{ms}");
        }
        assert_eq!(format_duration_ms(600_000), "10m");
        assert_eq!(format_duration_ms(5_400_000), "1h30m");
    }

    #[test]
    fn units() {
        assert_eq!(parse_duration_ms("45m"), Some(2_700_000));
        assert_eq!(parse_duration_ms("1h30m"), Some(5_400_000));
        assert_eq!(parse_duration_ms("500ms"), Some(500));
        assert_eq!(parse_duration_ms("45"), None);
        assert_eq!(parse_duration_ms("m"), None);
        assert_eq!(parse_duration_ms("1m1m"), None);
        assert_eq!(parse_duration_ms("99999999999999999999d"), None);
    }
}
