//! `reviewflow explain`: a check's section of docs/checks.md, from the binary itself.

use reviewflow_engine::check::{ALL, by_id};
use reviewflow_engine::render::escape;
use reviewflow_engine::suggest::{did_you_mean, help_text};

use crate::cli::ExplainArgs;
use crate::output::{EXIT_OK, EXIT_UNUSABLE, errln, print_stdout};

/// The most characters of an unknown check id repeated in the error.
const MAX_SHOWN_CHARS: usize = 100;

/// docs/checks.md, as it was when the binary was built.
const DOC: &str = include_str!("../docs/checks.md");

pub fn run(args: ExplainArgs) -> u8 {
    let Some(id) = args.check else {
        print_stdout(&list());
        return EXIT_OK;
    };
    let Some(check) = by_id(&id) else {
        let help = help_text(&did_you_mean(&id, ALL.iter().map(|c| c.id())))
            .map(|h| format!("; {h}"))
            .unwrap_or_default();
        // The argument is anyone's text: escaped (no control character reaches the terminal)
        // and cut.
        let shown = escape::bounded(&id, MAX_SHOWN_CHARS);
        errln!("error: no check is called `{shown}`{help}");
        errln!("`reviewflow explain` lists every check");
        return EXIT_UNUSABLE;
    };
    match section(DOC, check.id()) {
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
    }
}

/// Every check with its one-line summary, in the order they run.
fn list() -> String {
    let width = ALL.iter().map(|c| c.id().len()).max().unwrap_or(0);
    let mut out = String::from("Checks (`reviewflow explain <check>` for one of them):\n\n");
    for check in ALL {
        out.push_str(&format!("  {:<width$}  {}\n", check.id(), check.summary()));
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
