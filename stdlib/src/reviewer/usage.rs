//! What a review cost: tokens in, out and cached, and money where the vendor reports it
//! (`docs/reviewers.md`, "Costs and budgets").
//!
//! Claude Code's JSON result carries `usage` and `total_cost_usd`; Codex reports `usage` on its
//! `turn.completed` events and no cost; the model API proxy sees the `usage` of every answer it
//! passes back ([`UsageTap`]) and counts what a CLI that ended early never reported.

use serde::{Deserialize, Serialize};

/// Money in millionths of a US dollar: sums stay exact, and a cost of $0.000001 still counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Usd(pub u64);

impl Usd {
    /// From a vendor's float (`total_cost_usd`); `None` for a negative or absurd value.
    pub fn from_dollars(d: f64) -> Option<Self> {
        (d.is_finite() && (0.0..1e9).contains(&d)).then(|| Usd((d * 1e6).round() as u64))
    }

    /// From the text of a budget (`"2.50"`, `"10"`): digits, at most one point, at most six
    /// decimals.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().strip_prefix('$').unwrap_or(text.trim());
        let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !digits(whole) || !digits(frac) || frac.len() > 6 {
            return None;
        }
        let whole: u64 = whole.parse().ok()?;
        let frac: u64 = format!("{frac:0<6}").parse().ok()?;
        whole.checked_mul(1_000_000)?.checked_add(frac).map(Usd)
    }

    pub fn dollars(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

impl std::fmt::Display for Usd {
    /// `$0.0123`: four decimals, more when the amount is smaller than a hundredth of a cent.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (whole, frac) = (self.0 / 1_000_000, self.0 % 1_000_000);
        let frac = format!("{frac:06}");
        let frac = if frac[4..] == *"00" {
            &frac[..4]
        } else {
            frac.trim_end_matches('0')
        };
        write!(f, "${whole}.{frac}")
    }
}

impl Serialize for Usd {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.dollars())
    }
}

impl<'de> Deserialize<'de> for Usd {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let dollars = f64::deserialize(d)?;
        Usd::from_dollars(dollars).ok_or_else(|| serde::de::Error::custom("not a cost in dollars"))
    }
}

/// Tokens and money of one try, a run, or a change's pushes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Every input token, those read from the vendor's cache included.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of the input, the tokens read from the vendor's cache.
    pub cached_tokens: u64,
    /// What the vendor says it cost; `None` when any part of the sum was not reported (Codex
    /// reports none, a try that ended early none): unknown, never zero.
    pub cost_usd: Option<Usd>,
}

impl Usage {
    /// Tokens in and out: what a token budget counts.
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Nothing spent and nothing unknown.
    pub fn is_zero(&self) -> bool {
        self.tokens() == 0 && self.cost_usd.is_none_or(|c| c.0 == 0)
    }

