//! What a person sees: one status line per stage event; on a terminal, a live view of the running
//! stages below them; on a platform (docs/platforms.md), the secrets masked first, then one block
//! per stage holding every line of that stage, and annotations for failures, fallbacks and
//! warnings, each written as the platform reads it (docs/executor.md, "What a person sees").
//! Runs on the reporter's thread only.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::events::Event;
use super::outcome::Outcome;
use crate::exec::process::Stream;
use crate::exec::redact::Redactor;
use crate::hex::encode as hex;
use crate::platform::{Level, Platform};
use crate::render::escape;

/// How to show the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsoleMode {
    /// Nothing (library use, benchmarks).
    Quiet,
    /// Plain lines on stderr.
    Plain,
    /// Plain lines and a live view of running stages, on a terminal (stderr).
    Live,
    /// The console of the run's platform, on stdout (`RunOptions::platform`); `Plain` when
    /// the run names none.
    Platform,
    /// `Plain`, with the outcome of each line in colour (`--color always` on a pipe).
    PlainColor,
    /// `Live`, with the outcome of each line in colour.
    LiveColor,
}

impl ConsoleMode {
    /// This mode with colour (`Plain` → `PlainColor`, `Live` → `LiveColor`); the others stay.
    pub fn with_color(self) -> Self {
        match self {
            Self::Plain => Self::PlainColor,
            Self::Live => Self::LiveColor,
            other => other,
        }
    }
}

/// The prefix of a status line a stage marks as a warning (`cx.status.status("warning: …")`).
pub(crate) const WARNING_PREFIX: &str = "warning: ";

pub(crate) struct Console {
    /// `Quiet`, `Plain`, `Live` or `Platform`: the colour is `color`.
    mode: ConsoleMode,
    /// Who writes the blocks, annotations and masks in `Platform` mode.
    platform: Option<Arc<dyn Platform>>,
    color: bool,
    running: BTreeMap<String, Instant>,
    /// Lines drawn by the live view, to erase before the next write.
    drawn: usize,
    /// Platform: each stage's lines (its start line, status and retry lines, its child's output),
    /// in the order they came, printed inside its group when it ends. Redacted.
    buffered: BTreeMap<String, Vec<String>>,
    /// Platform: the warnings a stage marked itself, annotated right after its group. Redacted.
    warnings: BTreeMap<String, Vec<String>>,
    target: Target,
    /// The exit is decided after the run: the end line does not state one.
    exit_after: bool,
}

impl Console {
    pub(crate) fn new(mode: ConsoleMode, platform: Option<Arc<dyn Platform>>) -> Self {
        let (mode, color) = match mode {
            ConsoleMode::PlainColor => (ConsoleMode::Plain, true),
            ConsoleMode::LiveColor => (ConsoleMode::Live, true),
            ConsoleMode::Platform if platform.is_none() => (ConsoleMode::Plain, false),
            other => (other, false),
        };
        Self {
            mode,
            platform,
            color,
            running: BTreeMap::new(),
            drawn: 0,
            buffered: BTreeMap::new(),
            warnings: BTreeMap::new(),
            target: Target::Std,
            exit_after: false,
        }
    }

    /// The end line says how the run ended, not the exit: the command decides it after the run
    /// (`run --fail-on`) and states it on its own last line.
    pub(crate) fn exit_decided_after(mut self, yes: bool) -> Self {
        self.exit_after = yes;
        self
    }

    /// The line of `event`, the end line without its exit when that is decided after the run.
    fn line_of(&self, event: &Event) -> Option<String> {
        match event {
            Event::RunEnd { status, .. } if self.exit_after => {
                Some(format!("run {}", status.name()))
            }
            _ => status_line(event),
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
            ConsoleMode::Platform => self.platform_event(event, redactor),
            ConsoleMode::Plain
            | ConsoleMode::Live
            | ConsoleMode::PlainColor
            | ConsoleMode::LiveColor => {
                let Some(line) = self.line_of(event) else {
                    self.redraw();
                    return;
                };
                let mut line = redact(redactor, &line);
                if self.color {
                    line = colored(event, &line);
                }
                if self.mode == ConsoleMode::Plain {
                    self.print_err(&format!("{line}\n"));
                } else {
                    self.above(&line);
                }
            }
        }
    }

