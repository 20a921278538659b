//! The one writer of the events log and the console: a dedicated thread fed by a channel, so no
//! runtime thread ever blocks on a terminal or a file, and lines of parallel stages never mix.
//! Every text passes the run's redactor here, whatever produced it.
//!
//! A child's output is bounded before it reaches the channel (docs/executor.md, "A stage that
//! prints a lot"): each stage sends at most its head, and keeps what follows in a ring of its last
//! lines, which the writer shows (with what was cut) when the stage ends. Nothing waits: the
//! channel carries only what the engine says and the heads, so memory is bounded by design.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::clock;
use super::console::{Console, ConsoleMode};
use super::events::{EVENTS_FORMAT_VERSION, Event, EventLine};
use crate::exec::process::Stream;
use crate::exec::redact::Redactor;

pub(crate) enum Report {
    Event(Event),
    Output {
        stage: Arc<str>,
        stream: Stream,
        text: String,
    },
    /// Values for the platform to mask (docs/platforms.md), before anything else is printed.
    Mask(Vec<String>),
    /// Sync the events file, then answer.
    Flush(Sender<()>),
}

/// How much of a stage's child output the console shows: the first lines (the head) as they
/// come, the last lines (the tail) when the stage ends. A line counts its bytes plus one for its
/// newline.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OutputCaps {
    pub(crate) head_lines: usize,
    pub(crate) head_bytes: usize,
    pub(crate) tail_lines: usize,
    pub(crate) tail_bytes: usize,
}

impl OutputCaps {
    /// 10,000 lines or 1 MiB each, whichever comes first.
    pub(crate) const DEFAULT: Self = Self {
        head_lines: 10_000,
        head_bytes: 1024 * 1024,
        tail_lines: 10_000,
        tail_bytes: 1024 * 1024,
    };
}

/// One stage's output beyond what was sent: the ring of its last lines and what fell out of it.
#[derive(Debug, Default)]
struct StageOutput {
    head_lines: usize,
    head_bytes: usize,
    /// Once a line did not fit the head, every later line goes to the tail: order is kept.
    head_full: bool,
    tail: VecDeque<(Stream, Vec<u8>)>,
    tail_bytes: usize,
    cut_lines: u64,
    cut_bytes: u64,
}

impl StageOutput {
    /// Whether `line` belongs to the head (to be sent now); else it is kept in the tail, whose
    /// oldest lines are cut to stay within the caps.
    fn head_or_keep(&mut self, caps: &OutputCaps, stream: Stream, line: &[u8]) -> bool {
        let cost = line.len() + 1;
        if !self.head_full
            && self.head_lines < caps.head_lines
            && self.head_bytes + cost <= caps.head_bytes
        {
            self.head_lines += 1;
            self.head_bytes += cost;
            return true;
        }
        self.head_full = true;
        self.tail.push_back((stream, line.to_vec()));
        self.tail_bytes += cost;
        while self.tail.len() > caps.tail_lines || self.tail_bytes > caps.tail_bytes {
            let Some((_, old)) = self.tail.pop_front() else {
                break;
            };
            self.tail_bytes -= old.len() + 1;
            self.cut_lines += 1;
            self.cut_bytes += old.len() as u64 + 1;
        }
        false
    }
}

/// The output state of every stage, shared by its sinks and the writer.
type Outputs = Arc<Mutex<HashMap<Arc<str>, Arc<Mutex<StageOutput>>>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The state is counters and a ring: still sound after a panic elsewhere.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the console and the events log say for a cut: `… N lines (M bytes) cut …`.
pub(crate) fn cut_message(lines: u64, bytes: u64) -> String {
    format!("… {lines} lines ({bytes} bytes) cut …")
}

/// Where a stage sends one-line status messages and its child's output lines.
#[derive(Clone)]
pub struct StatusSink {
    stage: Arc<str>,
    tx: Sender<Report>,
    output: Arc<Mutex<StageOutput>>,
    caps: OutputCaps,
}

