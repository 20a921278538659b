//! `reviewflow explain`: every id an output can show, from the binary itself. A check's id
//! answers with its section of docs/checks.md; a rule a review's findings carry (`todo-added`, a
//! lens's `adversarial/…`) and a credential detector (`aws`) with what it finds and where it
//! comes from, read from the registries the reviewers use: no second list to keep in step.

use reviewflow_engine::check::{ALL, by_id};
use reviewflow_engine::render::escape;
use reviewflow_engine::suggest::{did_you_mean, help_text};
use reviewflow_stdlib::detect::{DetectorId, registry::DETECTORS};
use reviewflow_stdlib::lens;
use reviewflow_stdlib::rules::{RuleId, registry::RULES};

use crate::cli::ExplainArgs;
use crate::output::{EXIT_OK, EXIT_UNUSABLE, errln, print_stdout};

/// The most characters of an unknown id repeated in the error.
const MAX_SHOWN_CHARS: usize = 100;

/// docs/checks.md, as it was when the binary was built.
const DOC: &str = include_str!("../docs/checks.md");

/// The rule `std/post` gives a finding whose reviewer named none.
const NO_RULE: &str = "review";

pub fn run(args: ExplainArgs) -> u8 {
    let Some(id) = args.check else {
        print_stdout(&list());
        return EXIT_OK;
    };
    if let Some(check) = by_id(&id) {
        return match section(DOC, check.id()) {
            Some(body) => {
                print_stdout(&render(check.id(), body));
                EXIT_OK
            }
            None => {
                // A test keeps docs/checks.md and the registry in step; this is a build without it.
                errln!(
                    "error: this build has no documentation of `{}`: {}",
                    check.id(),
                    check.summary()
                );
                EXIT_UNUSABLE
            }
        };
    }
    if let Some(answer) = finding_rule(&id) {
        print_stdout(&answer);
        return EXIT_OK;
    }
    let help = help_text(&did_you_mean(&id, known_ids()))
        .map(|h| format!("; {h}"))
        .unwrap_or_default();
    // The argument is anyone's text: escaped (no control character reaches the terminal) and
    // cut.
    let shown = escape::bounded(&id, MAX_SHOWN_CHARS);
    errln!("error: no check, rule or detector is called `{shown}`{help}");
    errln!("`reviewflow explain` lists every one");
    EXIT_UNUSABLE
}

/// Every id `explain` answers for, but the lens-prefixed rules (`<lens>/<rule>`), whose second
/// part is a reviewer's own word.
fn known_ids() -> impl Iterator<Item = &'static str> {
    ALL.iter()
        .map(|c| c.id())
        .chain(RULES.iter().map(|r| r.id().as_str()))
        .chain(DETECTORS.iter().map(|d| d.id().as_str()))
        .chain(lens::builtin_names())
        .chain([NO_RULE])
}

