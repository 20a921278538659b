//! `private-egress`: a private value (a model conversation, a restored plaintext) leaves the run
//! (published, kept in a store, or handed to an arbitrary command) without passing a
//! declassifier (`std/seal`). One root cause is one error: a command that is handed private data
//! is reported there, and what it prints is not reported again where it is published.
//!
//! And, as a warning, the implicit flow: a `when` that reads a value derived from private data or
//! from a secret decides whether a stage runs, and which stages ran is public (the run's log, a
//! comment posted or not, a blob kept or a tombstone), so each gated stage publishes one bit of
//! it.
//!
//! And, as a warning, the bits a program that holds a secret can choose: its `ok` and the `bool`s
//! it produces (`commented`, `clean`) are bits of every secret its program holds, and so are the
//! `ok` and `bool`s of a stage that reads such bits. The log shows each stage's outcome, one bit a stage a
//! run; a stage out of the secret's scope that reads such bits (in its `when` or as data) and
//! publishes or has network can gather them into one value and send it anywhere.

use super::{Check, Context};
use crate::contract::{OutputType, Role};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::flow::{Flow, Input, Kind};
use crate::model::{Pipeline, Reference};

pub struct PrivateEgress;

impl Check for PrivateEgress {
    fn principle(&self) -> super::Principle {
        super::Principle::Labels
    }
    fn id(&self) -> &'static str {
        "private-egress"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "private data leaves the run only sealed"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(flow) = cx.flow else { return };
        let p = cx.pipeline;
        for (i, stage) in p.stages.iter().enumerate() {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            for input in &flow.inputs[i] {
                // A folder's writer is a command: handed private data, it is reported there.
                if !input.labels.private || input.folder.is_some() {
                    continue;
                }
                // A stage with network is a way out for everything it reads: its program can
                // send it anywhere the ports reach (a reviewer's fetch tool, a prompt injection).
                let networked = !contract.opaque
                    && !matches!(input.role, Role::Publish | Role::Keep)
                    && !stage.network.is_empty();
                let how = match input.role {
                    Role::Publish => "is published by",
                    Role::Keep => "is kept in a store by",
                    _ if contract.opaque => "is handed to the command of",
                    _ if networked => {
                        "reaches the network (principle 5: a stage with network is a way out for what it reads) through"
                    }
                    _ => continue,
                };
                // What a command printed from private data is that command's finding, unless an
                // `allow` accepted the command: then this is a second way out.
                if !contract.opaque
                    && through_command(cx, flow, &input.reference)
                        .is_some_and(|c| !allowed(p, c, self.id()))
                {
                    continue;
                }
                let path = flow.path(p, cx.dag, i, input, Kind::Private);
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "private `{}` {how} `{}` unsealed",
                            input.reference, stage.name.value
                        ),
                        Label::new(input.span, "private data leaves the run here"),
                    )
                    .flow(path)
                    .help(if networked {
                        format!(
                            "take `network=` off `{}`: a reviewer's only way out is then the model API, through reviewflow's proxy; or give it no private data",
                            stage.name.value
                        )
                    } else {
                        help(cx, input, &stage.name.value)
                    })
                    .confidence(Confidence::High)
                    .stage(&stage.name.value),
                );
            }
        }
        implicit(cx, flow, out);
        bits(cx, flow, out);
    }
}

/// Whether an `allow` with a reason accepts `check`'s findings on stage `stage`.
fn allowed(p: &Pipeline, stage: usize, check: &str) -> bool {
    p.stages[stage].allows.iter().chain(&p.allows).any(|a| {
        a.check.value == check
            && a.reason
                .as_ref()
                .is_some_and(|r| !r.value.trim().is_empty())
    })
}

/// The command (an opaque stage) that was handed the private data `reference` carries, if the
/// data went through one.
fn through_command(cx: &Context<'_>, flow: &Flow, reference: &Reference) -> Option<usize> {
    let p = cx.pipeline;
    let mut current = cx.dag.stage_index(&reference.stage)?;
    for _ in 0..p.stages.len() {
        let contract = cx.registry.get(&p.stages[current].uses.value)?;
        let private_in = flow.inputs[current].iter().find(|i| i.labels.private);
        if contract.opaque && private_in.is_some() {
            return Some(current);
        }
        current = cx.dag.stage_index(&private_in?.reference.stage)?;
    }
    None
}

