//! What a person sees: one status line per stage event; on a terminal, a live view of the running
//! stages below them; under GitHub Actions, `::add-mask::` first, then one `::group::` per stage
//! holding every line of that stage, and annotations (`::error::`, `::warning::`) for failures,
//! fallbacks and warnings (docs/executor.md, "What a person sees").
//! Runs on the reporter's thread only.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::{Duration, Instant};

use super::events::Event;
use super::github::{Level, annotation, group};
use super::outcome::Outcome;
use super::value::hex;
use crate::exec::process::Stream;
use crate::exec::redact::Redactor;
use crate::github::escape_message;

/// How to show the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsoleMode {
    /// Nothing (library use, benchmarks).
    Quiet,
    /// Plain lines on stderr.
    Plain,
    /// Plain lines and a live view of running stages, on a terminal (stderr).
    Live,
    /// GitHub Actions workflow commands on stdout.
    GitHub,
}

/// The prefix of a status line a stage marks as a warning (`cx.status.status("warning: …")`).
pub(crate) const WARNING_PREFIX: &str = "warning: ";

pub(crate) struct Console {
    mode: ConsoleMode,
    running: BTreeMap<String, Instant>,
    /// Lines drawn by the live view, to erase before the next write.
    drawn: usize,
    /// GitHub: each stage's lines (its start line, status and retry lines, its child's output),
    /// in the order they came, printed inside its group when it ends. Redacted.
    buffered: BTreeMap<String, Vec<String>>,
    /// GitHub: the warnings a stage marked itself, annotated right after its group. Redacted.
    warnings: BTreeMap<String, Vec<String>>,
}

impl Console {
    pub(crate) fn new(mode: ConsoleMode) -> Self {
        Self {
            mode,
            running: BTreeMap::new(),
            drawn: 0,
            buffered: BTreeMap::new(),
            warnings: BTreeMap::new(),
        }
    }

    pub(crate) fn tick_interval(&self) -> Option<Duration> {
        (self.mode == ConsoleMode::Live).then(|| Duration::from_millis(250))
    }

    pub(crate) fn event(&mut self, event: &Event, redactor: &Redactor) {
        match event {
            Event::StageStart { stage } => {
                self.running.insert(stage.clone(), Instant::now());
            }
            Event::StageEnd { stage, .. } => {
                self.running.remove(stage);
            }
            _ => {}
        }
        match self.mode {
            ConsoleMode::Quiet => {}
            ConsoleMode::GitHub => self.github_event(event, redactor),
            ConsoleMode::Plain | ConsoleMode::Live => {
                let Some(line) = status_line(event) else {
                    self.redraw();
                    return;
                };
                let line = redact(redactor, &line);
                if self.mode == ConsoleMode::Plain {
                    print_err(&format!("{line}\n"));
                } else {
                    self.above(&line);
                }
            }
        }
    }

