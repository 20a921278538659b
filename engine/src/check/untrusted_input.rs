//! `untrusted-input`: principle 1, unknown is untrusted. Data from outside the pipeline file
//! (the change's diff, title, body, branch names, restored conversations, and what is read from
//! them) reaches a command line, an environment variable, a path or a setting (any slot its
//! contract does not take as data) of a stage that holds a secret or a write permission, where it
//! could steer the command or what the stage publishes. So does a folder another stage may write
//! (`flow::Folder`): what it holds is code and data for the stage that runs from it, and no stage
//! declares it. One finding per stage and folder, naming its writers.
//!
//! A reviewer reads every channel as words it may follow: untrusted text reaches it only through a
//! child its contract fences (`ChildSpec::fences`); any other channel is a finding, whatever the
//! reviewer holds.

use super::{Check, Context};
use crate::code::{CodeHow, Fetched};
use crate::contract::{OutputType, Role, StageContract};
use crate::finding::{Confidence, Finding, Label, Severity, Suppression};
use crate::flow::{CheckoutHow, CheckoutRun, Flow, Input, Kind, command_words};
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
        "untrusted data (the checkout's files included) never steers a stage that holds a secret or write permission, nor reaches a reviewer unfenced"
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
            let contract = cx.registry.get(&stage.uses.value);
            if let Some(contract) = contract {
                self.unfenced(cx, flow, i, contract, out);
                // Whatever the stage holds: the job's later steps hold the job's token.
                self.runner_settings(cx, flow, i, contract, out);
            }
            // A reviewer holds the verdict: a program of the change's that writes the review of
            // the change passes it (principle 1, and 4: a verdict covers what it claims).
            let reviews = contract.is_some_and(|c| !c.reviewers().is_empty());
            let (power, code_only) = match (secret, write) {
                (Some(k), _) => (format!("holds secret `{k}`"), false),
                (None, Some(w)) => (format!("has `{}`", w.value), false),
                // Only the code it runs: what steers a reviewer's words is `unfenced`'s.
                (None, None) if reviews => ("writes the review of the change".to_owned(), true),
                (None, None) => continue,
            };
            for run in &flow.checkout_runs[i] {
                out.push(self.checkout(cx, i, run, &power));
            }
            for (code, span) in &flow.fetched[i] {
                out.push(self.fetched(cx, i, code, *span, &power));
            }
            if code_only {
                continue;
            }
            // What the stage's program does with what it reads, known once per stage.
            let stdin_runs_code = stdin_interpreter(stage, contract);
            let stdin_steers = contract.and_then(|c| {
                c.children_in(stage, Role::CommandLine)
                    .find_map(|c| crate::code::reads_settings_from_input(&command_words(c)))
            });
            let follows = model_client(cx, stage, contract);
            let mut folders_reported: Vec<&str> = Vec::new();
            for input in &flow.inputs[i] {
                // An input the pipeline vouches for carries no label, but the finding it would
                // have caused is shown, as allowed, as an `allow`'s is.
                let lifted = input.outside.as_ref().and_then(|o| o.trusted.as_ref());
                if !input.labels.untrusted && lifted.is_none() {
                    continue;
                }
                // Principle 3: the roles a stage takes as data are an allow-list; a value in
                // any other slot steers what the stage does with its power (a setting names what
                // it publishes, keeps or binds), so untrusted text must not choose it. A
                // reviewer's unfenced settings are `unfenced`'s finding, above.
                // Standard input is data, unless the program is an interpreter that reads its
                // code there (`sh` given no script).
                let stdin_runs = stdin_runs_code
                    .clone()
                    .filter(|_| input.role == Role::Stdin);
                // A model's client follows the instructions it reads, wherever it reads them:
                // run outside a reviewer stage, its data is its prompt.
                if let (Some(client), Role::Data | Role::Stdin) = (follows, input.role) {
                    out.push(self.prompted(cx, flow, i, input, client, &power));
                    continue;
                }
                let steered_by_stdin = stdin_steers
                    .filter(|_| input.role == Role::Stdin && stdin_runs.is_none())
                    .map(|(program, what)| {
                        format!("its standard input, which `{program}` reads as {what},")
                    });
                let place = match input.role {
                    Role::Stdin if stdin_runs.is_some() => "its standard input",
                    Role::Stdin if steered_by_stdin.is_some() => "its standard input",
                    Role::Data | Role::Publish | Role::Keep | Role::Stdin => continue,
                    Role::CommandLine => "the command line",
                    Role::Environment => "an environment variable",
                    Role::Path => "a path",
                    Role::Config | Role::Binding | Role::SecretSlot => {
                        if contract.is_some_and(|c| !c.reviewers().is_empty()) {
                            continue;
                        }
                        "a setting"
                    }
                };
                // A `file` output passed whole is a path the run made (a copy in the stage's own
                // folder): its words are the run's, and the program reads the untrusted content
                // as data, the way the fix of a checkout script hands on what it makes.
                // Not so for the working folder: the program runs in it, and what it finds there
                // (a `Makefile`, a `package.json`, its configuration) steers it.
                // Nor where the command line runs the file as code (principle 1: code is an
                // input too): the program, an interpreter's script, a runner's package.
                let child = &stage.children[input.child];
                let working_folder = child.name.value == "cwd" && input.role == Role::Path;
                let run_as = code_at(child, input).or_else(|| stdin_runs.map(CodeHow::Inline));
                // An environment variable is a setting of the program: a file named there is
                // its configuration (`NPM_CONFIG_USERCONFIG`, `KUBECONFIG`, `BASH_ENV`).
                let setting_file = input.role == Role::Environment;
                if input.folder.is_none()
                    && !working_folder
                    && !setting_file
                    && run_as.is_none()
                    && is_file_output(cx, &input.reference)
                    && whole_word(child, &input.reference)
                {
                    continue;
                }
                if let Some(folder) = &input.folder {
                    if folders_reported.contains(&folder.input.as_str()) {
                        continue;
                    }
                    folders_reported.push(&folder.input);
                    out.push(self.folder(cx, flow, i, input, place, &power));
                    continue;
                }
                let path = flow.path(p, cx.dag, i, input, Kind::Untrusted);
                let setting = place == "a setting";
                let instead = if run_as.is_some() {
                    "run an installed program or code written in the file, and hand the untrusted file to it as data (an argument it reads, not one it runs); or run the file in a stage without the secret"
                } else if setting {
                    "write the setting with the pipeline's own words (a literal, or inputs whose pattern admits only a name): untrusted text is data only in a slot the stage takes as data (a comment, findings, a fenced `untrusted`)"
                } else {
                    "pass it on stdin or in a file the command reads, or run the command in a stage without the secret"
                };
                let help = match &input.outside {
                    Some(o) => o.fix(instead),
                    None => instead.to_owned(),
                };
                let place = if setting {
                    format!("`{}`, a setting", child.name.value)
                } else if let Some(steered) = &steered_by_stdin {
                    steered.clone()
                } else if let Some(how) = &run_as {
                    format!("{place}, run as code ({}),", describe_code(how))
                } else {
                    place.to_owned()
                };
                let mut finding = Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "untrusted `{}` reaches {place} of `{}`, which {power}",
                        input.reference, stage.name.value
                    ),
                    Label::new(input.span, "untrusted data here"),
                )
                .related(Label::new(
                    stage.name.span,
                    format!("`{}` {power}", stage.name.value),
                ))
                .flow(path)
                .help(help)
                .confidence(Confidence::High)
                .stage(&stage.name.value);
                if let Some(lifted) = input.outside.as_ref().and_then(|o| o.lifted()) {
                    finding.suppressed = Some(lifted);
                }
                out.push(finding);
            }
        }
    }
}

