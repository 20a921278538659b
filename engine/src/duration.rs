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

#[cfg(test)]
mod tests {
    use super::*;

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