    /// GitHub Actions: a stage's lines are kept until it ends, then printed as one block (its
    /// group, then its annotations), so parallel stages never interleave. Run-level lines are
    /// printed as they come; run-level warnings are `::warning::` annotations.
    fn github_event(&mut self, event: &Event, redactor: &Redactor) {
        match event {
            Event::StageStart { stage } | Event::Retry { stage, .. } => {
                if let Some(line) = status_line(event) {
                    self.keep(stage, redact(redactor, &line));
                }
            }
            Event::Status { stage, message } => {
                if let Some(warning) = message.strip_prefix(WARNING_PREFIX) {
                    self.warnings
                        .entry(stage.clone())
                        .or_default()
                        .push(redact(redactor, warning));
                }
                if let Some(line) = status_line(event) {
                    self.keep(stage, redact(redactor, &line));
                }
            }
            Event::StageEnd {
                stage,
                outcome,
                reason,
                ..
            } => {
                let end = redact(redactor, &status_line(event).unwrap_or_default());
                let mut body = self.buffered.remove(stage).unwrap_or_default();
                body.push(end.clone());
                let mut out = group(&end, &body, &fresh_token());
                for w in self.warnings.remove(stage).unwrap_or_default() {
                    out.push_str(&annotation(Level::Warning, Some(stage), &w));
                }
                let reason = reason.as_deref().map(|r| redact(redactor, r));
                match outcome {
                    Outcome::Failed => out.push_str(&annotation(
                        Level::Error,
                        Some(stage),
                        reason.as_deref().unwrap_or("failed"),
                    )),
                    Outcome::FellBack => out.push_str(&annotation(
                        Level::Warning,
                        Some(stage),
                        reason.as_deref().unwrap_or("fell back"),
                    )),
                    _ => {}
                }
                print_out(&out);
            }
            Event::Warning { stage, message } => print_out(&annotation(
                Level::Warning,
                stage.as_deref(),
                &redact(redactor, message),
            )),
            _ => {
                if let Some(line) = status_line(event) {
                    // Run-level lines start with fixed words, never `::`; a line break in a
                    // name taken from the pipeline file must not start a command either.
                    let line = redact(redactor, &line).replace(['\r', '\n'], " ");
                    print_out(&format!("{line}\n"));
                }
            }
        }
    }

    /// GitHub: one more line of `stage`'s group.
    fn keep(&mut self, stage: &str, line: String) {
        self.buffered
            .entry(stage.to_string())
            .or_default()
            .push(line);
    }

    pub(crate) fn output(&mut self, stage: &str, stream: Stream, text: &str) {
        let _ = stream;
        match self.mode {
            ConsoleMode::Quiet => {}
            ConsoleMode::GitHub => self.keep(stage, format!("{stage} │ {text}")),
            ConsoleMode::Plain => print_err(&format!("{stage} │ {text}\n")),
            ConsoleMode::Live => self.above(&format!("{stage} │ {text}")),
        }
    }

    /// `::add-mask::` for each line, before anything else is printed.
    pub(crate) fn mask(&mut self, lines: &[String]) {
        if self.mode != ConsoleMode::GitHub {
            return;
        }
        let mut out = String::new();
        for l in lines {
            out.push_str("::add-mask::");
            out.push_str(&escape_message(l));
            out.push('\n');
        }
        print_out(&out);
    }

    pub(crate) fn tick(&mut self) {
        self.redraw();
    }

    pub(crate) fn flush(&mut self) {
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
    }

    pub(crate) fn finish(&mut self) {
        if self.mode == ConsoleMode::Live {
            self.erase();
        }
        // GitHub: lines that came after their stage's group was printed (nothing the executor
        // sends; a leftover task of a stage could), in a group of their own.
        let mut warnings = std::mem::take(&mut self.warnings);
        for (stage, lines) in std::mem::take(&mut self.buffered) {
            let mut out = group(&format!("{stage} (after it ended)"), &lines, &fresh_token());
            for w in warnings.remove(&stage).unwrap_or_default() {
                out.push_str(&annotation(Level::Warning, Some(&stage), &w));
            }
            print_out(&out);
        }
        for (stage, lines) in warnings {
            for w in lines {
                print_out(&annotation(Level::Warning, Some(&stage), &w));
            }
        }
        self.flush();
    }

    /// Live view: erase it, print `line`, draw it again.
    fn above(&mut self, line: &str) {
        self.erase();
        print_err(&format!("{line}\n"));
        self.draw();
    }

    fn redraw(&mut self) {
        if self.mode == ConsoleMode::Live {
            self.erase();
            self.draw();
        }
    }

    fn erase(&mut self) {
        if self.drawn > 0 {
            print_err(&format!("\x1b[{}A\x1b[J", self.drawn));
            self.drawn = 0;
        }
    }

