//! What base64 hides: a credential is one whatever its encoding, and tools encode them (git keeps
//! a token as `AUTHORIZATION: basic <base64 of x-access-token:token>`; a prompt-injected model
//! can be asked to encode what it found). Every run of base64 in a text is decoded, and the
//! decoded runs form a [`Layer`] that the detectors search like the text itself; a hit in a layer
//! is reported on the run it came from. What a layer holds is decoded again, up to [`MAX_DEPTH`]
//! layers (the encoding of a whole `.git/config` holds the header's own encoding).

use std::ops::Range;
use std::sync::LazyLock;

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use regex::bytes::Regex;

/// Runs shorter than this decode to fewer than 18 bytes: shorter than any credential searched.
const MIN_RUN: usize = 24;

/// How many times a text is decoded within itself.
pub(crate) const MAX_DEPTH: usize = 3;

static RUN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)[A-Za-z0-9+/_-]{24,}={0,2}").expect("static pattern compiles")
});

const fn lenient(alphabet: &alphabet::Alphabet) -> GeneralPurpose {
    GeneralPurpose::new(
        alphabet,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    )
}

const STANDARD: GeneralPurpose = lenient(&alphabet::STANDARD);
const URL_SAFE: GeneralPurpose = lenient(&alphabet::URL_SAFE);

/// The decoded runs of one text, one after another, each followed by a line break (so that no
/// match joins two runs and every run stands alone), with where each came from in the scanned
/// text.
pub(crate) struct Layer {
    pub bytes: Vec<u8>,
    /// (start in `bytes`, the outermost run in the scanned text), by start.
    origins: Vec<(usize, Range<usize>)>,
}

impl Layer {
    /// The run of the scanned text that byte `at` of this layer was decoded from.
    pub fn origin(&self, at: usize) -> Option<Range<usize>> {
        let i = self.origins.partition_point(|(start, _)| *start <= at);
        i.checked_sub(1).map(|i| self.origins[i].1.clone())
    }
}

/// The layers of `text`, outermost first; empty when it holds no base64 run that decodes.
pub(crate) fn layers(text: &[u8]) -> Vec<Layer> {
    let mut out: Vec<Layer> = Vec::new();
    while out.len() < MAX_DEPTH {
        let next = match out.last() {
            None => decode_runs(text, Some),
            Some(layer) => decode_runs(&layer.bytes, |range| layer.origin(range.start)),
        };
        match next {
            Some(layer) => out.push(layer),
            None => break,
        }
    }
    out
}

fn decode_runs(
    text: &[u8],
    origin: impl Fn(Range<usize>) -> Option<Range<usize>>,
) -> Option<Layer> {
    let mut layer = Layer {
        bytes: Vec::new(),
        origins: Vec::new(),
    };
    for m in RUN.find_iter(text) {
        let Some(decoded) = decode(m.as_bytes()) else {
            continue;
        };
        let Some(from) = origin(m.range()) else {
            continue;
        };
        layer.origins.push((layer.bytes.len(), from));
        layer.bytes.extend_from_slice(&decoded);
        layer.bytes.push(b'\n');
    }
    (!layer.origins.is_empty()).then_some(layer)
}

/// `run` decoded in the one alphabet its characters belong to; `None` when they mix both or it
/// does not decode.
fn decode(run: &[u8]) -> Option<Vec<u8>> {
    let body = run.strip_suffix(b"==").or_else(|| run.strip_suffix(b"="));
    let mut body = body.unwrap_or(run);
    if body.len() < MIN_RUN {
        return None;
    }
    let standard = body.iter().any(|&b| b == b'+' || b == b'/');
    let url_safe = body.iter().any(|&b| b == b'-' || b == b'_');
    let engine = match (standard, url_safe) {
        (true, true) => return None,
        (false, true) => &URL_SAFE,
        _ => &STANDARD,
    };
    // One character past a whole group holds no whole byte: a run glued to a word.
    if body.len() % 4 == 1 {
        body = &body[..body.len() - 1];
    }
    engine.decode(body).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD as PLAIN, URL_SAFE_NO_PAD};

    #[test]
    fn runs_decode_in_their_alphabet_and_keep_their_origin() {
        let a = PLAIN.encode("x-access-token:first-credential-value");
        let b = URL_SAFE_NO_PAD.encode(b"\xfb\xff second-credential-value");
        let text = format!("basic {a} then {b}.");
        let layers = layers(text.as_bytes());
        assert_eq!(layers.len(), 1);
        let layer = &layers[0];
        let found = memchr::memmem::find(&layer.bytes, b"x-access-token:").expect("decoded");
        assert_eq!(layer.origin(found), Some(6..6 + a.len()));
        let second = memchr::memmem::find(&layer.bytes, b"second").expect("decoded");
        let start = text.find(&b).expect("in the text");
        assert_eq!(layer.origin(second), Some(start..start + b.len()));
    }

    #[test]
    fn an_encoding_within_an_encoding_is_a_second_layer() {
        let inner = PLAIN.encode("x-access-token:the-credential-itself");
        let config = format!("[http]\n\textraheader = AUTHORIZATION: basic {inner}\n");
        let outer = PLAIN.encode(&config);
        let text = format!("here: {outer}");
        let layers = layers(text.as_bytes());
        assert_eq!(layers.len(), 2);
        let at = memchr::memmem::find(&layers[1].bytes, b"the-credential").expect("decoded");
        assert_eq!(layers[1].origin(at), Some(6..text.len()));
    }

    #[test]
    fn short_mixed_and_undecodable_runs_make_no_layer() {
        assert!(layers(b"short: YWJjZGVm").is_empty());
        assert!(layers(b"mixed: YWJj+ZGVmZ2hp_amtsbW5vcHFyc3R1dnd4").is_empty());
        assert!(layers(b"plain prose, no run of base64 characters in it").is_empty());
    }
}