impl std::fmt::Debug for StatusSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StatusSink({})", self.stage)
    }
}

impl StatusSink {
    /// A sink whose lines go nowhere: for a stage's parts driven outside a run (a forge opened
    /// by a test or a tool).
    pub fn discard(stage: &str) -> Self {
        let (tx, _) = channel();
        StatusSink {
            stage: stage.into(),
            tx,
            output: Arc::default(),
            caps: OutputCaps::DEFAULT,
        }
    }

    /// One status line: `restore: fresh review — no sealed conversation`.
    pub fn status(&self, message: impl Into<String>) {
        let _ = self.tx.send(Report::Event(Event::Status {
            stage: self.stage.to_string(),
            message: message.into(),
        }));
    }

    /// A retry of part of the stage's work.
    pub fn retry(&self, attempt: u32, reason: impl Into<String>) {
        let _ = self.tx.send(Report::Event(Event::Retry {
            stage: self.stage.to_string(),
            attempt,
            reason: reason.into(),
        }));
    }

    /// One line of a child's output, already redacted on its byte stream. Never waits: a line
    /// past the stage's head is kept in its tail instead of being sent.
    pub fn line(&self, stream: Stream, line: &[u8]) {
        if lock(&self.output).head_or_keep(&self.caps, stream, line) {
            let _ = self.tx.send(Report::Output {
                stage: self.stage.clone(),
                stream,
                text: String::from_utf8_lossy(line).into_owned(),
            });
        }
    }
}

/// How long the writer waits, once woken, for more to come before it writes what came.
const GATHER: Duration = Duration::from_millis(1);

/// The sending side, kept by the executor.
pub(crate) struct Reporter {
    tx: Sender<Report>,
    outputs: Outputs,
    caps: OutputCaps,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Reporter {
    /// Starts the writer thread. `events` is appended to; `None` logs nothing (no run directory).
    pub(crate) fn start(
        events: Option<PathBuf>,
        mode: ConsoleMode,
        platform: Option<std::sync::Arc<dyn crate::platform::Platform>>,
        exit_decided_after: bool,
        redactor: Redactor,
    ) -> std::io::Result<Self> {
        let file = match events {
            Some(p) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)?,
            ),
            None => None,
        };
        let console = Console::new(mode, platform).exit_decided_after(exit_decided_after);
        Self::with_console(file, console, redactor, OutputCaps::DEFAULT)
    }

    fn with_console(
        file: Option<File>,
        console: Console,
        redactor: Redactor,
        caps: OutputCaps,
    ) -> std::io::Result<Self> {
        let (tx, rx) = channel();
        let outputs = Outputs::default();
        let writer = Writer {
            file,
            seq: 0,
            console,
            redactor,
            outputs: outputs.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("reviewflow-report".into())
            .spawn(move || writer.run(rx))?;
        Ok(Self {
            tx,
            outputs,
            caps,
            thread: Some(thread),
        })
    }

    pub(crate) fn sink(&self, stage: &str) -> StatusSink {
        let stage: Arc<str> = stage.into();
        let output = lock(&self.outputs)
            .entry(stage.clone())
            .or_default()
            .clone();
        StatusSink {
            stage,
            tx: self.tx.clone(),
            output,
            caps: self.caps,
        }
    }

    pub(crate) fn event(&self, event: Event) {
        let _ = self.tx.send(Report::Event(event));
    }

    pub(crate) fn mask(&self, lines: Vec<String>) {
        let _ = self.tx.send(Report::Mask(lines));
    }

    /// Waits until everything sent so far is written and the log is synced.
    pub(crate) async fn flush(&self) {
        let (tx, rx) = channel();
        if self.tx.send(Report::Flush(tx)).is_ok() {
            let _ = tokio::task::spawn_blocking(move || rx.recv()).await;
        }
    }

    /// Writes what is left and stops the thread.
    pub(crate) async fn close(mut self) {
        self.flush().await;
        let thread = self.thread.take();
        drop(self);
        if let Some(t) = thread {
            let _ = tokio::task::spawn_blocking(move || t.join()).await;
        }
    }
}