impl UntrustedInput {
    /// Stage `i` is given a runner's settings file (an input read from a variable a platform
    /// names as one: `Platform::settings_file`; what a step writes there becomes an environment
    /// variable of every later step, a folder on their `PATH`, or an output later steps
    /// interpolate) and reads
    /// untrusted text: a line of that text can become a setting of the job (an early `EOF` in a
    /// heredoc, a newline), and so code in every later step (principle 1: the file is a
    /// setting, and untrusted text must not write one).
    fn runner_settings(
        &self,
        cx: &Context<'_>,
        flow: &Flow,
        i: usize,
        contract: &StageContract,
        out: &mut Vec<Finding>,
    ) {
        let stage = &cx.pipeline.stages[i];
        let settings: Vec<(&str, Span, &str, &str)> = crate::flow::granted_inputs(stage, contract)
            .into_iter()
            .filter_map(|(name, span)| {
                let env = cx.pipeline.input(name)?.env.as_ref()?;
                let what = cx.registry.settings_file(&env.value)?;
                Some((name, span, env.value.as_str(), what))
            })
            .collect();
        // The path of the file itself is the runner's, not text the stage writes there.
        let Some(untrusted) = flow.inputs[i].iter().find(|x| {
            x.labels.untrusted
                && !(x.reference.stage.is_empty()
                    && settings.iter().any(|(n, ..)| *n == x.reference.output))
        }) else {
            return;
        };
        // One finding: the first file it is given.
        if let Some((name, span, var, what)) = settings.into_iter().next() {
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`{}` writes `${var}` (input `{name}`), which the runner reads back as {what}, and reads untrusted `{}`: a line of that text can become a setting of the job, and so code in its later steps, which hold the job's token (principle 1, unknown is untrusted)",
                        stage.name.value, untrusted.reference
                    ),
                    Label::new(span, "the job's settings"),
                )
                .related(Label::new(untrusted.span, "untrusted data here"))
                .help(format!(
                    "write only fixed text to `${var}` (a line the file writes, no value the stage read), or hand the value on as a declared output; a multi-line value goes in a file the next step reads as data"
                ))
                .confidence(Confidence::High)
                .stage(&stage.name.value),
            );
        }
    }
}