    fn draw(&mut self) {
        if self.mode != ConsoleMode::Live || self.running.is_empty() {
            return;
        }
        let mut out = String::new();
        for (stage, started) in &self.running {
            out.push_str(&format!("  ⋯ {stage} {}\n", human(started.elapsed())));
        }
        self.drawn = self.running.len();
        print_err(&out);
    }
}

/// The status line of an event, if it has one.
pub(crate) fn status_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::RunStart {
            run_id, pipeline, ..
        } => format!(
            "run {run_id}{}",
            pipeline
                .as_ref()
                .map(|p| format!(" of pipeline `{p}`"))
                .unwrap_or_default()
        ),
        Event::StageStart { stage } => format!("▶ {stage}"),
        Event::StageEnd {
            stage,
            outcome,
            duration_ms,
            reason,
        } => {
            let d = human(Duration::from_millis(*duration_ms));
            let why = reason
                .as_ref()
                .map(|r| format!(" — {r}"))
                .unwrap_or_default();
            match outcome {
                Outcome::Succeeded => format!("✓ {stage} ({d})"),
                Outcome::Reused => format!("↺ {stage}: reused{why}"),
                Outcome::FellBack => format!("⚠ {stage}: fell back{why} ({d})"),
                Outcome::Skipped => format!("↷ {stage}: skipped{why}"),
                Outcome::Failed => format!("✗ {stage}: failed{why} ({d})"),
                Outcome::Cancelled => format!("■ {stage}: cancelled{why} ({d})"),
                Outcome::NotRun => format!("· {stage}: not run{why}"),
            }
        }
        // The stage_end line carries the reason; these are for the log.
        Event::Fallback { .. } | Event::Skip { .. } | Event::Reuse { .. } => return None,
        Event::Retry {
            stage,
            attempt,
            reason,
        } => format!("  {stage}: retry {attempt} — {reason}"),
        Event::Status { stage, message } => format!("  {stage}: {message}"),
        Event::Warning { stage, message } => match stage {
            Some(s) => format!("warning: {s}: {message}"),
            None => format!("warning: {message}"),
        },
        Event::Cancel { signal, running } => format!(
            "received {signal}: stopping{}",
            if running.is_empty() {
                String::new()
            } else {
                format!(
                    " {} (SIGTERM, then SIGKILL after the grace period)",
                    running.join(", ")
                )
            }
        ),
        Event::ResumeLineage {
            parent,
            reused,
            model_changes,
            ..
        } => {
            let mut s = format!(
                "resuming run {parent}: {}",
                if reused.is_empty() {
                    "no stage reused".to_string()
                } else {
                    format!("reusing {}", reused.join(", "))
                }
            );
            for c in model_changes {
                s.push_str(&format!("; reviewer change admitted: {c}"));
            }
            s
        }
        Event::RunEnd { status, exit_code } => {
            format!("run {} (exit {exit_code})", status.name())
        }
    })
}

/// `350 ms`, `1.2 s`, `3 m 05 s`.
pub(crate) fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        let s = d.as_secs();
        format!("{} m {:02} s", s / 60, s % 60)
    }
}

fn redact(redactor: &Redactor, text: &str) -> String {
    String::from_utf8_lossy(&redactor.redact(text.as_bytes())).into_owned()
}

fn fresh_token() -> String {
    let mut bytes = [0u8; 16];
    let _ = getrandom_fill(&mut bytes);
    hex(&bytes)
}

/// Random bytes from the kernel; falls back to time and pid (the token only needs to be
/// unguessable by a child that has already exited).
fn getrandom_fill(buf: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read as _;
    match std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(buf)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
            let d = super::value::sha256(seed.as_bytes());
            for (b, s) in buf.iter_mut().zip(d.bytes().rev()) {
                *b = s;
            }
            Err(e)
        }
    }
}

pub(crate) fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    let _ = getrandom_fill(&mut bytes);
    hex(&bytes)
}

fn print_out(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(s.as_bytes());
    let _ = out.flush();
}

fn print_err(s: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(s.as_bytes());
}