    /// Platform: a stage's lines are kept until it ends, then printed as one block (then its
    /// annotations), so parallel stages never interleave. Run-level lines are printed as they
    /// come; run-level warnings and errors are annotations.
    fn platform_event(&mut self, event: &Event, redactor: &Redactor) {
        let Some(platform) = self.platform.clone() else {
            return;
        };
        let annotation =
            |level, title: Option<&str>, message: &str| platform.annotation(level, title, message);
        match event {
            Event::StageStart { stage } | Event::Retry { stage, .. } => {
                if let Some(line) = self.line_of(event) {
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
                if let Some(line) = self.line_of(event) {
                    self.keep(stage, redact(redactor, &line));
                }
            }
            Event::StageEnd {
                stage,
                outcome,
                reason,
                ..
            } => {
                let end = redact(redactor, &self.line_of(event).unwrap_or_default());
                let mut body = self.buffered.remove(stage).unwrap_or_default();
                body.push(end.clone());
                let mut out = platform.block(&end, &body);
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
                self.print_out(&out);
            }
            Event::Warning { stage, message } => self.print_out(&annotation(
                Level::Warning,
                stage.as_deref(),
                &redact(redactor, message),
            )),
            Event::Error { stage, message } => self.print_out(&annotation(
                Level::Error,
                stage.as_deref(),
                &redact(redactor, message),
            )),
            _ => {
                if let Some(line) = self.line_of(event) {
                    // Run-level lines start with fixed words; a line break in a name taken from
                    // the pipeline file must not start a command: the platform keeps it one line.
                    self.print_out(&platform.line(&redact(redactor, &line)));
                }
            }
        }
    }

    /// Platform: one more line of `stage`'s block.
    fn keep(&mut self, stage: &str, line: String) {
        self.buffered
            .entry(stage.to_string())
            .or_default()
            .push(line);
    }

    /// A line of a child's output, redacted by the reporter; escaped here.
    pub(crate) fn output(&mut self, stage: &str, stream: Stream, text: &str) {
        let _ = stream;
        let line = format!("{} │ {}", escape::escaped(stage), escape::escaped(text));
        match self.mode {
            ConsoleMode::Quiet => {}
            // Kept under the stage's own name, the key its end is found by.
            ConsoleMode::Platform => self.keep(stage, line),
            ConsoleMode::Plain | ConsoleMode::PlainColor => self.print_err(&format!("{line}\n")),
            ConsoleMode::Live | ConsoleMode::LiveColor => self.above(&line),
        }
    }

    /// The platform's masks of `lines`, before anything else is printed.
    pub(crate) fn mask(&mut self, lines: &[String]) {
        let Some(platform) = self
            .platform
            .clone()
            .filter(|_| self.mode == ConsoleMode::Platform)
        else {
            return;
        };
        self.print_out(&platform.mask(lines));
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
        // Platform: lines that came after their stage's block was printed (nothing the executor
        // sends; a leftover task of a stage could), in a block of their own.
        let mut warnings = std::mem::take(&mut self.warnings);
        let buffered = std::mem::take(&mut self.buffered);
        if let Some(platform) = self.platform.clone() {
            for (stage, lines) in buffered {
                let title = format!("{} (after it ended)", escape::escaped(&stage));
                let mut out = platform.block(&title, &lines);
                for w in warnings.remove(&stage).unwrap_or_default() {
                    out.push_str(&platform.annotation(Level::Warning, Some(&stage), &w));
                }
                self.print_out(&out);
            }
            for (stage, lines) in warnings {
                for w in lines {
                    self.print_out(&platform.annotation(Level::Warning, Some(&stage), &w));
                }
            }
        }
        self.flush();
    }

    /// Live view: erase it, print `line`, draw it again.
    fn above(&mut self, line: &str) {
        self.erase();
        self.print_err(&format!("{line}\n"));
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
            self.print_err(&format!("\x1b[{}A\x1b[J", self.drawn));
            self.drawn = 0;
        }
    }

