//! `run-folder-path`: principle 1, unknown is untrusted. A stage's command line, environment or
//! working folder names the run's own folders (`.reviewflow`, the runs folder under it, the work
//! root `/tmp/reviewflow-<run>/` with every stage's folder, a `REVIEWFLOW_…` variable reviewflow
//! does not set in a stage): a value taken from there enters by no declared channel. The sandbox
//! covers those folders, so at run time the stage reads nothing there; and the flow it means is
//! one the label analysis cannot see. The one channel between stages is a declared output.

use super::{Check, Context};
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Segment, Value};

pub struct RunFolderPath;

pub const ID: &str = "run-folder-path";

/// The `REVIEWFLOW_…` variables a stage's program is given: its own folder and its marker.
const STAGE_VARIABLES: &[&str] = &["REVIEWFLOW_WORK_DIR", "REVIEWFLOW_STAGE_ID"];

/// What in `text` names the run's private folders, in a sentence; `None` when nothing does.
/// `variables`: whether the stage's variables are the engine's own (an opaque `run` stage); a
/// reviewer's come from its kind (`$REVIEWFLOW_PROMPT`), which the engine does not list.
pub fn names_run_folder(text: &str, variables: bool) -> Option<String> {
    let bytes = text.as_bytes();
    // Every form below holds `reviewflow` in some case: most values do not, and this costs less
    // than setting up the searches.
    if !bytes
        .windows("reviewflow".len())
        .any(|w| w.eq_ignore_ascii_case(b"reviewflow"))
    {
        return None;
    }
    // `.reviewflow` as a whole path component.
    let mut from = 0;
    while let Some(at) = text[from..].find(".reviewflow").map(|i| i + from) {
        let end = at + ".reviewflow".len();
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(end).copied();
        let starts = before.is_none_or(|b| matches!(b, b'/' | b' ' | b'=' | b'"' | b'\'' | b':'));
        let ends = after.is_none_or(|b| matches!(b, b'/' | b' ' | b'"' | b'\'' | b':' | b';'));
        if starts && ends {
            return Some("`.reviewflow` (the runs, store and forge)".into());
        }
        from = end;
    }
    if text.contains("/tmp/reviewflow-") {
        return Some("`/tmp/reviewflow-…`, the run's work root".into());
    }
    if !variables {
        return None;
    }
    // `$REVIEWFLOW_NAME` or `${REVIEWFLOW_NAME}`.
    for (at, _) in text.match_indices("REVIEWFLOW_") {
        let sigil = text[..at].ends_with('$') || text[..at].ends_with("${");
        if !sigil {
            continue;
        }
        let name: String = text[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !STAGE_VARIABLES.contains(&name.as_str()) {
            return Some(format!(
                "`${name}`, which a stage is not given (only `REVIEWFLOW_WORK_DIR`, `REVIEWFLOW_STAGE_ID`)"
            ));
        }
        let rest = text[at + name.len()..].trim_start_matches('}');
        if name == "REVIEWFLOW_WORK_DIR" && rest.starts_with("/..") {
            return Some("the folder above `$REVIEWFLOW_WORK_DIR`, the run's work root".into());
        }
    }
    None
}

/// The literal text of a value: a plain string, or a template's literal parts joined (a
/// reference renders as a copy in the stage's own folder, an input as what it names).
fn literal_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Template(t) => Some(
            t.segments
                .iter()
                .map(|s| match s {
                    Segment::Literal { text } => text.as_str(),
                    _ => " ",
                })
                .collect(),
        ),
        _ => None,
    }
}

impl Check for RunFolderPath {
    fn principle(&self) -> super::Principle {
        super::Principle::UnknownIsUntrusted
    }
    fn id(&self) -> &'static str {
        ID
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "no stage reads the run's own folders: values pass between stages only as declared outputs"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        for stage in &cx.pipeline.stages {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            for child in &stage.children {
                let place = match contract.child_spec(&child.name.value).map(|s| s.role) {
                    Some(Role::CommandLine) => "its command line",
                    Some(Role::Environment) => "its environment",
                    Some(Role::Path) => "a path it uses",
                    _ => continue,
                };
                let values = child
                    .args
                    .iter()
                    .chain(child.props.iter().map(|p| &p.value));
                let Some((span, what)) = values
                    .filter_map(|v| {
                        let text = literal_text(&v.value)?;
                        Some((v.span, names_run_folder(&text, contract.opaque)?))
                    })
                    .next()
                else {
                    continue;
                };
                let name = &stage.name.value;
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "`{name}` names {what} in {place}: no stage can read there, and a value taken from there passes by no declared channel (principle 1, unknown is untrusted)",
                        ),
                        Label::new(span, "the run's own folders, hidden from every stage"),
                    )
                    .related(Label::new(stage.name.span, format!("`{name}` runs here")))
                    .help(format!(
                        "hand the value over as a declared output: declare it on the stage that makes it (`output \"report\" file=\"report.txt\"`, written in its `$REVIEWFLOW_WORK_DIR`) and name it in `{name}` (`\"{{producer.report}}\"` on its command line or `stdin`), which gives `{name}` a copy in its own folder and lets `check` follow the labels",
                    ))
                    .confidence(Confidence::High)
                    .stage(name),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::names_run_folder;

    #[test]
    fn the_run_folders_are_named_by_their_paths_and_variables() {
        for (text, names) in [
            (".reviewflow/runs/latest/build/report.txt", true),
            ("cat .reviewflow/runs/*/lint/out.txt", true),
            ("--from=.reviewflow/store", true),
            ("/home/ci/repo/.reviewflow", true),
            ("/tmp/reviewflow-1234/build/out", true),
            ("$REVIEWFLOW_RUN_DIR/build/out.txt", true),
            ("${REVIEWFLOW_RUNS}/x", true),
            ("$REVIEWFLOW_WORK_DIR/../build/out.txt", true),
            ("${REVIEWFLOW_WORK_DIR}/../build", true),
            // The stage's own folder and marker, and look-alikes.
            ("$REVIEWFLOW_WORK_DIR/out.txt", false),
            ("${REVIEWFLOW_WORK_DIR}/target", false),
            ("$REVIEWFLOW_STAGE_ID", false),
            ("REVIEWFLOW_RUN_DIR", false),
            ("docs/.reviewflow-notes.md", false),
            ("my.reviewflow", false),
            ("/opt/reviewflow-tools/bin/x", false),
            ("", false),
        ] {
            assert_eq!(names_run_folder(text, true).is_some(), names, "{text:?}");
        }
        // A reviewer's variables come from its kind; its paths are checked all the same.
        assert!(names_run_folder("$REVIEWFLOW_PROMPT", false).is_none());
        assert!(names_run_folder("cat .reviewflow/runs/x", false).is_some());
    }
}
