//! `untrusted-input`: data from the change (diff, title, body, branch names, restored
//! conversations) reaches a command line or an environment variable of a stage that holds a
//! secret or a write permission, where it could steer the command. So does a folder another
//! stage may write (`flow::Folder`): what it holds is code and data for the stage that runs from
//! it, and no stage declares it. One finding per stage and folder, naming its writers.

use super::{Check, Context};
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::flow::{Flow, Input, Kind};
use crate::span::Span;

/// How many writers of a folder a finding names.
const NAMED_WRITERS: usize = 3;
use crate::model::Access;

pub struct UntrustedInput;

impl Check for UntrustedInput {
    fn principle(&self) -> super::Principle {
        super::Principle::UnknownIsUntrusted
    }
    fn id(&self) -> &'static str {
        "untrusted-input"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "untrusted data never reaches a command line or environment that holds a secret or write permission"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(flow) = cx.flow else { return };
        let p = cx.pipeline;
        for (i, stage) in p.stages.iter().enumerate() {
            let secret = flow.held[i]
                .first()
                .map(|&k| p.secrets[k].name.value.as_str());
            let write = stage
                .permissions
                .iter()
                .find(|w| w.value.access == Access::Write);
            let power = match (secret, write) {
                (Some(k), _) => format!("holds secret `{k}`"),
                (None, Some(w)) => format!("has `{}`", w.value),
                (None, None) => continue,
            };
            let mut folders_reported: Vec<&str> = Vec::new();
            for input in &flow.inputs[i] {
                if !input.labels.untrusted {
                    continue;
                }
                let place = match input.role {
                    Role::CommandLine => "the command line",
                    Role::Environment => "an environment variable",
                    Role::Path => "a path",
                    _ => continue,
                };
                if let Some(folder) = &input.folder {
                    if folders_reported.contains(&folder.input.as_str()) {
                        continue;
                    }
                    folders_reported.push(&folder.input);
                    out.push(self.folder(cx, flow, i, input, place, &power));
                    continue;
                }
                let path = flow.path(p, cx.dag, i, input, Kind::Untrusted);
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "untrusted `{}` reaches {place} of `{}`, which {power}",
                            input.reference, stage.name.value
                        ),
                        Label::new(input.span, "untrusted data here"),
                    )
                    .related(Label::new(stage.name.span, format!("`{}` {power}", stage.name.value)))
                    .flow(path)
                    .help("pass it on stdin or in a file the command reads, or run the command in a stage without the secret")
                    .confidence(Confidence::High)
                    .stage(&stage.name.value),
                );
            }
        }
    }
}

impl UntrustedInput {
    /// A folder named by a pipeline input reaches `place` of stage `i`, and other stages may
    /// write it: one finding, naming every writer.
    fn folder(
        &self,
        cx: &Context<'_>,
        flow: &Flow,
        i: usize,
        input: &Input,
        place: &str,
        power: &str,
    ) -> Finding {
        let p = cx.pipeline;
        let stage = &p.stages[i].name;
        let folder = input
            .folder
            .as_ref()
            .map(|f| f.input.as_str())
            .unwrap_or_default();
        let writers: Vec<(usize, Span)> = flow
            .writers(folder)
            .iter()
            .copied()
            .filter(|&(w, _)| w != i)
            .collect();
        // Named up to a few, then counted: a folder may have a thousand writers.
        let mut names: Vec<String> = writers
            .iter()
            .take(NAMED_WRITERS)
            .map(|&(w, _)| format!("`{}`", p.stages[w].name.value))
            .collect();
        if writers.len() > NAMED_WRITERS {
            names.push(format!("{} more stages", writers.len() - NAMED_WRITERS));
        }
        let writers_text = names.join(" and ");
        // Both may write: what the reader leaves there (its secret included) reaches the writers
        // too, and this finding is the one for that way as well (`secret-flow` leaves it).
        let back = if input.folder.as_ref().is_some_and(|f| f.both_write) {
            format!(
                "; `{}` may write it too, and {writers_text} {} what it leaves",
                stage.value,
                if writers.len() > 1 { "read" } else { "reads" }
            )
        } else {
            String::new()
        };
        let mut finding = Finding::new(
            self.id(),
            self.severity(),
            format!(
                "`{{{folder}}}` names a folder that {writers_text} may write, and it reaches {place} of `{}`, which {power}{back}",
                stage.value
            ),
            Label::new(input.span, format!("a folder {writers_text} may write")),
        )
        .related(Label::new(stage.span, format!("`{}` {power}", stage.value)));
        for &(w, granted) in writers.iter().take(NAMED_WRITERS) {
            let writer = &p.stages[w].name.value;
            finding = finding.related(Label::new(
                granted,
                format!("`{writer}` may write what `{{{folder}}}` names: it is in its command line, environment or working directory"),
            ));
        }
        finding
            .flow(flow.path(p, cx.dag, i, input, Kind::Untrusted))
            .help(format!(
                "what a stage may write is code and data for every stage that names it: give `{}` what it runs as a declared output of the stage that makes it (`output \"…\" file=\"…\" type=\"file\"`), keep `{{{folder}}}` out of the command line, environment and working directory of {writers_text}, or give input `{folder}` a `pattern=` that cannot name a folder (one that cannot start with `/`)",
                stage.value,
            ))
            .confidence(Confidence::High)
            .stage(&stage.value)
    }
}