    fn draw(&mut self) {
        if self.mode != ConsoleMode::Live || self.running.is_empty() {
            return;
        }
        // Stage names come from the pipeline: escaped like every line above the view.
        let named: Vec<(String, Duration)> = self
            .running
            .iter()
            .map(|(stage, started)| (escape::escaped(stage), started.elapsed()))
            .collect();
        let running: Vec<(&str, Duration)> = named.iter().map(|(s, d)| (s.as_str(), *d)).collect();
        let (width, height) = terminal_size();
        let lines = live_view(&running, width, height);
        let mut out = String::new();
        for line in &lines {
            out.push_str(line);
            out.push('\n');
        }
        self.drawn = lines.len();
        self.print_err(&out);
    }
}

/// The live view of the running stages, for a terminal of `width` columns and `height` rows: one
/// line per stage (`  ⋯ review 3.2 s`), each cut to `width` columns by display width (so that no
/// line wraps and the view can be erased by counting its lines). It takes at most half the rows
/// (at least one): when the stages do not fit, the last line says how many more run
/// (`  +3 more running`).
pub(crate) fn live_view(running: &[(&str, Duration)], width: usize, height: usize) -> Vec<String> {
    if running.is_empty() {
        return Vec::new();
    }
    let width = width.max(1);
    let rows = (height / 2).max(1);
    let line = |(stage, elapsed): &(&str, Duration)| format!("  ⋯ {stage} {}", human(*elapsed));
    let lines: Vec<String> = if running.len() <= rows {
        running.iter().map(line).collect()
    } else if rows == 1 {
        vec![format!("  ⋯ {} stages running", running.len())]
    } else {
        let shown = rows - 1;
        let mut v: Vec<String> = running[..shown].iter().map(line).collect();
        v.push(format!("  +{} more running", running.len() - shown));
        v
    };
    lines.iter().map(|l| cut_to_width(l, width)).collect()
}

