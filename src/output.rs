//! Where and how the CLI writes: colour decisions, loading files, exit codes.

use std::io::IsTerminal;
use std::path::Path;

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

/// Writes `text` to stdout. A reader that stopped reading (`reviewflow check … | head`) is no
/// reason to panic: it has what it wanted.
pub fn print_stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Reads and compiles one file. An unreadable file is reported here (there is no source to
/// point into); the caller reports syntax errors.
pub fn load(path: &Path, registry: &Registry) -> Result<Compiled, Loaded> {
    let name = path.display().to_string();
    let limits = Limits::default();
    // Refuse what is far too large before reading it whole.
    if let Ok(meta) = std::fs::metadata(path)
        && meta.len() > limits.max_bytes as u64 * 2
    {
        return Err(Loaded::Unreadable(format!(
            "{name}: the file is {} bytes; a pipeline may be at most {}",
            meta.len(),
            limits.max_bytes
        )));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| Loaded::Unreadable(format!("{name}: cannot read the file: {e}")))?;
    let source = decode(&name, bytes).map_err(Loaded::Unusable)?;
    compile(source, registry, &limits).map_err(Loaded::Unusable)
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
            eprintln!("error: {}", report::terminal_text(&message));
            None
        }
        Err(Loaded::Unusable(u)) => {
            eprint!("{}", report::render_human(&u.source, &u.findings, style));
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