    /// The sum; its cost is known only when both are.
    pub fn plus(&self, other: &Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cached_tokens: self.cached_tokens.saturating_add(other.cached_tokens),
            cost_usd: match (self.cost_usd, other.cost_usd) {
                (Some(a), Some(b)) => Some(Usd(a.0.saturating_add(b.0))),
                _ => None,
            },
        }
    }

    /// Nothing spent yet, its cost known: the start of a sum.
    pub fn nothing() -> Usage {
        Usage {
            cost_usd: Some(Usd(0)),
            ..Usage::default()
        }
    }

    /// As the manifest keeps it: `in=1200 out=80 cached=0 usd=0.0123` (`usd=?` unknown).
    pub fn fact(&self) -> String {
        let usd = self
            .cost_usd
            .map_or_else(|| "?".to_owned(), |c| c.to_string()[1..].to_owned());
        format!(
            "in={} out={} cached={} usd={usd}",
            self.input_tokens, self.output_tokens, self.cached_tokens
        )
    }

    /// Reads [`Usage::fact`] back.
    pub fn parse_fact(text: &str) -> Option<Usage> {
        let mut parts = text.split(' ');
        let mut field = |name: &str| parts.next()?.strip_prefix(name)?.strip_prefix('=');
        let input_tokens = field("in")?.parse().ok()?;
        let output_tokens = field("out")?.parse().ok()?;
        let cached_tokens = field("cached")?.parse().ok()?;
        let cost_usd = match field("usd")? {
            "?" => None,
            usd => Some(Usd::parse(usd)?),
        };
        Some(Usage {
            input_tokens,
            output_tokens,
            cached_tokens,
            cost_usd,
        })
    }

    /// For people: `1,280 tokens (1,200 in, 80 out, 0 cached), $0.0123`.
    pub fn say(&self) -> String {
        let cost = self
            .cost_usd
            .map_or_else(|| "cost not reported".to_owned(), |c| c.to_string());
        format!(
            "{} tokens ({} in, {} out, {} cached), {cost}",
            thousands(self.tokens()),
            thousands(self.input_tokens),
            thousands(self.output_tokens),
            thousands(self.cached_tokens)
        )
    }

    /// The usage of Claude Code's JSON result: `usage` (input, cache creation and cache reads
    /// are separate counts there) and `total_cost_usd`. `None` when it carries no usage.
    pub fn of_claude_result(json: &serde_json::Value) -> Option<Usage> {
        let usage = json.get("usage")?;
        let n = |k: &str| {
            usage
                .get(k)
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0)
        };
        let cached = n("cache_read_input_tokens");
        Some(Usage {
            input_tokens: n("input_tokens")
                .saturating_add(n("cache_creation_input_tokens"))
                .saturating_add(cached),
            output_tokens: n("output_tokens"),
            cached_tokens: cached,
            cost_usd: json
                .get("total_cost_usd")
                .and_then(serde_json::Value::as_f64)
                .and_then(Usd::from_dollars),
        })
    }

    /// The usage of Codex's `--json` events: the sum of every `turn.completed`'s `usage`
    /// (`input_tokens` counts the cached ones too). Codex reports no cost. `None` when no turn
    /// completed.
    pub fn of_codex_events(stdout: &[u8]) -> Option<Usage> {
        let mut total: Option<Usage> = None;
        for line in stdout.split(|&b| b == b'\n') {
            let Ok(event) = serde_json::from_slice::<serde_json::Value>(line) else {
                continue;
            };
            if event.get("type").and_then(|v| v.as_str()) != Some("turn.completed") {
                continue;
            }
            let Some(usage) = event.get("usage") else {
                continue;
            };
            let n = |k: &str| {
                usage
                    .get(k)
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0)
            };
            let turn = Usage {
                input_tokens: n("input_tokens"),
                output_tokens: n("output_tokens"),
                cached_tokens: n("cached_input_tokens"),
                cost_usd: None,
            };
            total = Some(total.map_or(turn, |t| t.plus(&turn)));
        }
        total
    }
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Reads the usage an API answer reports as it streams past: Anthropic's Messages API
/// (`message_start`'s `message.usage`, then `message_delta`'s `usage`, whose counts are
/// cumulative) and OpenAI's Responses API (`response.completed`'s `response.usage`), streamed
/// as server-sent events or as one JSON body. Memory is bounded: a line longer than
/// [`MAX_LINE`] is skipped, not kept.
#[derive(Debug, Default)]
pub struct UsageTap {
    line: Vec<u8>,
    overlong: bool,
    /// The latest counts of the answer: later events replace earlier ones.
    input: Option<u64>,
    cache_creation: Option<u64>,
    cache_read: Option<u64>,
    output: Option<u64>,
    /// OpenAI counts cached tokens inside `input_tokens`.
    input_includes_cached: bool,
}

/// Longest line of an answer the tap reads (a whole non-streamed body is one line).
pub const MAX_LINE: usize = 1024 * 1024;