/// `text` cut to at most `width` columns (display width), with `…` in the last column when cut.
pub(crate) fn cut_to_width(text: &str, width: usize) -> String {
    if display_width(text) <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = char_width(c);
        if used + w > width - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// Columns `text` takes on a terminal.
pub(crate) fn display_width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

/// Columns a character takes: 0 for control and combining characters, 2 for East Asian wide and
/// full-width characters and emoji, else 1 (a close approximation of `wcwidth`).
fn char_width(c: char) -> usize {
    let u = c as u32;
    match u {
        0..0x20 | 0x7f..0xa0 => 0,
        0x300..=0x36f | 0x200b..=0x200f | 0xfe00..=0xfe0f | 0x20d0..=0x20ff => 0,
        0x1100..=0x115f
        | 0x2e80..=0x303e
        | 0x3041..=0x33ff
        | 0x3400..=0x4dbf
        | 0x4e00..=0x9fff
        | 0xa000..=0xa4cf
        | 0xac00..=0xd7a3
        | 0xf900..=0xfaff
        | 0xfe30..=0xfe4f
        | 0xff00..=0xff60
        | 0xffe0..=0xffe6
        | 0x1f300..=0x1f64f
        | 0x1f900..=0x1f9ff
        | 0x20000..=0x3fffd => 2,
        _ => 1,
    }
}

/// The size of the terminal on stderr (columns, rows); 80 × 24 when it cannot be read.
fn terminal_size() -> (usize, usize) {
    match rustix::termios::tcgetwinsize(std::io::stderr()) {
        Ok(ws) if ws.ws_col > 0 && ws.ws_row > 0 => (ws.ws_col as usize, ws.ws_row as usize),
        _ => (80, 24),
    }
}

/// `line` (the status line of `event`) in the colour of what it says: green for success, red for
/// a failure or a cancellation, yellow for a fallback or a warning, dim for a stage that did not
/// run, bold for the run's end.
fn colored(event: &Event, line: &str) -> String {
    let code = match event {
        Event::StageEnd { outcome, .. } => match outcome {
            Outcome::Succeeded | Outcome::Reused => "32",
            Outcome::FellBack => "33",
            Outcome::Failed | Outcome::Cancelled => "31",
            Outcome::Skipped | Outcome::NotRun => "2",
        },
        Event::Warning { .. } => "33",
        Event::Error { .. } => "1;31",
        Event::Status { message, .. } if message.starts_with(WARNING_PREFIX) => "33",
        Event::RunEnd { exit_code: 0, .. } => "1;32",
        Event::Stop { .. } => "1",
        Event::RunEnd { .. } | Event::Cancel { .. } => "1;31",
        _ => return line.to_string(),
    };
    format!("\x1b[{code}m{line}\x1b[0m")
}

/// The status line of an event, if it has one.
pub(crate) fn status_line(event: &Event) -> Option<String> {
    Some(match event {
        Event::RunStart {
            run_id,
            pipeline,
            isolation,
            ..
        } => format!(
            "run {run_id}{}{}",
            pipeline
                .as_ref()
                .map(|p| format!(" of pipeline `{p}`"))
                .unwrap_or_default(),
            if isolation.is_empty() {
                String::new()
            } else {
                format!("\nisolation held: {}", isolation.join(", "))
            }
        ),
        Event::StageStart { stage } => format!("▶ {stage}"),
        Event::StageEnd {
            stage,
            outcome,
            duration_ms,
            reason,
        } => {
            let d = human(Duration::from_millis(*duration_ms));
            // A reason that only repeats the outcome (`cancelled`) is said once.
            let why = reason
                .as_ref()
                .filter(|r| {
                    let r = r.trim();
                    r != outcome.name() && r != outcome.name().replace('-', " ")
                })
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
        Event::Error { stage, message } => match stage {
            Some(s) => format!("error: {s}: {message}"),
            None => format!("error: {message}"),
        },
        // Said once, with the way to go on anyway.
        Event::Stop { stage, reason } => {
            format!(
                "■ {stage} stopped the run: {reason} — to run it anyway: reviewflow run --force"
            )
        }
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

/// `text` as the console shows it: redacted, then escaped for a terminal (names come from the
/// pipeline, reasons and lines from children: no control character of theirs is written as one;
/// the console's own colour and cursor codes are added after).
fn redact(redactor: &Redactor, text: &str) -> String {
    escape::escaped(&String::from_utf8_lossy(&redactor.redact(text.as_bytes())))
}

/// `n` random bytes from the kernel (`getrandom`), in hex. Should the kernel refuse, they derive
/// from the time and the process id, and a warning says so, once (a run id or a marker needs to
/// be unique; a platform's token that guards a block of a child's lines is drawn after the
/// child has ended).
pub fn random_hex(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    if let Err(e) = getrandom::fill(&mut bytes) {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(
                err,
                "warning: the kernel gave no random bytes ({e}): run ids, stage markers and tokens derive from the time and the process id"
            );
        });
        let seed = format!(
            "{:?}{}{n}",
            std::time::SystemTime::now(),
            std::process::id()
        );
        let d = super::digest::sha256(seed.as_bytes());
        for (b, s) in bytes.iter_mut().zip(d.bytes().cycle()) {
            *b = s;
        }
    }
    hex(&bytes)
}

/// Where the console writes: the process's stdout and stderr, or (tests) one buffer for both.
enum Target {
    Std,
    #[cfg(test)]
    Captured(Captured),
}

/// What a console made by [`Console::captured`] printed, stdout and stderr in one.
#[cfg(test)]
#[derive(Clone, Default)]
pub(crate) struct Captured(std::sync::Arc<std::sync::Mutex<String>>);

#[cfg(test)]
impl Captured {
    pub(crate) fn text(&self) -> String {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn push(&self, s: &str) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_str(s);
    }
}

impl Console {
    /// A console that prints into a buffer, for tests.
    #[cfg(test)]
    pub(crate) fn captured(mode: ConsoleMode) -> (Self, Captured) {
        let captured = Captured::default();
        let mut console = Self::new(mode, None);
        console.target = Target::Captured(captured.clone());
        (console, captured)
    }

    fn print_out(&self, s: &str) {
        match &self.target {
            Target::Std => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(s.as_bytes());
                let _ = out.flush();
            }
            #[cfg(test)]
            Target::Captured(c) => c.push(s),
        }
    }

    fn print_err(&self, s: &str) {
        match &self.target {
            Target::Std => {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(s.as_bytes());
            }
            #[cfg(test)]
            Target::Captured(c) => c.push(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn view(running: &[(&str, Duration)], width: usize, height: usize) -> String {
        let lines = live_view(running, width, height);
        for l in &lines {
            assert!(display_width(l) <= width, "{l:?} is wider than {width}");
        }
        lines
            .iter()
            .map(|l| format!("[{l}]"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_live_view_fits_a_wide_terminal_whole() {
        let running = [("gather", secs(1)), ("review", secs(75))];
        insta::assert_snapshot!(view(&running, 80, 24), @r"
        [  ⋯ gather 1.0 s]
        [  ⋯ review 1 m 15 s]
        ");
    }

    #[test]
    fn the_live_view_cuts_lines_to_a_narrow_terminal() {
        let running = [
            ("a-stage-with-a-rather-long-name-indeed", secs(3)),
            ("short", secs(2)),
        ];
        insta::assert_snapshot!(view(&running, 20, 24), @r"
        [  ⋯ a-stage-with-a-…]
        [  ⋯ short 2.0 s]
        ");
    }

    #[test]
    fn the_live_view_cuts_by_display_width() {
        let running = [("レビュー段階", secs(3))];
        // 4 columns of prefix, then 2 columns a character: 5 characters fit 14 columns with `…`.
        let lines = live_view(&running, 14, 24);
        assert_eq!(lines, ["  ⋯ レビュー…"]);
        assert!(display_width(&lines[0]) <= 14);
    }

    #[test]
    fn the_live_view_collapses_the_stages_that_do_not_fit() {
        let running: Vec<(String, Duration)> =
            (1..=8).map(|i| (format!("stage-{i}"), secs(i))).collect();
        let running: Vec<(&str, Duration)> =
            running.iter().map(|(s, d)| (s.as_str(), *d)).collect();
        insta::assert_snapshot!(view(&running, 40, 8), @r"
        [  ⋯ stage-1 1.0 s]
        [  ⋯ stage-2 2.0 s]
        [  ⋯ stage-3 3.0 s]
        [  +5 more running]
        ");
        insta::assert_snapshot!(view(&running, 40, 3), @"[  ⋯ 8 stages running]");
        assert_eq!(live_view(&running, 40, 1).len(), 1);
        assert!(live_view(&[], 40, 8).is_empty());
    }

    #[test]
    fn a_reason_that_repeats_the_outcome_is_said_once() {
        let end = |outcome, reason: &str| {
            status_line(&Event::StageEnd {
                stage: "review".into(),
                outcome,
                duration_ms: 1200,
                reason: Some(reason.into()),
            })
            .expect("a line")
        };
        assert_eq!(
            end(Outcome::Cancelled, "cancelled"),
            "■ review: cancelled (1.2 s)"
        );
        assert_eq!(
            end(Outcome::Cancelled, "timed out after 5 s"),
            "■ review: cancelled — timed out after 5 s (1.2 s)"
        );
    }
}