/// The writer thread's state.
struct Writer {
    /// `None` without a run directory, or once a write failed (said once).
    file: Option<File>,
    seq: u64,
    console: Console,
    redactor: Redactor,
    outputs: Outputs,
}

impl Writer {
    fn run(mut self, rx: Receiver<Report>) {
        let tick = self
            .console
            .tick_interval()
            .unwrap_or(Duration::from_secs(3600));
        'run: loop {
            let report = match rx.recv_timeout(tick) {
                Ok(r) => r,
                Err(RecvTimeoutError::Timeout) => {
                    self.console.tick();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            };
            self.handle(report);
            // A sender wakes this thread only while it waits in `recv`: after a short pause,
            // what came in meanwhile (many stages report at once) is handled without a wake-up
            // each. The console and the log are that much later, never out of order.
            std::thread::sleep(GATHER);
            loop {
                match rx.try_recv() {
                    Ok(report) => self.handle(report),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => break 'run,
                }
            }
        }
        // Lines a leftover task of a stage sent after its end.
        let stages: Vec<String> = lock(&self.outputs).keys().map(|s| s.to_string()).collect();
        for stage in stages {
            self.end_output(&stage);
        }
        self.console.finish();
        self.sync();
    }

    fn handle(&mut self, report: Report) {
        match report {
            Report::Event(event) => {
                if let Event::StageEnd { stage, .. } = &event {
                    self.end_output(stage);
                }
                self.event(&event);
            }
            Report::Output {
                stage,
                stream,
                text,
            } => self.output(&stage, stream, text.as_bytes()),
            Report::Mask(lines) => self.console.mask(&lines),
            Report::Flush(done) => {
                self.console.flush();
                self.sync();
                let _ = done.send(());
            }
        }
    }

    fn event(&mut self, event: &Event) {
        self.log(event);
        self.seq += 1;
        self.console.event(event, &self.redactor);
    }

    /// Appends `event` to the log. A failed write is said once, and the log stops there, so that
    /// it stays a clean prefix of the run.
    fn log(&mut self, event: &Event) {
        let Some(f) = self.file.as_mut() else {
            return;
        };
        let line = EventLine {
            v: EVENTS_FORMAT_VERSION,
            seq: self.seq,
            ts: clock::now(),
            event: event.clone(),
        };
        let written = serde_json::to_vec(&line)
            .map_err(std::io::Error::other)
            .and_then(|json| {
                let mut bytes = self.redactor.redact(&json).into_owned();
                bytes.push(b'\n');
                // One write per line: a crash leaves at worst one torn last line, which readers
                // drop.
                f.write_all(&bytes)
            });
        if let Err(e) = written {
            self.file = None;
            self.console.event(
                &Event::Warning {
                    stage: None,
                    message: format!(
                        "events.jsonl can no longer be written ({e}): the events after this one are missing from it; manifest.json is the record of the run"
                    ),
                },
                &self.redactor,
            );
        }
    }

    fn sync(&mut self) {
        let Some(f) = self.file.as_mut() else {
            return;
        };
        if let Err(e) = f.sync_all() {
            self.console.event(
                &Event::Warning {
                    stage: None,
                    message: format!(
                        "events.jsonl could not be synced to disk ({e}): its last events may be lost on a crash"
                    ),
                },
                &self.redactor,
            );
        }
    }

    fn output(&mut self, stage: &str, stream: Stream, text: &[u8]) {
        let text = String::from_utf8_lossy(&self.redactor.redact(text)).into_owned();
        self.console.output(stage, stream, &text);
    }

