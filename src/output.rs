//! Where and how the CLI writes: colour decisions, loading files, exit codes.

use std::io::IsTerminal;
use std::path::Path;

use reviewflow_engine::atomic::atomic_write_beneath;
use reviewflow_engine::beneath::{self, Folder, Why};
use reviewflow_engine::report::{self, Style};
use reviewflow_engine::syntax::Limits;
use reviewflow_engine::{Compiled, Registry, Unusable, compile, decode};

use crate::cli::Color;

pub const EXIT_OK: u8 = 0;
pub const EXIT_FINDINGS: u8 = 1;
pub const EXIT_UNUSABLE: u8 = 2;

/// The one colour rule of every command (`check`, `graph`, `run`), for what goes to stderr.
pub fn style(color: Color) -> Style {
    decide(
        color,
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    )
}

/// `--color always` colours, `never` does not; `auto` colours only on a terminal and never with
/// `NO_COLOR` set to a non-empty value (no-color.org: an explicit `--color always` wins over it).
pub fn decide(color: Color, terminal: bool, no_color: Option<&std::ffi::OsStr>) -> Style {
    let no_color = no_color.is_some_and(|v| !v.is_empty());
    match color {
        Color::Always => Style::Color,
        Color::Never => Style::Plain,
        Color::Auto if terminal && !no_color => Style::Color,
        Color::Auto => Style::Plain,
    }
}

/// Writes `text` to stdout. A reader that stopped reading (`reviewflow schema | head`) is no
/// reason to panic, nor to say anything: it has what it wanted, and the command ends as it would
/// have (as ripgrep does).
pub fn print_stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Writes `text` to stderr as it is; a closed stderr is ignored (there is nowhere left to say
/// it). Only for text a renderer escaped itself, colour and all (`report::render_human`);
/// everything else goes through [`errln!`] or [`err!`].
pub fn print_stderr(text: &str) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// What the CLI says on stderr, made safe for a terminal: a message may hold a path, an
/// argument or a name from a pipeline, and none of their control characters is written as one.
pub fn say(text: &str) {
    print_stderr(&report::terminal_text(text));
}

/// `eprintln!`, escaped ([`say`]), and never a panic on a closed stderr.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::say(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use errln;

/// `eprint!`, escaped ([`say`]), and never a panic on a closed stderr.
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::output::say(&format!($($arg)*))
    };
}
pub(crate) use err;

/// Reads and compiles the file a person named (the reader's rule for named paths:
/// [`Folder::named`]). An unreadable file is reported here (there is no source to point into);
/// the caller reports syntax errors.
pub fn load(path: &Path, registry: &Registry) -> Result<Compiled, Loaded> {
    let name = path.display().to_string();
    let (base, rel) = Folder::named(path)
        .map_err(|e| Loaded::Unreadable(format!("{name}: cannot read the file: {e}")))?;
    load_beneath(&base, &rel, &name, registry)
}

/// Reads and compiles the file `rel` beneath `base` (named `name` in messages): a regular file,
/// no link followed below `base`, a FIFO or device refused without being opened, and at most
/// twice the parser's limit read (the parser reports a file between the two, pointing into it).
pub fn load_beneath(
    base: &Folder,
    rel: &Path,
    name: &str,
    registry: &Registry,
) -> Result<Compiled, Loaded> {
    let limits = Limits::default();
    let bound = limits.max_bytes as u64 * 2;
    let bytes = base
        .file(rel)
        .and_then(|file| reviewflow_engine::bounded::read_bounded(file, bound))
        .map_err(|e| {
            let why = unreadable(&e, &base.path().join(rel), bound, limits.max_bytes as u64);
            Loaded::Unreadable(format!("{name}: cannot read the file: {why}"))
        })?;
    let source = decode(name, bytes).map_err(Loaded::Unusable)?;
    compile(source, registry, &limits).map_err(Loaded::Unusable)
}

/// Why the pipeline at `at` cannot be read, in words for its reader.
fn unreadable(e: &std::io::Error, at: &Path, bound: u64, max: u64) -> String {
    if e.kind() == std::io::ErrorKind::FileTooLarge {
        return format!(
            "it is larger than {}; a pipeline may be at most {}",
            reviewflow_engine::bounded::size_text(bound),
            reviewflow_engine::bounded::size_text(max)
        );
    }
    match beneath::refused(e) {
        // The file itself; a folder on the way is named by the refusal.
        Some(r) if r.path == at => match r.why {
            Why::Link => "it is a symbolic link: reviewflow follows no link below the working \
                          folder (name the file it points to)"
                .into(),
            Why::Changed => "it changed while it was read".into(),
            _ => "it is not a regular file (a FIFO, socket, device or folder)".into(),
        },
        Some(r) => r.to_string(),
        None => e.to_string(),
    }
}

/// Writes `bytes` to the file a person named (`--out`), atomically, by the reader's rule for
/// named paths ([`Folder::named`]): no link at any component below the working folder, and only
/// a regular file is replaced (a link, FIFO, device or folder there is refused). The folders on
/// the way must exist.
pub fn write_named(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", path.display());
    let (base, rel) = Folder::named(path).map_err(|e| fail(&e))?;
    let Some(name) = rel.file_name() else {
        return Err(fail(&"not a file name"));
    };
    let dir = base
        .folder(rel.parent().unwrap_or(Path::new("")))
        .map_err(|e| fail(&e))?;
    atomic_write_beneath(&dir, name, bytes).map_err(|e| e.to_string())
}

pub enum Loaded {
    Unreadable(String),
    Unusable(Unusable),
}

/// [`load`], with what makes the file unusable printed to stderr; `None` then (exit 2).
pub fn load_or_report(path: &Path, registry: &Registry, style: Style) -> Option<Compiled> {
    match load(path, registry) {
        Ok(c) => Some(c),
        Err(Loaded::Unreadable(message)) => {
            errln!("error: {}", report::terminal_text(&message));
            None
        }
        Err(Loaded::Unusable(u)) => {
            print_stderr(&report::render_human(&u.source, &u.findings, style));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn one_colour_rule_no_color_yields_to_an_explicit_always() {
        let set = Some(OsStr::new("1"));
        let empty = Some(OsStr::new(""));
        assert_eq!(decide(Color::Always, false, set), Style::Color);
        assert_eq!(decide(Color::Never, true, None), Style::Plain);
        assert_eq!(decide(Color::Auto, true, None), Style::Color);
        assert_eq!(decide(Color::Auto, true, set), Style::Plain);
        // An empty NO_COLOR is not set (no-color.org).
        assert_eq!(decide(Color::Auto, true, empty), Style::Color);
        assert_eq!(decide(Color::Auto, false, None), Style::Plain);
    }
}