/// A fix that keeps the pipeline working: publish the reviewer's summary, keep the sealed blob,
/// give a command the summary.
fn help(cx: &Context<'_>, input: &Input, stage: &str) -> String {
    let p = cx.pipeline;
    let r = &input.reference;
    let Some(flow) = cx.flow else {
        return "seal it first (a `std/seal` stage) and keep the sealed blob".into();
    };
    // Outputs that are not private of the producer, or of the stage that made the private data
    // (a command's output derived from a conversation: the reviewer's comment and findings).
    let public_of = |stage: &str| -> Vec<String> {
        let Some(pi) = cx.dag.stage_index(stage) else {
            return Vec::new();
        };
        flow.outputs[pi]
            .iter()
            .filter(|(name, labels)| {
                !labels.private
                    && name != "ok"
                    && cx
                        .outputs_of(stage)
                        .iter()
                        .any(|(n, t)| n == name && t.name() != "bool")
            })
            .map(|(name, _)| format!("`{stage}.{name}`"))
            .collect()
    };
    let mut public = public_of(&r.stage);
    if public.is_empty() {
        let mut current = r.clone();
        for _ in 0..p.stages.len() {
            // Back through the commands that passed it on, to the stage that made it.
            let Some(next) = cx
                .dag
                .stage_index(&current.stage)
                .filter(|&pi| {
                    cx.registry
                        .get(&p.stages[pi].uses.value)
                        .is_some_and(|c| c.opaque)
                })
                .and_then(|pi| flow.inputs[pi].iter().find(|i| i.labels.private))
            else {
                break;
            };
            current = next.reference.clone();
        }
        if current.stage != r.stage {
            public = public_of(&current.stage);
        }
    }
    // A sealer that already seals this value, or a private value that carries it (a review's
    // conversation continues the restored one), and what it makes.
    let sealed: Option<(String, Option<String>)> =
        p.stages.iter().enumerate().find_map(|(si, s)| {
            let contract = cx.registry.get(&s.uses.value)?;
            if !contract.children.iter().any(|c| c.role == Role::Binding) {
                return None;
            }
            let input = flow.inputs[si]
                .iter()
                .find(|i| i.labels.private && carries(cx, flow, &i.reference, r))?;
            let blob = flow.outputs[si].iter().find(|(n, l)| {
                !l.private
                    && n != "ok"
                    && cx
                        .outputs_of(&s.name.value)
                        .iter()
                        .any(|(o, t)| o == n && t.name() != "bool")
            })?;
            let via = (input.reference.stage != r.stage || input.reference.output != r.output)
                .then(|| input.reference.to_string());
            Some((format!("`{}.{}`", s.name.value, blob.0), via))
        });
    let alternatives = match public.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        [rest @ .., last] => Some(format!("{} or {last}", rest.join(", "))),
    };
    let seal_it = match &sealed {
        Some((blob, None)) => format!("keep {blob} instead: it is `{r}` sealed"),
        Some((blob, Some(via))) => {
            format!("keep {blob} instead: it seals `{via}`, which carries `{r}`")
        }
        None => format!(
            "seal it first (a `std/seal` stage with `input \"{r}\"`, waiting for a clean scan) and keep its blob"
        ),
    };
    match input.role {
        Role::Publish => match alternatives {
            Some(a) => format!(
                "publish {a} instead: what the reviewer wrote for readers, not its conversation"
            ),
            None => format!("do not publish `{r}`; {seal_it}"),
        },
        Role::Keep => seal_it,
        _ => match alternatives {
            Some(a) => format!(
                "give `{stage}` {a} instead of the conversation; a command that must keep the conversation gets {}",
                sealed
                    .as_ref()
                    .map_or("the sealed blob", |(b, _)| b.as_str())
            ),
            None => format!("do not hand `{r}` to a command; {seal_it}"),
        },
    }
}

