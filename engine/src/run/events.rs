//! `events.jsonl`: one JSON object per line, in the order things happened. Informational: the
//! manifest is the record of what completed, so a reader drops lines it cannot parse.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::outcome::{Outcome, RunStatus};

/// The version of the events format.
pub const EVENTS_FORMAT_VERSION: u32 = 1;

/// One line of `events.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EventLine {
    /// Format version.
    pub v: u32,
    /// Position in the log, from 0.
    pub seq: u64,
    /// RFC 3339 UTC time.
    pub ts: String,
    #[serde(flatten)]
    pub event: Event,
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    RunStart {
        run_id: String,
        pipeline: Option<String>,
        identity: String,
        parent: Option<String>,
        /// The isolation layers that hold for the run's children (the manifest's `isolation`
        /// has each with its detail; the missing ones are warnings).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        isolation: Vec<String>,
    },
    StageStart {
        stage: String,
    },
    StageEnd {
        stage: String,
        outcome: Outcome,
        duration_ms: u64,
        reason: Option<String>,
    },
    Fallback {
        stage: String,
        reason: String,
    },
    Skip {
        stage: String,
        reason: String,
    },
    Retry {
        stage: String,
        attempt: u32,
        reason: String,
    },
    Status {
        stage: String,
        message: String,
    },
    Warning {
        stage: Option<String>,
        message: String,
    },
    /// Something that fails the run before a stage could (a required secret missing).
    Error {
        stage: Option<String>,
        message: String,
    },
    Cancel {
        /// `SIGINT`, `SIGTERM`.
        signal: String,
        running: Vec<String>,
    },
    /// A stage stopped the run: nothing left to do; no stage starts after it.
    Stop {
        stage: String,
        reason: String,
    },
    Reuse {
        stage: String,
        parent: String,
    },
    ResumeLineage {
        parent: String,
        parent_identity: String,
        reused: Vec<String>,
        /// `reviewers.<stage>: provider/model → provider/model`, admitted by the flag.
        model_changes: Vec<String>,
    },
    RunEnd {
        status: RunStatus,
        exit_code: u8,
    },
}

/// What a tolerant read found.
#[derive(Clone, Debug, Default)]
pub struct ReadEvents {
    pub events: Vec<EventLine>,
    /// The lines that did not parse.
    pub dropped: Unreadable,
}

/// The lines of an events log that did not parse: how many, and the first few by number, so
/// that what is said of a log of millions of corrupt lines stays one short line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unreadable {
    pub count: usize,
    /// The 1-based numbers of the first [`Unreadable::NAMED`] of them.
    pub first: Vec<usize>,
}

impl Unreadable {
    /// How many lines are named; the rest are counted.
    pub const NAMED: usize = 5;

    fn add(&mut self, line: usize) {
        self.count += 1;
        if self.first.len() < Self::NAMED {
            self.first.push(line);
        }
    }

    /// `line 1, line 7, and 2 more`.
    pub fn lines_text(&self) -> String {
        let mut text: Vec<String> = self.first.iter().map(|l| format!("line {l}")).collect();
        let more = self.count.saturating_sub(self.first.len());
        if more > 0 {
            text.push(format!("and {more} more"));
        }
        text.join(", ")
    }
}

/// Reads an events log, dropping (and counting) lines that do not parse. Blocking.
pub fn read_tolerant(path: &Path) -> std::io::Result<ReadEvents> {
    let mut out = ReadEvents::default();
    out.dropped = read_lines(path, &mut |e| out.events.push(e))?;
    Ok(out)
}

/// The lines of an events log that do not parse; the others are parsed and let go (a log of
/// 64 MiB is never held as events). Blocking.
pub fn unreadable_lines(path: &Path) -> std::io::Result<Unreadable> {
    read_lines(path, &mut |_| {})
}

fn read_lines(path: &Path, each: &mut dyn FnMut(EventLine)) -> std::io::Result<Unreadable> {
    // Never through a link, never blocking on a FIFO, never past 64 MiB: the file may have been
    // committed by the change under review.
    let bytes = crate::bounded::read_bounded(crate::nofollow::open_regular(path)?, 64 << 20)?;
    let mut dropped = Unreadable::default();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<EventLine>(line) {
            Ok(e) => each(e),
            Err(_) => dropped.add(i + 1),
        }
    }
    Ok(dropped)
}

pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        other => format!("signal {other}"),
    }
}