/// Whether `child` passes `reference` only as whole words (`"{build.site}"`), never inside one.
fn whole_word(child: &crate::model::Child, reference: &crate::model::Reference) -> bool {
    use crate::model::{Segment, Value};
    let mut seen = false;
    for arg in child
        .args
        .iter()
        .chain(child.props.iter().map(|p| &p.value))
    {
        match &arg.value {
            Value::Reference(r) if r == reference => seen = true,
            Value::Template(t) if t.references().any(|r| r == reference) => {
                if let [Segment::Reference { .. }] = t.segments.as_slice() {
                    seen = true;
                } else {
                    return false;
                }
            }
            _ => {}
        }
    }
    seen
}

/// Whether `reference` is a `file` output of a stage.
fn is_file_output(cx: &Context<'_>, reference: &crate::model::Reference) -> bool {
    cx.pipeline
        .stages
        .iter()
        .find(|s| s.name.value == reference.stage)
        .is_some_and(|s| {
            crate::graph::outputs_of(s, cx.registry)
                .iter()
                .any(|(name, ty)| *name == reference.output && *ty == OutputType::File)
        })
}

/// How the command line `child` runs the word `input` stands in, when it runs it as code.
fn code_at(child: &crate::model::Child, input: &Input) -> Option<CodeHow> {
    if input.role != Role::CommandLine {
        return None;
    }
    let index = child
        .args
        .iter()
        .position(|a| a.span.offset <= input.span.offset && input.span.end() <= a.span.end())?;
    crate::code::code_words(&command_words(child))
        .into_iter()
        .find(|c| c.index == index)
        .map(|c| c.how)
}