/// What `id` means when a review's finding, a scan's hit or a run's log shows it: a rule of the
/// `rules` reviewer, a credential detector, a lens's rule, or `review`; `None` when it is none.
fn finding_rule(id: &str) -> Option<String> {
    let mut parts = Vec::new();
    if let Ok(rule) = id.parse::<RuleId>()
        && let Some(rule) = RULES.iter().find(|r| r.id() == rule)
    {
        let mut text = format!(
            "A rule of the built-in `rules` reviewer (`reviewer \"rules\"` on `std/review`): a \
             finding's `rule`.\n\nFinds: {}.\nSeverity: {}.\nWhere it comes from: the rules \
             read the lines the change adds (the stage's first `untrusted` input, the diff); no \
             model, no process, no network (docs/reviewers.md#the-rules-reviewer).\n",
            rule.description(),
            rule.severity()
        );
        if rule.id() == RuleId::Credential {
            text.push_str(&format!(
                "Its message names the detector that matched (`reviewflow explain <detector>`): {}.\n",
                detector_ids()
            ));
        }
        parts.push(text);
    }
    if let Ok(detector) = id.parse::<DetectorId>()
        && let Some(detector) = DETECTORS.iter().find(|d| d.id() == detector)
    {
        let scanned = if detector.id() == DetectorId::SecretValue {
            "std/scan always searches the run's own secret values (and their base64 forms), which \
             never leave the process"
        } else {
            "std/scan runs it unless its `detect` children leave it out"
        };
        parts.push(format!(
            "A credential detector: it finds {}.\n\nWhere it comes from: `std/scan` names it in \
             each hit (`{}: <target>:<line>:<column>`, and its `hits` output), before a value is \
             kept or published ({scanned}); the `credential` rule of the `rules` reviewer names \
             it in its findings' messages (\"detector `{}`\").\n",
            detector.label(),
            detector.id(),
            detector.id()
        ));
    }
    if let Some(text) = lens_rule(id) {
        parts.push(text);
    }
    if id == NO_RULE {
        parts.push(
            "The rule `std/post` publishes for a finding whose reviewer named none (a `command` \
             or model reviewer may leave `rule` out).\n"
                .to_owned(),
        );
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!(
        "{id}\n{}\n{}",
        "=".repeat(id.chars().count()),
        parts.join("\n")
    ))
}

/// A lens's rule: `<lens>` or `<lens>/<rule>`, the lens's name set by the stage (never by the
/// reviewer), the rule the reviewer's own word. Only a built-in lens is known here; a lens file
/// is its checkout's.
fn lens_rule(id: &str) -> Option<String> {
    let (name, rule) = match id.split_once('/') {
        Some((name, rule)) => (name, Some(rule)),
        None => (id, None),
    };
    let what = match rule {
        Some(rule) if !rule.is_empty() => format!(
            "A finding of the lens `{name}`: the rule `{}` is the reviewer's own name for what \
             it found; `{name}/` is added by `std/review` from the stage's `lens`, never taken \
             from the reviewer.",
            escape::bounded(rule, MAX_SHOWN_CHARS)
        ),
        Some(_) => return None,
        None => format!(
            "A lens, and the rule of a finding its reviewer gave no rule under the lens `{name}`."
        ),
    };
    match lens::builtin(name) {
        Some(lens) => Some(format!(
            "{what}\n\nThe built-in lens `{name}` (`lens \"{}{name}\"` on `std/review`): its \
             findings are at most `{}`, and they are {} (docs/lenses.md).\n",
            lens::BUILTIN_PREFIX,
            lens.meta.ceiling,
            match lens.meta.verdict {
                lens::VerdictMode::Included => "counted towards the verdict",
                lens::VerdictMode::FindingsOnly => "listed, never deciding the verdict",
            }
        )),
        // A lens file's name: `<name>.md` wherever the pipeline keeps it.
        None if rule.is_some() && valid_lens_name(name) => Some(format!(
            "{what}\n\nNo built-in lens is called `{name}`: it is a lens file of the pipeline's \
             repository (`lens \"<path>/{name}.md\"`), whose text says what it looks for \
             (docs/lenses.md).\n"
        )),
        None => None,
    }
}

