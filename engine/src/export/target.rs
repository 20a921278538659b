//! What a platform's exporter is to the command line (docs/export.md): `export <name>` takes the
//! pipeline file, `--out` and the exporter's own options; loading the file, the checks that
//! refuse it, the flow and writing the result are the command's, so every exporter refuses and
//! writes alike.

use crate::flow::Flow;
use crate::graph::Dag;
use crate::model::Pipeline;
use crate::registry::Registry;
use crate::source::Source;

/// An option of one exporter, `--<name> <VALUE>`, taken at most once.
#[derive(Clone, Copy, Debug)]
pub struct ExportOption {
    pub name: &'static str,
    pub value_name: &'static str,
    /// One sentence for `export <name> --help`.
    pub help: &'static str,
}

/// What an exporter writes from: a pipeline that passed `check`.
pub struct Request<'a> {
    pub pipeline: &'a Pipeline,
    pub registry: &'a Registry,
    pub source: &'a Source,
    pub dag: &'a Dag,
    pub flow: &'a Flow,
    /// The pipeline file as the exported jobs name it: relative to the repository's top,
    /// `/`-separated, without `..`.
    pub file: &'a str,
    /// Where `--out` writes, in the same form, when it lies below the working folder (the
    /// repository's top); `None` for stdout or a file elsewhere.
    pub written_as: Option<&'a str>,
    /// The values of the exporter's options that were given, by name.
    pub options: &'a [(&'static str, String)],
}

/// A platform's exporter ([`crate::platform::Platform::exporter`]).
pub trait Exporter: Send + Sync {
    /// What it writes, one line, for `export --help`.
    fn about(&self) -> &'static str;

    /// Its options besides the file and `--out`.
    fn options(&self) -> &'static [ExportOption] {
        &[]
    }

    /// Refuses option values it cannot use, before the pipeline is read (a usage error).
    fn check_options(&self, options: &[(&'static str, String)]) -> Result<(), String> {
        let _ = options;
        Ok(())
    }

    /// The exported text, or why the pipeline cannot be exported to the platform.
    fn export(&self, request: &Request<'_>) -> Result<String, String>;
}

/// The value of option `name` in `options`, if it was given.
pub fn option<'a>(options: &'a [(&'static str, String)], name: &str) -> Option<&'a str> {
    options
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.as_str())
}