/// The model reviewer kind whose client `stage`, a stage of the pipeline's own program, runs as
/// a program (a model kind's name is its client's program: `claude`, `codex`), if any.
fn model_client(
    cx: &Context<'_>,
    stage: &crate::model::Stage,
    contract: Option<&StageContract>,
) -> Option<&'static str> {
    let contract = contract.filter(|c| c.opaque)?;
    let kinds: Vec<&'static str> = cx
        .registry
        .contracts()
        .flat_map(|c| c.reviewer_kinds.iter())
        .filter(|k| k.vendor.is_some())
        .map(|k| k.name)
        .collect();
    contract
        .children_in(stage, Role::CommandLine)
        .find_map(|c| {
            let words = command_words(c);
            crate::code::code_words(&words)
                .into_iter()
                .filter(|w| w.how == CodeHow::Program)
                .find_map(|w| {
                    let name = crate::code::base_name(words[w.index]);
                    kinds.iter().find(|k| **k == name).copied()
                })
        })
}

/// The interpreter `stage` runs that reads its code from its standard input, if any.
fn stdin_interpreter(
    stage: &crate::model::Stage,
    contract: Option<&StageContract>,
) -> Option<String> {
    let contract = contract?;
    contract
        .children_in(stage, Role::CommandLine)
        .find_map(|c| crate::code::reads_code_from_input(&command_words(c)).map(str::to_owned))
}

/// "the program", "the script `sh` runs".
fn describe_code(how: &CodeHow) -> String {
    match how {
        CodeHow::Program => "the program".to_owned(),
        CodeHow::Script(i) => format!("the script `{i}` runs"),
        CodeHow::Inline(i) => format!("code `{i}` runs"),
        CodeHow::Package(r) => format!("the package `{r}` installs and runs"),
    }
}

/// `finding`, shown as allowed when the pipeline vouches for the checkout it follows from.
fn lift_by_checkout(cx: &Context<'_>, mut finding: Finding) -> Finding {
    if let Some(t) = cx.registry.checkout_vouched(cx.pipeline) {
        finding.suppressed = Some(Suppression {
            span: t.span,
            reason: format!("trusted checkout: {}", t.reason.value.trim()),
        });
    }
    finding
}

/// Whether a reviewer reads what `child` hands it as words it may follow: a data or settings
/// channel its contract does not fence, and does not say the stage keeps to itself. A
/// conversation slot (`resume`) is the reviewer's own earlier conversation, resumed whole; whose
/// it may be is `trust`'s business.
fn unfenced_channel(contract: &StageContract, child: &str) -> bool {
    contract.child_spec(child).is_some_and(|spec| {
        matches!(spec.role, Role::Data | Role::Config)
            && !spec.fences
            && !spec.read_by_the_stage
            && spec.accepts.as_slice() != [OutputType::Conversation]
    })
}

impl UntrustedInput {
    /// Stage `i`, which `power` describes, runs a file of the checkout: the change's own code,
    /// holding what the stage holds. Shown as allowed when the pipeline vouches for the checkout.
    fn checkout(&self, cx: &Context<'_>, i: usize, run: &CheckoutRun, power: &str) -> Finding {
        let p = cx.pipeline;
        let stage = &p.stages[i].name;
        let how = run.describe();
        // A program seen to run the change's code is certain; one that works in the checkout
        // reads what it reads there by itself, which the file does not show.
        let (severity, confidence) = match run.how {
            CheckoutHow::WorkingFolder => (Severity::Warning, Confidence::Medium),
            _ => (self.severity(), Confidence::High),
        };
        let finding = Finding::new(
            self.id(),
            severity,
            format!(
                "`{}` {how}, and {power}: in CI the checkout is the pull request's, so {} (principle 1, unknown is untrusted)",
                stage.value,
                run.consequence()
            ),
            Label::new(run.span, run.label()),
        )
        .related(Label::new(stage.span, format!("`{}` {power}", stage.value)))
        .flow(vec![
            Label::new(
                run.span,
                format!(
                    "`{}` {how} (untrusted: in CI, the pull request's own)",
                    stage.value
                ),
            ),
        ])
        .help(format!(
            "{}, and {} in a stage that holds nothing, handing on what it makes as a declared output{}",
            run.fix(&stage.value),
            match run.how {
                CheckoutHow::WorkingFolder => "what needs the checkout",
                _ => "the checkout's own script",
            },
            // Offered only where the declaration can hold.
            if cx.registry.checkout_contradiction(p).is_none() {
                "; if the job checks out only code the pipeline's owners wrote (the base branch, never the pull request's head), say so once: `trusted \"checkout\" reason=\"…\"`"
            } else {
                ""
            }
        ))
        .confidence(confidence)
        .stage(&stage.value);
        lift_by_checkout(cx, finding)
    }

