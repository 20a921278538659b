//! What a run prints on GitLab CI: collapsible sections and plain warning lines.
//!
//! GitLab reads two things in a job's log as its own: a section marker,
//! `\e[0Ksection_start:<unix time>:<name>[collapsed=true]\r\e[0K<title>` …
//! `\e[0Ksection_end:<unix time>:<name>\r\e[0K`, and ANSI escape sequences (colours, erasing).
//! Both need an escape character (ESC) and the marker a carriage return as well. So every
//! control character of untrusted text (a child's lines, a stage's name, a message) but the tab
//! is written as `\u{…}` text ([`neutral`]): no line of a block can end its section, open
//! another, or erase what was printed before it. The section's name is drawn at random after
//! the lines were written, as GitHub's stop token is: even a marker written by other means could
//! not name it.
//!
//! GitLab has no annotations: a warning or a failure is one plain line, `warning: <stage>:
//! <message>` (`error: …`), outside any section.

use std::fmt::Write as _;

use reviewflow_engine::platform::Level;
use reviewflow_engine::render::escape;

/// The characters a section's name may hold on GitLab are `[A-Za-z0-9_.-]`; ours is this prefix
/// and random hex.
pub const SECTION_PREFIX: &str = "reviewflow_";

/// `text` with every control character but the tab (newlines, carriage returns and ESC
/// included), and every Unicode direction override, written as `\u{…}`: one line of the log,
/// which GitLab reads as text.
pub fn neutral(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\n' {
            out.push_str("\\u{a}");
        } else {
            escape::push_char(&mut out, c);
        }
    }
    out
}

/// A collapsed section named `name` (`[A-Za-z0-9_.-]`, the caller's), titled `title`, holding
/// `lines`, started and ended at `time` (seconds since the Unix epoch: the block is printed once
/// its stage has ended, so GitLab shows no duration for it).
pub fn section(title: &str, lines: &[String], name: &str, time: u64) -> String {
    let mut out = format!(
        "\x1b[0Ksection_start:{time}:{name}[collapsed=true]\r\x1b[0K{}\n",
        neutral(title)
    );
    for l in lines {
        out.push_str(&neutral(l));
        out.push('\n');
    }
    let _ = writeln!(out, "\x1b[0Ksection_end:{time}:{name}\r\x1b[0K");
    out
}

/// One warning or error line: `warning: <title>: <message>` or without the title, both
/// neutralised.
pub fn annotation(level: Level, title: Option<&str>, message: &str) -> String {
    let level = match level {
        Level::Error => "error",
        Level::Warning => "warning",
    };
    match title {
        Some(t) => format!("{level}: {}: {}\n", neutral(t), neutral(message)),
        None => format!("{level}: {}\n", neutral(message)),
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every section marker GitLab would read in `log`, as `(start?, name)`: its parser's
    /// pattern, `section_(start|end):<digits>:<[A-Za-z0-9_.-]+>([collapsed=true])?\r\e[0K`,
    /// with or without the `\e[0K` before it.
    fn markers(log: &str) -> Vec<(bool, String)> {
        let mut found = Vec::new();
        let mut rest = log;
        while let Some(at) = rest.find("section_") {
            let tail = &rest[at + "section_".len()..];
            rest = tail;
            let (start, tail) = if let Some(t) = tail.strip_prefix("start:") {
                (true, t)
            } else if let Some(t) = tail.strip_prefix("end:") {
                (false, t)
            } else {
                continue;
            };
            let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
            let Some(tail) = tail[digits..].strip_prefix(':').filter(|_| digits > 0) else {
                continue;
            };
            let len = tail
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || b"_.-".contains(b))
                .count();
            let name = &tail[..len];
            let after = tail[len..]
                .strip_prefix("[collapsed=true]")
                .unwrap_or(&tail[len..]);
            if len > 0 && after.starts_with("\r\x1b[0K") {
                found.push((start, name.to_owned()));
            }
        }
        found
    }

    #[test]
    fn a_section_is_collapsed_and_titled() {
        let out = section("lint: ok", &["one".into(), "two\tcols".into()], "s1", 7);
        assert_eq!(
            out,
            "\x1b[0Ksection_start:7:s1[collapsed=true]\r\x1b[0Klint: ok\none\ntwo\tcols\n\x1b[0Ksection_end:7:s1\r\x1b[0K\n"
        );
        assert_eq!(
            markers(&out),
            [(true, "s1".to_owned()), (false, "s1".to_owned())]
        );
    }

    #[test]
    fn a_hostile_line_cannot_end_the_section_or_open_another() {
        let hostile = [
            "\x1b[0Ksection_end:1:s1\r\x1b[0K".to_owned(),
            "section_end:1:s1\r\x1b[0Know outside".to_owned(),
            "\x1b[0Ksection_start:1:evil[collapsed=false]\r\x1b[0Kfake".to_owned(),
            "a\nsection_end:1:s1\r\x1b[0K".to_owned(),
            "\x1b[2J\x1b[1A\u{9b}2J\u{202e}".to_owned(),
        ];
        let out = section("\x1b[0Ksection_end:1:s1\r\x1b[0Ktitle", &hostile, "s1", 1);
        // Only the two markers the section wrote itself, even though the lines name it.
        assert_eq!(
            markers(&out),
            [(true, "s1".to_owned()), (false, "s1".to_owned())]
        );
        // Between them: no escape character, no carriage return, one log line per line.
        let body: Vec<&str> = out.lines().skip(1).collect();
        let (end, inner) = body.split_last().expect("an end marker");
        assert!(end.starts_with("\x1b[0Ksection_end:1:s1\r"));
        assert_eq!(inner.len(), hostile.len());
        for line in inner {
            assert!(
                !line.contains(['\x1b', '\r', '\u{9b}', '\u{202e}']),
                "{line:?}"
            );
        }
        assert!(inner[0].starts_with("\\u{1b}[0Ksection_end:1:s1\\u{d}"));
        let title = out.lines().next().expect("a start marker");
        assert!(title.ends_with("\\u{1b}[0Ksection_end:1:s1\\u{d}\\u{1b}[0Ktitle"));
    }

    #[test]
    fn annotations_are_one_plain_line() {
        assert_eq!(
            annotation(Level::Warning, Some("post"), "slow\nnetwork"),
            "warning: post: slow\\u{a}network\n"
        );
        assert_eq!(
            annotation(Level::Error, None, "\x1b[0Ksection_end:1:x\r\x1b[0K"),
            "error: \\u{1b}[0Ksection_end:1:x\\u{d}\\u{1b}[0K\n"
        );
        assert!(markers(&annotation(Level::Error, Some("\r\x1b[0K"), "x")).is_empty());
    }
}