    /// The end of `stage`'s output: what was cut (said, and logged), then its tail. The state
    /// starts afresh, for lines a leftover task may still send.
    fn end_output(&mut self, stage: &str) {
        let Some(state) = lock(&self.outputs).get(stage).cloned() else {
            return;
        };
        let ended = std::mem::take(&mut *lock(&state));
        if ended.cut_lines > 0 {
            self.event(&Event::Status {
                stage: stage.to_string(),
                message: cut_message(ended.cut_lines, ended.cut_bytes),
            });
        }
        for (stream, line) in ended.tail {
            self.output(stage, stream, &line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::console::Captured;

    const SMALL: OutputCaps = OutputCaps {
        head_lines: 3,
        head_bytes: 1000,
        tail_lines: 2,
        tail_bytes: 1000,
    };

    fn plain(file: Option<File>, caps: OutputCaps) -> (Reporter, Captured) {
        let (console, captured) = Console::captured(ConsoleMode::Plain);
        let reporter =
            Reporter::with_console(file, console, Redactor::empty(), caps).expect("a thread");
        (reporter, captured)
    }

    fn end(stage: &str) -> Event {
        Event::StageEnd {
            stage: stage.into(),
            outcome: crate::run::outcome::Outcome::Succeeded,
            duration_ms: 0,
            reason: None,
        }
    }

    #[tokio::test]
    async fn the_console_shows_the_head_the_cut_and_the_tail() {
        let (reporter, captured) = plain(None, SMALL);
        let sink = reporter.sink("loud");
        for i in 1..=10 {
            sink.line(Stream::Stdout, format!("line {i}").as_bytes());
        }
        drop(sink);
        reporter.event(end("loud"));
        reporter.close().await;
        insta::assert_snapshot!(captured.text(), @r"
        loud │ line 1
        loud │ line 2
        loud │ line 3
          loud: … 5 lines (35 bytes) cut …
        loud │ line 9
        loud │ line 10
        ✓ loud (0 ms)
        ");
    }

    #[tokio::test]
    async fn the_byte_caps_hold_too() {
        let caps = OutputCaps {
            head_lines: 100,
            head_bytes: 10,
            tail_lines: 100,
            tail_bytes: 10,
        };
        let (reporter, captured) = plain(None, caps);
        let sink = reporter.sink("s");
        for line in ["aaaa", "bbbb", "cccc", "dddd", "eeee", "ffff"] {
            sink.line(Stream::Stderr, line.as_bytes());
        }
        drop(sink);
        reporter.event(end("s"));
        reporter.close().await;
        insta::assert_snapshot!(captured.text(), @r"
        s │ aaaa
        s │ bbbb
          s: … 2 lines (10 bytes) cut …
        s │ eeee
        s │ ffff
        ✓ s (0 ms)
        ");
    }

    #[tokio::test]
    async fn output_within_the_caps_is_shown_whole() {
        let (reporter, captured) = plain(None, SMALL);
        let sink = reporter.sink("quiet");
        for i in 1..=5 {
            sink.line(Stream::Stdout, format!("{i}").as_bytes());
        }
        drop(sink);
        reporter.event(end("quiet"));
        reporter.close().await;
        let text = captured.text();
        assert!(!text.contains("cut"), "{text}");
        assert_eq!(text.matches("quiet │").count(), 5, "{text}");
    }

    #[tokio::test]
    async fn a_failed_write_of_the_events_log_is_said() {
        let full = std::fs::OpenOptions::new()
            .append(true)
            .open("/dev/full")
            .expect("/dev/full");
        let (reporter, captured) = plain(Some(full), OutputCaps::DEFAULT);
        reporter.event(Event::StageStart { stage: "a".into() });
        reporter.event(end("a"));
        reporter.close().await;
        let text = captured.text();
        assert_eq!(
            text.matches("warning: events.jsonl can no longer be written")
                .count(),
            1,
            "{text}"
        );
        assert!(text.contains("✓ a"), "the run goes on: {text}");
    }
}