    /// Stage `i`, which `power` describes, runs code a registry or a server chooses when it
    /// runs: whoever controls that package or URL runs code with what the stage holds.
    fn fetched(
        &self,
        cx: &Context<'_>,
        i: usize,
        code: &Fetched,
        span: Span,
        power: &str,
    ) -> Finding {
        let stage = &cx.pipeline.stages[i].name;
        let how = code.describe();
        // A folder every user may write is one the job may also have made its own first (a
        // private temporary folder): likely, not certain.
        let (severity, confidence) = match code.how {
            crate::code::FetchHow::SharedFolder | crate::code::FetchHow::UnknownFolder => {
                (Severity::Warning, Confidence::Medium)
            }
            // A package may bundle what it depends on (npm's `bundleDependencies`, a
            // shrinkwrap), which the file cannot see.
            crate::code::FetchHow::Dependencies(_) => (Severity::Warning, Confidence::Medium),
            _ => (self.severity(), Confidence::High),
        };
        Finding::new(
            self.id(),
            severity,
            format!(
                "`{}` {how}, and {power}: {} (principle 1, unknown is untrusted)",
                stage.value,
                code.consequence()
            ),
            Label::new(span, code.source()),
        )
        .related(Label::new(stage.span, format!("`{}` {power}", stage.value)))
        .flow(vec![Label::new(
            span,
            format!(
                "`{}` {how} (untrusted: {})",
                stage.value,
                match code.how {
                    crate::code::FetchHow::Change(_) => "the change's code",
                    crate::code::FetchHow::Unverified(_) => "an unverified channel",
                    _ => "from outside the file",
                }
            ),
        )])
        .help(code.fix())
        .confidence(confidence)
        .stage(&stage.value)
    }

    /// Stage `i` runs a model's client as its own program and hands it untrusted data: the
    /// client follows what it reads, with what the stage holds and none of a reviewer stage's
    /// fences.
    fn prompted(
        &self,
        cx: &Context<'_>,
        flow: &Flow,
        i: usize,
        input: &Input,
        client: &str,
        power: &str,
    ) -> Finding {
        let p = cx.pipeline;
        let stage = &p.stages[i].name;
        let path = flow.path(p, cx.dag, i, input, Kind::Untrusted);
        Finding::new(
            self.id(),
            self.severity(),
            format!(
                "untrusted `{}` reaches `{client}`, a model's client that `{}` runs as its own program and that follows the instructions it reads, and `{}` {power} (principle 1, unknown is untrusted)",
                input.reference, stage.value, stage.value
            ),
            Label::new(input.span, "read as instructions"),
        )
        .related(Label::new(stage.span, format!("`{}` {power}", stage.value)))
        .flow(path)
        .help(format!(
            "run the model as a reviewer (`uses=\"std/review\"` with `reviewer \"{client}\"` and the text as `untrusted`): there its key stays with the run's proxy, the text is fenced, and it has no shell; or hand it nothing the change wrote"
        ))
        .confidence(Confidence::High)
        .stage(&stage.value)
    }

