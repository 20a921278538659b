//! Fitting text into GitHub's size limits.
//!
//! GitHub refuses the whole request (422) when a comment body or a check run's output is too
//! long, so a long review would post nothing at all. [`fit`] cuts a body to the limit instead,
//! says so in a note, and keeps the comment's metadata marker, without which the next run
//! would not find the comment and would post a second one.
//!
//! Lengths are counted in Unicode scalar values (`char`s), as GitHub counts characters, not
//! bytes.

use std::borrow::Cow;

use super::marker::marker_line;

/// Longest issue or pull-request comment body GitHub accepts, in characters.
pub const COMMENT_MAX_CHARS: usize = 65_536;
/// Longest check run `output.summary` or `output.text`, in characters.
pub const CHECK_TEXT_MAX_CHARS: usize = 65_535;
/// Longest check run `output.title` used here, in characters. GitHub documents no limit for
/// it (only for summary and text); 1,000 is a guess that is long enough for a title and
/// short enough to be safe. Change it when GitHub documents one.
pub const CHECK_TITLE_MAX_CHARS: usize = 1_000;
/// Longest annotation `title`, in characters (documented: "The maximum size is 255
/// characters").
pub const ANNOTATION_TITLE_MAX_CHARS: usize = 255;

/// How far back from the hard cut [`fit`] looks for a line break, in bytes.
const LINE_BREAK_WINDOW: usize = 2 * 1024;

/// The review comment's body before [`fit`]: the marker line, the baseline line of finding
/// identity when there is one (`docs/findings.md`), then the review comment without the `rules`
/// reviewer's table and the findings, counted and marked `new` or `persisting` against the last
/// review, with the resolved ones, as `review.md` lists them; last, after a blank line, the
/// `footer` when there is one (what the review cost, [`crate::forge::spent::footer`]).
pub fn comment_body(
    marker: &str,
    baseline: Option<&crate::forge::Baseline>,
    review: &crate::forge::Review,
    footer: Option<&str>,
) -> String {
    let mut body = String::from(marker);
    body.push('\n');
    if let Some(b) = baseline {
        body.push_str(&crate::forge::baseline::render_line(b));
        body.push('\n');
    }
    body.push_str(&crate::forge::formats::comment_with_findings(review));
    if let Some(footer) = footer {
        // A blank line first: a line right after the findings list would join its last item.
        if !body.ends_with('\n') {
            body.push('\n');
        }
        body.push('\n');
        body.push_str(footer);
        body.push('\n');
    }
    body
}

/// The length of `text` as GitHub counts it.
pub fn char_count(text: &str) -> usize {
    text.chars().count()
}

/// `body` unchanged when it has at most `limit` characters; otherwise cut to fit.
///
/// The cut falls at a character boundary, at the last line break within the last ~2 KiB
/// before the hard limit when there is one (so no line is cut in half), and an open code
/// fence (a heuristic: a line starting with ```` ``` ```` or `~~~`) is closed so that the note
/// renders as text. Then comes the note `… (cut: the review is N characters, GitHub allows M;
/// …)`. The result never has more than `limit` characters.
///
/// The first marker line (see [`super::marker::Marker::parse_body`]) is always kept: in place
/// when it lies before the cut, else moved to the first line. Either way it stays the first
/// marker line of the result: a line cut short could otherwise turn into an earlier marker
/// line (text such as `<marker>tail` cut after the marker). Only when `limit` cannot hold even
/// the marker is the body cut plainly.
pub fn fit(body: &str, limit: usize) -> Cow<'_, str> {
    let total = char_count(body);
    if total <= limit {
        return Cow::Borrowed(body);
    }
    let long = format!(
        "\n\n… (cut: the review is {total} characters, GitHub allows {limit}; the full review \
         is in the run's step summary / artifacts)"
    );
    let notes = [long.as_str(), "\n\n… (cut)", ""];
    let marker = marker_line(body).map(|(range, _)| range);
    notes
        .iter()
        .find_map(|note| fit_with(body, limit, marker.clone(), note))
        .map_or_else(
            || Cow::Owned(body.chars().take(limit).collect()),
            Cow::Owned,
        )
}