/// Whether the private value `value` carries `source`: it is `source`, or a stage made it from
/// private inputs one of which carries `source`.
fn carries(cx: &Context<'_>, flow: &Flow, value: &Reference, source: &Reference) -> bool {
    let same = |a: &Reference, b: &Reference| a.stage == b.stage && a.output == b.output;
    let mut stack = vec![value.clone()];
    let mut seen: Vec<String> = Vec::new();
    while let Some(v) = stack.pop() {
        if same(&v, source) {
            return true;
        }
        let Some(pi) = cx.dag.stage_index(&v.stage) else {
            continue;
        };
        if seen.contains(&v.stage) {
            continue;
        }
        seen.push(v.stage.clone());
        stack.extend(
            flow.inputs[pi]
                .iter()
                .filter(|i| i.labels.private)
                .map(|i| i.reference.clone()),
        );
    }
    false
}

/// What a label says a value is derived from, for a message.
fn derived_from(p: &Pipeline, labels: &crate::flow::LabelSet) -> Option<String> {
    let mut parts = Vec::new();
    if labels.private {
        parts.push("private data".to_string());
    }
    let secrets: Vec<String> = labels
        .secrets()
        .filter_map(|k| p.secrets.get(k))
        .map(|s| format!("`{}`", s.name.value))
        .collect();
    match secrets.as_slice() {
        [] => {}
        [one] => parts.push(format!("secret {one}")),
        many => parts.push(format!("secrets {}", many.join(", "))),
    }
    (!parts.is_empty()).then(|| parts.join(" and "))
}

/// A `when` on a private or secret-derived value: one bit per gated stage leaves the run.
fn implicit(cx: &Context<'_>, flow: &Flow, out: &mut Vec<Finding>) {
    let p = cx.pipeline;
    for (i, stage) in p.stages.iter().enumerate() {
        let Some(when) = &stage.when else { continue };
        let mut refs: Vec<&Reference> = Vec::new();
        when.value.collect_references(&mut refs);
        let mut seen: Vec<String> = Vec::new();
        for r in refs {
            let key = r.to_string();
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            let Some(pi) = cx.dag.stage_index(&r.stage) else {
                continue;
            };
            let Some(labels) = flow.output(pi, &r.output) else {
                continue;
            };
            let Some(what) = derived_from(p, labels) else {
                continue;
            };
            let kind = if labels.private {
                Kind::Private
            } else {
                match labels.secrets().next() {
                    Some(k) => Kind::Secret(k),
                    None => continue,
                }
            };
            let input = Input {
                child: 0,
                role: Role::Config,
                reference: r.clone(),
                interpolated: false,
                span: r.span,
                labels: labels.clone(),
                folder: None,
                outside: None,
            };
            let name = &stage.name.value;
            out.push(
                Finding::new(
                    PrivateEgress.id(),
                    Severity::Warning,
                    format!(
                        "whether `{name}` runs depends on `{r}`, which is derived from {what}: which stages ran is public, so each run publishes one bit of it"
                    ),
                    Label::new(r.span, format!("`{name}` runs or not on this")),
                )
                .related(Label::new(p.stages[pi].name.span, format!("`{}` computes `{r}`", r.stage)))
                .flow(flow.path(p, cx.dag, i, &input, kind))
                .help(format!(
                    "decide from data that may be public (a list kept in the repository, not one read with the secret or from private data), or from a value a contract declassifies (`std/scan`'s `clean`); if this bit may be public, say why: `allow \"private-egress\" reason=\"…\"` on `{name}`"
                ))
                .confidence(Confidence::Medium)
                .stage(name),
            );
        }
    }
}