    /// Untrusted values a reviewer reads through a channel that does not fence them: one finding
    /// per stage, naming each value once.
    fn unfenced(
        &self,
        cx: &Context<'_>,
        flow: &Flow,
        i: usize,
        contract: &StageContract,
        out: &mut Vec<Finding>,
    ) {
        if contract.reviewers().is_empty() {
            return;
        }
        let p = cx.pipeline;
        let stage = &p.stages[i];
        let mut found: Vec<&Input> = Vec::new();
        let mut lifted: Vec<&Input> = Vec::new();
        for input in &flow.inputs[i] {
            let child = &stage.children[input.child].name.value;
            if !unfenced_channel(contract, child) {
                continue;
            }
            let list = if input.labels.untrusted {
                &mut found
            } else if input.outside.as_ref().is_some_and(|o| o.trusted.is_some()) {
                &mut lifted
            } else {
                continue;
            };
            if !list.iter().any(|f| f.reference == input.reference) {
                list.push(input);
            }
        }
        // Only inputs the pipeline vouches for: the finding is shown, as allowed.
        let all_lifted = found.is_empty();
        if all_lifted {
            found = lifted;
        }
        let Some(first) = found.first() else { return };
        let name = &stage.name.value;
        let child = &stage.children[first.child].name.value;
        // The fenced children that take any value: one that takes only its own kind
        // (`responses`) is no place for another value.
        let fenced: Vec<String> = contract
            .children
            .iter()
            .filter(|c| c.fences && c.accepts.is_empty())
            .map(|c| format!("`{}`", c.name))
            .collect();
        let fence = fenced
            .first()
            .cloned()
            .unwrap_or_else(|| "`untrusted`".into());
        let values: Vec<String> = found.iter().map(|f| format!("`{}`", f.reference)).collect();
        let mut finding = Finding::new(
            self.id(),
            self.severity(),
            format!(
                "untrusted {} {} the reviewer of `{name}` through `{child}`, which does not fence {}: the reviewer cannot tell the change's words from its instructions (principle 1, unknown is untrusted)",
                values.join(", "),
                if found.len() > 1 { "reach" } else { "reaches" },
                if found.len() > 1 { "them" } else { "it" },
            ),
            Label::new(first.span, format!("`{child}` hands this over unfenced")),
        )
        .related(Label::new(
            stage.name.span,
            format!("`{name}` runs a reviewer"),
        ));
        for other in found.iter().skip(1) {
            let child = &stage.children[other.child].name.value;
            finding = finding.related(Label::new(
                other.span,
                format!("`{child}` hands this over unfenced too"),
            ));
        }
        if all_lifted && let Some(lifted) = first.outside.as_ref().and_then(|o| o.lifted()) {
            finding.suppressed = Some(lifted);
        }
        if let Some(o) = found.iter().find_map(|f| f.outside.as_ref()) {
            out.push(
                finding
                    .flow(flow.path(p, cx.dag, i, first, Kind::Untrusted))
                    .help(o.fix(&format!(
                        "hand the value to the reviewer through {}",
                        fenced.join(" or ")
                    )))
                    .confidence(Confidence::High)
                    .stage(name),
            );
            return;
        }
        out.push(
            finding
                .flow(flow.path(p, cx.dag, i, first, Kind::Untrusted))
                .help(format!(
                    "give {} to the reviewer as {} (`{} {}`), which fences each value by per-run markers as text to review; keep `{child}` for values the pipeline vouches for",
                    values.join(", "),
                    fenced.join(" or "),
                    fence.trim_matches('`'),
                    values.iter().map(|v| format!("\"{}\"", v.trim_matches('`'))).collect::<Vec<_>>().join(" "),
                ))
                .confidence(Confidence::High)
                .stage(name),
        );
    }

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