/// A lens file's name: 1 to 64 of `a-z 0-9 -`, starting with a letter or digit (docs/lenses.md).
fn valid_lens_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// "`jwt`, `github`, …".
fn detector_ids() -> String {
    DETECTORS
        .iter()
        .map(|d| format!("`{}`", d.id()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every check with its one-line summary, in the order they run; then the rules and the
/// detectors a review shows.
fn list() -> String {
    let width = ALL
        .iter()
        .map(|c| c.id().len())
        .chain(RULES.iter().map(|r| r.id().as_str().len()))
        .chain(DETECTORS.iter().map(|d| d.id().as_str().len()))
        .max()
        .unwrap_or(0);
    let mut out = String::from("Checks (`reviewflow explain <check>` for one of them):\n\n");
    for check in ALL {
        out.push_str(&format!("  {:<width$}  {}\n", check.id(), check.summary()));
    }
    out.push_str("\nRules of the `rules` reviewer, as a review's findings name them:\n\n");
    for rule in RULES {
        out.push_str(&format!(
            "  {:<width$}  {}\n",
            rule.id().as_str(),
            rule.description()
        ));
    }
    out.push_str("\nCredential detectors, as `std/scan` and the `credential` rule name them:\n\n");
    for detector in DETECTORS {
        out.push_str(&format!(
            "  {:<width$}  {}\n",
            detector.id().as_str(),
            detector.label()
        ));
    }
    out
}

/// The body of the `## <id>` section: up to the next `## ` heading.
fn section<'a>(doc: &'a str, id: &str) -> Option<&'a str> {
    let heading = format!("## {id}");
    let mut start = None;
    let mut offset = 0;
    let mut in_code = false;
    for line in doc.split_inclusive('\n') {
        let trimmed = line.trim_end();
        if trimmed.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && trimmed.starts_with("## ") {
            if let Some(s) = start {
                return Some(&doc[s..offset]);
            }
            if trimmed == heading {
                start = Some(offset + line.len());
            }
        }
        offset += line.len();
    }
    start.map(|s| &doc[s..])
}

/// The section as plain text for a terminal: the heading underlined, no `**`, code blocks
/// indented without their fences, each example introduced by what `check` says of it, links as
/// their text (and where they lead, when that is another file).
fn render(id: &str, body: &str) -> String {
    let mut out = format!("{id}\n{}\n", "=".repeat(id.chars().count()));
    let mut in_code = false;
    for line in body.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            if line.is_empty() {
                out.push('\n');
            } else {
                out.push_str("    ");
                out.push_str(line);
                out.push('\n');
            }
            continue;
        }
        if let Some(marker) = trimmed
            .strip_prefix("<!--")
            .and_then(|m| m.strip_suffix("-->"))
        {
            match marker.trim().strip_prefix("expect:").map(str::trim) {
                Some("clean") => out.push_str("Passes (`check` is clean):\n"),
                Some(check) => out.push_str(&format!("Fails (`check` reports `{check}`):\n")),
                None => {}
            }
            continue;
        }
        if let Some(heading) = line.strip_prefix("### ") {
            let heading = inline(heading.trim());
            out.push_str(&format!(
                "{heading}\n{}\n",
                "-".repeat(heading.chars().count())
            ));
            continue;
        }
        out.push_str(&inline(line));
        out.push('\n');
    }
    // One trailing newline, whatever blank lines ended the section.
    let end = out.trim_end().len();
    out.truncate(end);
    out.push('\n');
    out
}

/// One line of prose: `**bold**` loses its stars, `[text](target)` becomes `text`, or
/// `text (docs/target)` for another file.
fn inline(line: &str) -> String {
    let line = line.replace("**", "");
    let mut out = String::with_capacity(line.len());
    let mut rest = line.as_str();
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let link = after.find("](").and_then(|close| {
            let target_start = close + 2;
            after[target_start..]
                .find(')')
                .map(|end| (close, &after[target_start..target_start + end]))
        });
        let Some((close, target)) = link else {
            out.push_str(&rest[..=open]);
            rest = after;
            continue;
        };
        out.push_str(&rest[..open]);
        out.push_str(&after[..close]);
        if !target.starts_with('#') {
            let shown = if target.contains("://") {
                target.to_string()
            } else {
                format!("docs/{target}")
            };
            out.push_str(&format!(" ({shown})"));
        }
        rest = &after[close + 2 + target.len() + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_has_a_section() {
        for check in ALL {
            assert!(section(DOC, check.id()).is_some(), "{}", check.id());
        }
    }

    #[test]
    fn links_become_text() {
        assert_eq!(
            inline("see [`a`](#a) and [b](language.md#secret)."),
            "see `a` and b (docs/language.md#secret)."
        );
        assert_eq!(inline("a [b] c **d**"), "a [b] c d");
    }
}