/// One line for a title: the first line of `text`, cut to `limit` characters with a final `…`.
pub fn fit_line(text: &str, limit: usize) -> Cow<'_, str> {
    let line = text.lines().next().unwrap_or("").trim_end();
    if char_count(line) <= limit {
        return Cow::Borrowed(line);
    }
    let Some(keep) = limit.checked_sub(1) else {
        return Cow::Borrowed("");
    };
    let mut out: String = line.chars().take(keep).collect();
    out.push('…');
    Cow::Owned(out)
}

/// `body` cut so that the kept part, a fence closing, `note` and the marker (when it must be
/// moved to the top) fit in `limit`; `None` when they cannot.
fn fit_with(
    body: &str,
    limit: usize,
    marker: Option<std::ops::Range<usize>>,
    note: &str,
) -> Option<String> {
    let note_chars = char_count(note);
    // Room for a closing fence: none at first, then as much as the cut turns out to need.
    let mut reserve = 0;
    for _ in 0..3 {
        let budget = limit.checked_sub(note_chars + reserve)?;
        let (cut, moved) = cut_point(body, budget, marker.clone())?;
        let kept = &body[..cut];
        let closing = open_fence(kept).map(|f| format!("\n{f}"));
        let closing_len = closing.as_deref().map_or(0, str::len);
        if closing_len <= reserve {
            let mut out = String::with_capacity(cut + note.len() + closing_len + 200);
            if let Some(m) = moved {
                out.push_str(m);
                out.push('\n');
            }
            out.push_str(kept);
            out.push_str(closing.as_deref().unwrap_or(""));
            out.push_str(note);
            debug_assert!(char_count(&out) <= limit);
            return Some(out);
        }
        reserve = closing_len;
    }
    None
}

/// Where to cut `body` to keep at most `budget` characters, and the marker line to move to the
/// top when it is not in the kept part.
fn cut_point(
    body: &str,
    budget: usize,
    marker: Option<std::ops::Range<usize>>,
) -> Option<(usize, Option<&str>)> {
    let hard = byte_of_char(body, budget);
    match marker {
        Some(m) if m.end <= hard => Some((prefer_line_break(body, hard, m.end), None)),
        Some(m) => {
            let text = &body[m.clone()];
            let budget = budget.checked_sub(1 + char_count(text))?;
            let hard = byte_of_char(body, budget).min(m.start);
            Some((prefer_line_break(body, hard, 0), Some(text)))
        }
        None => Some((prefer_line_break(body, hard, 0), None)),
    }
}