impl UsageTap {
    /// Feeds the next bytes of the answer's body.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (part, rest, ends) = match bytes.iter().position(|&b| b == b'\n') {
                Some(i) => (&bytes[..i], &bytes[i + 1..], true),
                None => (bytes, &[][..], false),
            };
            if !self.overlong {
                if self.line.len() + part.len() > MAX_LINE {
                    self.overlong = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(part);
                }
            }
            if ends {
                if !self.overlong {
                    let line = std::mem::take(&mut self.line);
                    self.read_line(&line);
                    // The buffer is kept for the next line.
                    self.line = line;
                }
                self.line.clear();
                self.overlong = false;
            }
            bytes = rest;
        }
    }

    /// The usage of the whole answer; `None` when it reported none.
    pub fn finish(mut self) -> Option<Usage> {
        if !self.overlong && !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.read_line(&line);
        }
        if self.input.is_none() && self.output.is_none() {
            return None;
        }
        let cached = self.cache_read.unwrap_or(0);
        let input = self.input.unwrap_or(0);
        let input = if self.input_includes_cached {
            input
        } else {
            input
                .saturating_add(self.cache_creation.unwrap_or(0))
                .saturating_add(cached)
        };
        Some(Usage {
            input_tokens: input,
            output_tokens: self.output.unwrap_or(0),
            cached_tokens: cached,
            cost_usd: None,
        })
    }

    fn read_line(&mut self, line: &[u8]) {
        // Only a line with a `"usage"` key is parsed: most are text deltas. Inside a JSON string
        // the quotes would be escaped, so a text cannot forge the key.
        if !line.windows(7).any(|w| w == b"\"usage\"") {
            return;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let json = match line.strip_prefix(b"data:") {
            Some(data) => data,
            None if line.first() == Some(&b'{') => line,
            None => return,
        };
        let Ok(event) = serde_json::from_slice::<serde_json::Value>(json) else {
            return;
        };
        let kind = event.get("type").and_then(|v| v.as_str()).unwrap_or("");
        let usage = match kind {
            "message_start" => event.pointer("/message/usage"),
            "response.completed" | "response.incomplete" | "response.failed" => {
                self.input_includes_cached = true;
                event.pointer("/response/usage")
            }
            // A non-streamed answer: the body's own usage.
            "message" => event.get("usage"),
            "response" => {
                self.input_includes_cached = true;
                event.get("usage")
            }
            _ => event.get("usage"),
        };
        let Some(usage) = usage else {
            return;
        };
        let n = |k: &str| usage.get(k).and_then(serde_json::Value::as_u64);
        let set = |slot: &mut Option<u64>, v: Option<u64>| {
            if v.is_some() {
                *slot = v;
            }
        };
        set(&mut self.input, n("input_tokens"));
        set(&mut self.output, n("output_tokens"));
        set(&mut self.cache_creation, n("cache_creation_input_tokens"));
        set(&mut self.cache_read, n("cache_read_input_tokens"));
        if let Some(cached) = usage
            .pointer("/input_tokens_details/cached_tokens")
            .and_then(serde_json::Value::as_u64)
        {
            self.cache_read = Some(cached);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_is_exact_and_said_briefly() {
        assert_eq!(Usd::parse("2.50"), Some(Usd(2_500_000)));
        assert_eq!(Usd::parse("$10"), Some(Usd(10_000_000)));
        assert_eq!(Usd::parse("0.000001"), Some(Usd(1)));
        for bad in ["", ".5", "1.0000001", "-1", "1e3", "1.2.3", "abc"] {
            assert_eq!(Usd::parse(bad), None, "{bad}");
        }
        assert_eq!(Usd::from_dollars(0.0123), Some(Usd(12_300)));
        assert_eq!(Usd::from_dollars(-1.0), None);
        assert_eq!(Usd(12_300).to_string(), "$0.0123");
        assert_eq!(Usd(2_500_000).to_string(), "$2.5000");
        assert_eq!(Usd(12).to_string(), "$0.000012");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }

    #[test]
    fn a_sum_knows_its_cost_only_when_every_part_does() {
        let a = Usage {
            input_tokens: 100,
            output_tokens: 10,
            cached_tokens: 40,
            cost_usd: Some(Usd(1000)),
        };
        let b = Usage {
            cost_usd: None,
            ..a
        };
        assert_eq!(a.plus(&a).cost_usd, Some(Usd(2000)));
        assert_eq!(a.plus(&a).tokens(), 220);
        assert_eq!(a.plus(&b).cost_usd, None);
        assert_eq!(Usage::parse_fact(&a.fact()), Some(a));
        assert_eq!(Usage::parse_fact(&b.fact()), Some(b));
        assert_eq!(a.fact(), "in=100 out=10 cached=40 usd=0.0010");
        assert_eq!(a.say(), "110 tokens (100 in, 10 out, 40 cached), $0.0010");
    }

    #[test]
    fn the_clis_reports_are_read() {
        let claude = serde_json::json!({"type": "result", "total_cost_usd": 0.0123,
            "usage": {"input_tokens": 5, "cache_creation_input_tokens": 100,
                      "cache_read_input_tokens": 1000, "output_tokens": 50}});
        assert_eq!(
            Usage::of_claude_result(&claude),
            Some(Usage {
                input_tokens: 1105,
                output_tokens: 50,
                cached_tokens: 1000,
                cost_usd: Some(Usd(12_300)),
            })
        );
        let codex = b"{\"type\":\"thread.started\",\"thread_id\":\"x\"}\n\
            {\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":300,\"cached_input_tokens\":100,\"output_tokens\":20}}\n\
            {\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":30,\"cached_input_tokens\":0,\"output_tokens\":2}}\n";
        assert_eq!(
            Usage::of_codex_events(codex),
            Some(Usage {
                input_tokens: 330,
                output_tokens: 22,
                cached_tokens: 100,
                cost_usd: None,
            })
        );
        assert_eq!(
            Usage::of_codex_events(b"{\"type\":\"turn.started\"}\n"),
            None
        );
    }

    #[test]
    fn the_tap_reads_streamed_answers_in_any_cut() {
        let anthropic = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":4,\"output_tokens\":1}}}\n\n\
            event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"hi\"}}\n\n\
            event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":20}}\n\n";
        let openai = "data: {\"type\":\"response.created\",\"response\":{}}\n\n\
            data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":10,\"input_tokens_details\":{\"cached_tokens\":3},\"output_tokens\":20}}}\n\n";
        for (body, want) in [
            (
                anthropic,
                Usage {
                    input_tokens: 14,
                    output_tokens: 20,
                    cached_tokens: 4,
                    cost_usd: None,
                },
            ),
            (
                openai,
                Usage {
                    input_tokens: 10,
                    output_tokens: 20,
                    cached_tokens: 3,
                    cost_usd: None,
                },
            ),
        ] {
            for cut in [1, 7, 64, body.len()] {
                let mut tap = UsageTap::default();
                for chunk in body.as_bytes().chunks(cut) {
                    tap.feed(chunk);
                }
                assert_eq!(tap.finish(), Some(want), "cut {cut}");
            }
        }
        // A whole JSON body, no line break at its end.
        let mut tap = UsageTap::default();
        tap.feed(b"{\"type\":\"message\",\"usage\":{\"input_tokens\":7,\"output_tokens\":8}}");
        assert_eq!(tap.finish().map(|u| u.tokens()), Some(15));
        // An overlong line is skipped, not kept.
        let mut tap = UsageTap::default();
        tap.feed(&vec![b'x'; MAX_LINE + 10]);
        assert!(tap.line.capacity() <= MAX_LINE + 1);
        tap.feed(b"\n");
        assert_eq!(tap.finish(), None);
    }
}