/// Bits of a secret gathered by a stage out of its scope that publishes or has network: each
/// reference it reads whose value a program holding the secret could choose (its `ok`, an output
/// its contract labels with nothing, or what depends on them) is one bit a run.
fn bits(cx: &Context<'_>, flow: &Flow, out: &mut Vec<Finding>) {
    use crate::contract::Effect;
    let p = cx.pipeline;
    // Bits matter only where a stage publishes or has network.
    let egress = p.stages.iter().any(|s| {
        !s.network.is_empty()
            || cx
                .registry
                .get(&s.uses.value)
                .is_some_and(|c| c.has_effect(Effect::Publishes))
    });
    if !egress {
        return;
    }
    let Ok(order) = petgraph::algo::toposort(&cx.dag.graph, None) else {
        return;
    };
    let runs_program = |i: usize| {
        cx.registry
            .get(&p.stages[i].uses.value)
            .is_some_and(|c| c.opaque || c.has_effect(Effect::Executes))
    };
    // The references stage `i` reads that are bits of its producer's outcome (its `ok`, or a
    // `bool` it produced), in its data and its `when`, with the producer's index.
    let reads = |i: usize| -> Vec<(&Reference, usize)> {
        let mut refs: Vec<&Reference> = flow.inputs[i].iter().map(|x| &x.reference).collect();
        if let Some(when) = &p.stages[i].when {
            when.value.collect_references(&mut refs);
        }
        refs.into_iter()
            .filter_map(|r| {
                let pi = cx.dag.stage_index(&r.stage)?;
                let bit = r.output == "ok"
                    || cx.outputs.get(pi).is_some_and(|o| {
                        o.iter()
                            .any(|(n, t)| *n == r.output && *t == OutputType::Bool)
                    });
                bit.then_some((r, pi))
            })
            .collect()
    };
    // Secrets whose bits decide stage i's outcome: those its program holds (unless holding one
    // is itself a finding, `check::held`), and those of the bits it reads.
    let mut outcome: Vec<Vec<usize>> = vec![Vec::new(); p.stages.len()];
    for node in order {
        let i = cx.dag.graph[node];
        let mut set: Vec<usize> = if runs_program(i) {
            flow.program_held[i]
                .iter()
                .copied()
                .filter(|&k| super::held::reported_holding(cx, flow, i, k).is_none())
                .collect()
        } else {
            Vec::new()
        };
        for (_, pi) in reads(i) {
            set.extend(outcome[pi].iter().copied());
        }
        set.sort_unstable();
        set.dedup();
        outcome[i] = set;
    }
    for (i, stage) in p.stages.iter().enumerate() {
        let Some(contract) = cx.registry.get(&stage.uses.value) else {
            continue;
        };
        let egress = if contract.has_effect(Effect::Publishes) {
            "publishes"
        } else if !stage.network.is_empty() {
            "has network"
        } else {
            continue;
        };
        let refs = reads(i);
        for (k, secret) in p.secrets.iter().enumerate() {
            if secret
                .visible_to
                .iter()
                .any(|v| v.value == stage.name.value)
            {
                continue;
            }
            let mut sources: Vec<&Reference> = Vec::new();
            for &(r, pi) in &refs {
                // A value that carries the secret itself is `secret-flow`'s finding.
                let carries = flow
                    .output(pi, &r.output)
                    .is_some_and(|l| l.has(Kind::Secret(k)));
                if carries || !outcome[pi].contains(&k) {
                    continue;
                }
                if !sources.iter().any(|s| s.to_string() == r.to_string()) {
                    sources.push(r);
                }
            }
            let Some(first) = sources.first() else {
                continue;
            };
            let name = &stage.name.value;
            let listed: Vec<String> = sources.iter().map(|r| format!("`{r}`")).collect();
            let n = sources.len();
            let mut finding = Finding::new(
                PrivateEgress.id(),
                Severity::Warning,
                format!(
                    "`{name}` {egress} and reads {} that a program holding secret `{}` decides ({}): up to {n} bit{} of `{}` a run leave its scope (labels never vanish silently)",
                    if n == 1 { "a value" } else { "values" },
                    secret.name.value,
                    listed.join(", "),
                    if n == 1 { "" } else { "s" },
                    secret.name.value,
                ),
                Label::new(first.span, "decided by a program that holds the secret"),
            )
            .related(Label::new(
                secret.visible_to_span.unwrap_or(secret.name.span),
                format!("`{}` is in scope only here", secret.name.value),
            ));
            for r in sources.iter().skip(1).take(7) {
                finding = finding.related(Label::new(r.span, "another bit"));
            }
            out.push(
                finding
                    .help(format!(
                        "let `{name}` read what no program holding `{}` decides, or keep it from publishing and from the network; if these bits may be public, say why: `allow \"private-egress\" reason=\"…\"` on `{name}`",
                        secret.name.value
                    ))
                    .confidence(Confidence::Medium)
                    .stage(name),
            );
        }
    }
}
