//! The one writer of the events log and the console: a dedicated thread fed by a channel, so no
//! runtime thread ever blocks on a terminal or a file, and lines of parallel stages never mix.
//! Every text passes the run's redactor here, whatever produced it.

use std::fs::File;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
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
    /// Lines for `::add-mask::` (GitHub Actions only), before anything else is printed.
    Mask(Vec<String>),
    /// Sync the events file, then answer.
    Flush(Sender<()>),
}

/// Where a stage sends one-line status messages and its child's output lines.
#[derive(Clone)]
pub struct StatusSink {
    stage: Arc<str>,
    tx: Sender<Report>,
}

impl std::fmt::Debug for StatusSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StatusSink({})", self.stage)
    }
}

impl StatusSink {
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

    /// One line of a child's output.
    pub fn line(&self, stream: Stream, line: &[u8]) {
        let _ = self.tx.send(Report::Output {
            stage: self.stage.clone(),
            stream,
            text: String::from_utf8_lossy(line).into_owned(),
        });
    }
}

/// The sending side, kept by the executor.
pub(crate) struct Reporter {
    tx: Sender<Report>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Reporter {
    /// Starts the writer thread. `events` is appended to; `None` logs nothing (no run directory).
    pub(crate) fn start(
        events: Option<PathBuf>,
        mode: ConsoleMode,
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
        let (tx, rx) = channel();
        let console = Console::new(mode);
        let thread = std::thread::Builder::new()
            .name("reviewflow-report".into())
            .spawn(move || writer(rx, file, console, redactor))?;
        Ok(Self {
            tx,
            thread: Some(thread),
        })
    }

    pub(crate) fn sink(&self, stage: &str) -> StatusSink {
        StatusSink {
            stage: stage.into(),
            tx: self.tx.clone(),
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

fn writer(rx: Receiver<Report>, mut file: Option<File>, mut console: Console, redactor: Redactor) {
    let mut seq = 0u64;
    let tick = console.tick_interval().unwrap_or(Duration::from_secs(3600));
    loop {
        let report = match rx.recv_timeout(tick) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => {
                console.tick();
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        };
        match report {
            Report::Event(event) => {
                if let Some(f) = file.as_mut() {
                    let line = EventLine {
                        v: EVENTS_FORMAT_VERSION,
                        seq,
                        ts: clock::now(),
                        event: event.clone(),
                    };
                    if let Ok(mut json) = serde_json::to_vec(&line) {
                        let mut bytes = redactor.redact(&json).into_owned();
                        bytes.push(b'\n');
                        // One write per line: a crash leaves at worst one torn last line,
                        // which readers drop.
                        let _ = f.write_all(&bytes);
                        json.clear();
                    }
                }
                seq += 1;
                console.event(&event, &redactor);
            }
            Report::Output {
                stage,
                stream,
                text,
            } => {
                let text = String::from_utf8_lossy(&redactor.redact(text.as_bytes())).into_owned();
                console.output(&stage, stream, &text);
            }
            Report::Mask(lines) => console.mask(&lines),
            Report::Flush(done) => {
                console.flush();
                if let Some(f) = file.as_mut() {
                    let _ = f.sync_all();
                }
                let _ = done.send(());
            }
        }
    }
    console.finish();
    if let Some(f) = file.as_mut() {
        let _ = f.sync_all();
    }
}
