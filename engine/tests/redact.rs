//! The redactor: every shape of a secret is replaced, on whole buffers and on streams.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use reviewflow_engine::exec::redact::{MIN_SECRET_LEN, Redactor};

const TOKEN: &str = "ghp_R3allyS3cretT0kenValue+/xyz";

fn redactor() -> Redactor {
    Redactor::new([
        ("github-token", TOKEN.as_bytes().to_vec()),
        ("conversation-key", b"k3y-material-0123456789\n".to_vec()),
    ])
    .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Pushes `data` split at the given points and returns the whole output.
fn stream_split(r: &Redactor, data: &[u8], cuts: &[usize]) -> Vec<u8> {
    let mut s = r.stream();
    let mut out = Vec::new();
    let mut last = 0;
    for &cut in cuts {
        out.extend(s.push(&data[last..cut]));
        last = cut;
    }
    out.extend(s.push(&data[last..]));
    out.extend(s.finish());
    out
}

#[test]
fn plain_value_is_replaced_by_a_named_marker() {
    let out = redactor()
        .redact(format!("token={TOKEN};").as_bytes())
        .into_owned();
    assert_eq!(text(&out), "token=[redacted:github-token];");
}

#[test]
fn output_without_secrets_is_borrowed_unchanged() {
    let r = redactor();
    assert!(matches!(
        r.redact(b"nothing here"),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn trimmed_value_is_replaced_and_line_breaks_survive() {
    let out = redactor()
        .redact(b"key: k3y-material-0123456789\nnext line\n")
        .into_owned();
    assert_eq!(text(&out), "key: [redacted:conversation-key]\nnext line\n");
}

#[test]
fn every_base64_form_is_replaced() {
    let r = redactor();
    for engine in [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD] {
        let encoded = engine.encode(TOKEN);
        let out = text(&r.redact(format!("x {encoded} y").as_bytes()));
        assert_eq!(out, "x [redacted:github-token] y", "{encoded}");
    }
    let with_newline = STANDARD.encode("k3y-material-0123456789\n");
    let out = text(&r.redact(with_newline.as_bytes()));
    assert_eq!(out, "[redacted:conversation-key]");
}

#[test]
fn base64_of_a_longer_string_holding_the_secret_is_redacted() {
    // HTTP basic auth: base64("x-access-token:<token>").
    let r = redactor();
    for user in ["x", "xy", "x-access-token"] {
        let header = STANDARD.encode(format!("{user}:{TOKEN}"));
        let out = text(&r.redact(format!("Authorization: Basic {header}").as_bytes()));
        assert!(out.contains("[redacted:github-token]"), "{user}: {out}");
        for window in TOKEN.as_bytes().windows(8) {
            assert!(!out.contains(std::str::from_utf8(window).unwrap()));
        }
    }
}

#[test]
fn json_escaped_multiline_value_is_redacted() {
    let pem = "-----BEGIN KEY-----\nMIIBOgIBAAJBAKj34\n-----END KEY-----\n";
    let r = Redactor::new([("deploy-key", pem)]).unwrap();
    let json = serde_json::to_string(&serde_json::json!({ "k": pem })).unwrap();
    let out = text(&r.redact(json.as_bytes()));
    assert_eq!(out, r#"{"k":"[redacted:deploy-key]\n"}"#);
}

#[test]
fn values_below_the_minimum_are_skipped_and_reported() {
    assert_eq!(MIN_SECRET_LEN, 4);
    let r = Redactor::new([("pin", "123"), ("word", "abcd"), ("blank", "  \n")]).unwrap();
    assert_eq!(r.skipped(), ["pin".to_string(), "blank".to_string()]);
    assert_eq!(text(&r.redact(b"123 abcd")), "123 [redacted:word]");
}

#[test]
fn longest_overlapping_secret_wins() {
    let r = Redactor::new([("short", "abcd"), ("long", "abcdefgh")]).unwrap();
    assert_eq!(
        text(&r.redact(b"abcdefgh abcd")),
        "[redacted:long] [redacted:short]"
    );
}

#[test]
fn debug_names_secrets_but_never_prints_values() {
    let r = redactor();
    let debug = format!("{r:?} {:?}", r.stream());
    assert!(debug.contains("github-token"));
    assert!(!debug.contains("R3ally"));
    assert!(!debug.contains("k3y-material"));
}

#[test]
fn redactor_is_clone_send_sync() {
    fn check<T: Clone + Send + Sync + 'static>() {}
    check::<Redactor>();
    fn send<T: Send>() {}
    send::<reviewflow_engine::exec::redact::RedactingStream>();
}

#[test]
fn a_secret_split_at_every_point_is_redacted() {
    let r = redactor();
    let data = format!(
        "a {TOKEN} b {} c\nk3y-material-0123456789\n",
        STANDARD.encode(TOKEN)
    );
    let data = data.as_bytes();
    let whole = r.redact(data).into_owned();
    for cut in 0..=data.len() {
        assert_eq!(stream_split(&r, data, &[cut]), whole, "cut at {cut}");
    }
    for a in 0..data.len() {
        for b in a..data.len() {
            assert_eq!(stream_split(&r, data, &[a, b]), whole, "cuts {a} {b}");
        }
    }
}

#[test]
fn byte_by_byte_stream_matches_whole_buffer() {
    let r = redactor();
    let data = format!("{TOKEN}{TOKEN}x{}", URL_SAFE_NO_PAD.encode(TOKEN));
    let cuts: Vec<usize> = (1..data.len()).collect();
    assert_eq!(
        text(&stream_split(&r, data.as_bytes(), &cuts)),
        "[redacted:github-token][redacted:github-token]x[redacted:github-token]"
    );
}

#[test]
fn a_longer_match_that_starts_earlier_is_not_cut_short_by_a_chunk_end() {
    // "def" alone is complete at the end of the first chunk, yet "abcdefXYZ" wins once the rest
    // arrives: leftmost-longest over the whole stream, not per chunk.
    let r = Redactor::new([("long", "abcdefXYZ"), ("inner", "defg")]).unwrap();
    let mut s = r.stream();
    let mut out = s.push(b"..abcdef");
    out.extend(s.push(b"XYZ.."));
    out.extend(s.finish());
    assert_eq!(text(&out), "..[redacted:long]..");
}

#[test]
fn random_chunkings_match_whole_buffer() {
    let r = redactor();
    let mut data = Vec::new();
    for i in 0..200 {
        data.extend_from_slice(format!("line {i} ").as_bytes());
        match i % 5 {
            0 => data.extend_from_slice(TOKEN.as_bytes()),
            1 => data.extend_from_slice(STANDARD.encode(format!("u:{TOKEN}")).as_bytes()),
            2 => data.extend_from_slice(&TOKEN.as_bytes()[..10]),
            3 => data.extend_from_slice(b"k3y-material-0123456789"),
            _ => {}
        }
        data.push(b'\n');
    }
    let whole = r.redact(&data).into_owned();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..50 {
        let mut cuts = Vec::new();
        let mut at = 0;
        loop {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            at += 1 + (seed % 40) as usize;
            if at >= data.len() {
                break;
            }
            cuts.push(at);
        }
        assert_eq!(stream_split(&r, &data, &cuts), whole);
    }
}

#[test]
fn a_huge_line_without_newline_keeps_memory_bounded() {
    let r = redactor();
    let mut s = r.stream();
    let mut out_len = 0;
    let mut redactions = 0;
    let filler = vec![b'A'; 4096];
    for i in 0..2048 {
        let mut chunk = filler.clone();
        if i % 3 == 0 {
            // a secret straddling this chunk and the next
            chunk.extend_from_slice(&TOKEN.as_bytes()[..7]);
        } else if i % 3 == 1 {
            chunk.splice(0..0, TOKEN.as_bytes()[7..].iter().copied());
        }
        let out = s.push(&chunk);
        redactions += text(&out).matches("[redacted:github-token]").count();
        out_len += out.len();
        assert!(
            s.buffered() < r.max_pattern_len(),
            "buffered {}",
            s.buffered()
        );
    }
    let out = s.finish();
    redactions += text(&out).matches("[redacted:github-token]").count();
    out_len += out.len();
    assert_eq!(redactions, 683);
    assert!(out_len > 2048 * 4096);
}

#[test]
fn plain_text_is_released_without_waiting_for_more_data() {
    let r = redactor();
    let mut s = r.stream();
    assert_eq!(s.push(b"progress: 10%\n"), b"progress: 10%\n");
    // A tail that may be the start of the token is held back, and only that tail.
    assert_eq!(s.push(b"next ghp_R3"), b"next ");
    assert_eq!(s.buffered(), 6);
    assert_eq!(s.finish(), b"ghp_R3");
}

#[test]
fn empty_redactor_passes_everything_through() {
    let r = Redactor::empty();
    let mut s = r.stream();
    assert_eq!(s.push(b"abc"), b"abc");
    assert!(s.finish().is_empty());
    assert_eq!(r.redact(b"xyz").as_ref(), b"xyz");
}
