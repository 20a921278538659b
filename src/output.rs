//! Where and how the CLI writes: colour decisions, loading files, exit codes.

use std::io::IsTerminal;
use std::path::Path;

use reviewflow_engine::report::Style;
use reviewflow_engine::syntax::Limits;
use reviewflow_engine::{Compiled, Registry, Unusable, compile, decode};

use crate::cli::Color;

pub const EXIT_OK: u8 = 0;
pub const EXIT_FINDINGS: u8 = 1;
pub const EXIT_UNUSABLE: u8 = 2;

/// Colour only on a terminal, never with `NO_COLOR` set (any value).
pub fn style(color: Color) -> Style {
    let auto = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    match color {
        Color::Always => Style::Color,
        Color::Never => Style::Plain,
        Color::Auto if auto => Style::Color,
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
