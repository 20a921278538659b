//! The scanner as a stage uses it: all detectors over mixed text, secrets given by the run.
//! Every token here is synthetic.

use reviewflow_stdlib::detect::{DetectorId, MIN_SECRET_LEN, NamedSecret, Note, notes, scan};

const GITHUB: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";
const AWS: &str = "AKIAFAKEFAKEFAKE0123";
const SECRET: &str = "FAKE-conversation-key-0123456789";

fn all() -> Vec<DetectorId> {
    DetectorId::ALL.to_vec()
}

fn secrets() -> Vec<NamedSecret> {
    vec![
        NamedSecret::new("conversation-key", SECRET.as_bytes().to_vec()),
        NamedSecret::new("pin", b"1234".to_vec()),
    ]
}

#[test]
fn hits_are_sorted_and_located() {
    let text = format!("first line\n  gh = {GITHUB}\n\naws={AWS} key={SECRET}\n");
    let hits = scan(text.as_bytes(), &secrets(), &all());
    let got: Vec<_> = hits
        .iter()
        .map(|h| (h.detector, h.line, h.column, h.secret_name.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            (DetectorId::Github, 2, 8, None),
            (DetectorId::Aws, 4, 5, None),
            (DetectorId::SecretValue, 4, 30, Some("conversation-key")),
        ]
    );
    for h in &hits {
        assert!(text.get(h.byte_range.clone()).is_some());
    }
    assert_eq!(&text[hits[0].byte_range.clone()], GITHUB);
}

#[test]
fn only_enabled_detectors_run() {
    let text = format!("{GITHUB} {AWS} {SECRET}");
    let hits = scan(text.as_bytes(), &secrets(), &[DetectorId::Aws]);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].detector, DetectorId::Aws);
    assert!(scan(text.as_bytes(), &secrets(), &[]).is_empty());
}

#[test]
fn one_place_can_hit_several_detectors() {
    let s = vec![NamedSecret::new("github-token", GITHUB.as_bytes().to_vec())];
    let hits = scan(GITHUB.as_bytes(), &s, &all());
    let ids: Vec<_> = hits.iter().map(|h| h.detector).collect();
    assert_eq!(ids, vec![DetectorId::Github, DetectorId::SecretValue]);
}

#[test]
fn hits_never_show_the_value() {
    let text = format!("{GITHUB} {SECRET}");
    for h in scan(text.as_bytes(), &secrets(), &all()) {
        for shown in [
            format!("{h:?}"),
            format!("{h}"),
            serde_json::to_string(&h).unwrap(),
        ] {
            assert!(
                !shown.contains(GITHUB) && !shown.contains(SECRET),
                "{shown}"
            );
            assert!(!shown.contains("0123456789abcdef"), "{shown}");
        }
    }
}

#[test]
fn secrets_never_show_their_value() {
    let s = NamedSecret::new("conversation-key", SECRET.as_bytes().to_vec());
    let shown = format!("{s:?}");
    assert!(shown.contains("conversation-key") && shown.contains("[redacted]"));
    assert!(!shown.contains(SECRET));
}

#[test]
fn short_secrets_are_noted_not_searched() {
    let n = notes(&secrets(), &all());
    assert_eq!(n, vec![Note::SecretTooShort { name: "pin".into() }]);
    assert!(n[0].to_string().contains(&MIN_SECRET_LEN.to_string()));
    assert!(notes(&secrets(), &[DetectorId::Github]).is_empty());
    assert!(scan(b"pin 1234", &secrets(), &all()).is_empty());
    // Whitespace does not count towards the length.
    let padded = vec![NamedSecret::new("padded", b"  1234567\n\n".to_vec())];
    assert_eq!(notes(&padded, &all()).len(), 1);
}

#[test]
fn works_on_binary_input() {
    let mut text = vec![0u8, 0xff, 0xfe, b'\n', 0x80];
    text.extend_from_slice(GITHUB.as_bytes());
    text.extend_from_slice(&[0xc3, 0x28, b'\n']);
    let hits = scan(&text, &secrets(), &all());
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].line, hits[0].column), (2, 2));
}

#[test]
fn jsonl_conversation() {
    // A model conversation stores tool output JSON-escaped; tokens survive escaping as is.
    let line =
        format!("{{\"type\":\"tool_result\",\"content\":\"export GH={GITHUB}\\nAWS={AWS}\\n\"}}\n");
    let hits = scan(line.as_bytes(), &[], &all());
    assert_eq!(hits.len(), 2);
}

/// Deterministic pseudo-random bytes (xorshift).
fn garbage(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn garbage_never_panics() {
    let pieces: [&[u8]; 8] = [
        b"-----BEGIN RSA PRIVATE KEY-----",
        b"-----END ",
        b"eyJhbGciOiJIUzI1NiJ9.",
        b"ghp_",
        b"sk-ant-api03-",
        b"sk-proj-",
        b"AKIA",
        SECRET.as_bytes(),
    ];
    for seed in 0..200u64 {
        let mut text = garbage(seed, (seed as usize * 7) % 300);
        for (i, p) in pieces.iter().enumerate() {
            if (seed >> i) & 1 == 1 {
                let at = (seed as usize * 13) % (text.len() + 1);
                text.splice(at..at, p.iter().copied());
            }
        }
        for h in scan(&text, &secrets(), &all()) {
            assert!(h.byte_range.end <= text.len() && h.line >= 1 && h.column >= 1);
        }
    }
}