/// The byte offset of the `n`-th character of `text` (its length when it has fewer).
fn byte_of_char(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// The last line break in `body[..hard]` within [`LINE_BREAK_WINDOW`] bytes and not before
/// `min` (the break itself and a `\r` before it dropped), else `hard`.
fn prefer_line_break(body: &str, hard: usize, min: usize) -> usize {
    let mut from = hard.saturating_sub(LINE_BREAK_WINDOW).max(min);
    while !body.is_char_boundary(from) {
        from += 1;
    }
    if from >= hard {
        return hard;
    }
    match body[from..hard].rfind('\n') {
        Some(i) => {
            let cut = from + i;
            if cut > min && body[..cut].ends_with('\r') {
                cut - 1
            } else {
                cut
            }
        }
        None => hard,
    }
}

/// The fence that is open at the end of `text`, if any (CommonMark's rule, simplified: a line
/// whose indentation-trimmed start is three or more backticks or tildes opens a fence, and a
/// line of at least as many of the same character closes it).
fn open_fence(text: &str) -> Option<String> {
    let mut open: Option<(char, usize)> = None;
    for line in text.lines() {
        let t = line.trim_start();
        let Some(c) = t.chars().next().filter(|c| matches!(c, '`' | '~')) else {
            continue;
        };
        let run = t.chars().take_while(|&x| x == c).count();
        if run < 3 {
            continue;
        }
        match open {
            None => open = Some((c, run)),
            Some((oc, on)) if oc == c && run >= on && t[run..].trim().is_empty() => open = None,
            Some(_) => {}
        }
    }
    open.map(|(c, n)| std::iter::repeat_n(c, n).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::github::marker::Marker;

    fn marker() -> Marker {
        Marker::new("p", Some("web"), &"a".repeat(40), "1", Some("c")).unwrap()
    }

    #[test]
    fn the_footer_ends_the_body_after_a_blank_line() {
        let review = crate::forge::Review {
            comment: "Looks fine.".into(),
            findings: Vec::new(),
            base: crate::git::Sha::parse(&"1".repeat(40)).unwrap(),
            head: crate::git::Sha::parse(&"2".repeat(40)).unwrap(),
            run_id: "1".into(),
            conversation_id: None,
            reviewer: "reviewflow".into(),
            resolved: Vec::new(),
        };
        let marker = marker().render();
        let plain = comment_body(&marker, None, &review, None);
        let footed = comment_body(&marker, None, &review, Some("Cost: this review …"));
        assert_eq!(footed, format!("{plain}\nCost: this review …\n"));
        assert!(plain.ends_with("None.\n"), "{plain}");
        assert!(!plain.contains("Cost:"));
    }

    #[test]
    fn short_body_is_borrowed() {
        assert!(matches!(fit("hello", 5), Cow::Borrowed("hello")));
        assert!(matches!(fit("", 0), Cow::Borrowed("")));
    }

    #[test]
    fn counts_characters_not_bytes() {
        // 10 characters, 30 bytes: fits a 10-character limit.
        let body = "€".repeat(10);
        assert!(matches!(fit(&body, 10), Cow::Borrowed(_)));
        let long = "€".repeat(70_000);
        let out = fit(&long, COMMENT_MAX_CHARS);
        assert!(char_count(&out) <= COMMENT_MAX_CHARS);
        assert!(out.len() > COMMENT_MAX_CHARS, "bytes are not the limit");
        assert!(out.ends_with("step summary / artifacts)"));
        assert!(out.contains("the review is 70000 characters, GitHub allows 65536"));
    }

    #[test]
    fn prefers_a_line_break_near_the_cut() {
        let line = "x".repeat(99);
        let body: String = (0..2_000).map(|_| format!("{line}\n")).collect();
        let out = fit(&body, 10_000);
        assert!(char_count(&out) <= 10_000);
        let (kept, _) = out.split_once("\n\n… (cut").unwrap();
        assert!(kept.lines().all(|l| l == line), "no line is cut in half");
        // Far from the limit: about one line lost, not the 2 KiB window.
        assert!(char_count(kept) > 10_000 - 200 - 100);
    }

    #[test]
    fn without_line_breaks_cuts_at_a_char_boundary() {
        let body = "é".repeat(5_000);
        let out = fit(&body, 1_000);
        assert!(char_count(&out) <= 1_000);
        assert!(out.starts_with("éé"));
    }

    #[test]
    fn keeps_the_marker_in_place() {
        let m = marker();
        let body = format!("{}\n{}", m.render(), "word ".repeat(20_000));
        let out = fit(&body, 5_000);
        assert!(char_count(&out) <= 5_000);
        assert!(out.starts_with(&m.render()));
        assert_eq!(Marker::parse_body(&out), Some(m));
    }

    #[test]
    fn moves_a_marker_that_lies_beyond_the_cut_to_the_top() {
        let m = marker();
        let body = format!("{}\n{}\n", "a".repeat(10_000), m.render());
        let out = fit(&body, 1_000);
        assert!(char_count(&out) <= 1_000);
        assert!(out.starts_with(&format!("{}\naaa", m.render())));
        assert!(out.ends_with("artifacts)"));
        assert_eq!(Marker::parse_body(&out), Some(m.clone()));
        // The marker straddling the cut: not cut in half, moved whole.
        let render = m.render();
        let body = format!("{}\n{render}\n{}", "a".repeat(800), "b".repeat(1_000));
        let out = fit(&body, 1_000);
        assert!(char_count(&out) <= 1_000);
        assert_eq!(out.matches(&render).count(), 1);
        assert_eq!(Marker::parse_body(&out), Some(m));
    }

    #[test]
    fn a_line_cut_short_cannot_become_an_earlier_marker() {
        let m = marker();
        let forged = Marker::new("p", Some("web"), &"f".repeat(40), "9", None).unwrap();
        let forged_line = format!("{}{}", forged.render(), "tail".repeat(100));
        let body = format!("{forged_line}\n{}\n{}", "x".repeat(2_000), m.render());
        // The original's first marker line is ours (the forged line is not exactly a marker).
        assert_eq!(Marker::parse_body(&body), Some(m.clone()));
        for limit in 150..400 {
            let out = fit(&body, limit);
            assert_eq!(Marker::parse_body(&out), Some(m.clone()), "limit {limit}");
        }
    }

    #[test]
    fn tiny_limits_never_exceed() {
        let m = marker();
        let body = format!("{}\n{}", m.render(), "z".repeat(500));
        for limit in [0, 1, 5, 20, 60, 130, 200, 300] {
            let out = fit(&body, limit);
            assert!(
                char_count(&out) <= limit,
                "limit {limit}: {}",
                char_count(&out)
            );
        }
        // Room for the marker and a short note, not the long one.
        let limit = char_count(&m.render()) + 12;
        let out = fit(&body, limit);
        assert_eq!(Marker::parse_body(&out), Some(m));
        assert!(out.ends_with("… (cut)"));
    }

    #[test]
    fn sweep_never_exceeds_and_keeps_the_marker() {
        let m = marker();
        let render = m.render();
        let marker_chars = char_count(&render);
        // A deterministic mix of multi-byte text, CRLF and LF breaks, fences and a marker at
        // several places.
        let pieces = ["é", "a", "\n", "\r\n", "```\n", "~~~~\n", "😀", " ", "\n\n"];
        let mut seed: u32 = 7;
        for round in 0..60 {
            let mut body = String::new();
            for _ in 0..(200 + round * 37) {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                body.push_str(pieces[(seed >> 16) as usize % pieces.len()]);
            }
            let at = (round * 53) % (body.len() + 1);
            let at = (0..=at).rev().find(|&i| body.is_char_boundary(i)).unwrap();
            body.insert_str(at, &format!("\n{render}\n"));
            for limit in [0, 10, marker_chars, marker_chars + 15, 150, 400, 1_000] {
                let out = fit(&body, limit);
                assert!(char_count(&out) <= limit, "round {round}, limit {limit}");
                if limit >= marker_chars + 15 && char_count(&body) > limit {
                    assert_eq!(Marker::parse_body(&out), Some(m.clone()), "round {round}");
                }
            }
        }
    }

    #[test]
    fn closes_an_open_code_fence() {
        let body = format!("intro\n````rust\n{}", "let x = 1;\n".repeat(1_000));
        let out = fit(&body, 2_000);
        assert!(char_count(&out) <= 2_000);
        assert!(out.contains("\n````\n\n… (cut"));
        let closed = format!("```\ncode\n```\n{}", "text\n".repeat(1_000));
        assert!(!fit(&closed, 2_000).contains("```\n\n…"));
        assert_eq!(open_fence("~~~\na\n```\n"), Some("~~~".into()));
        assert_eq!(open_fence("~~~\na\n~~~~\n"), None);
    }

    #[test]
    fn crlf_bodies_are_cut_before_the_pair() {
        let body = "line\r\n".repeat(1_000);
        let out = fit(&body, 500);
        let (kept, _) = out.split_once("\n\n…").unwrap();
        assert!(kept.ends_with("line"));
    }

    #[test]
    fn fit_line_takes_the_first_line() {
        assert_eq!(fit_line("title\nmore", 10), "title");
        assert_eq!(fit_line("abcdef", 4), "abc…");
        assert_eq!(char_count(&fit_line(&"é".repeat(300), 255)), 255);
        assert_eq!(fit_line("abc", 0), "");
        assert_eq!(fit_line("", 3), "");
    }
}
