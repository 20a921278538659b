//! `reviewer-credential`: a reviewer whose model's CLI authenticates with known credentials
//! (its contract lists them) is given secrets under those names only. Its model reads the change,
//! and a prompt injection can make it print anything in its environment: only its own credential
//! may be there. A secret the stage may not see, or a key of a stage that runs no program, is
//! `secret-scope`'s finding and is not reported twice.

use super::reviewer::{StageReviewer, either, literal};
use super::{Check, Context};
use crate::contract::{Effect, Role};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Pipeline, Value};
use crate::suggest::{did_you_mean, help_text};

pub struct ReviewerCredential;

impl Check for ReviewerCredential {
    fn principle(&self) -> super::Principle {
        super::Principle::UnknownAuthority
    }
    fn id(&self) -> &'static str {
        "reviewer-credential"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "a model reviewer is given no secret but its model's own credential, and no variable its client is not known to read harmlessly"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        for stage in &p.stages {
            let Some(reviewer) = StageReviewer::of(cx, stage) else {
                continue;
            };
            self.settings(stage, &reviewer, out);
            self.moved_keys(cx, stage, &reviewer, out);
            self.crossed_keys(cx, stage, &reviewer, out);
            let credentials = reviewer.kind.credentials;
            if credentials.is_empty() {
                continue;
            }
            let name = stage.name.value.as_str();
            let kind = reviewer.kind.name;
            for child in &stage.children {
                let slot = reviewer
                    .contract
                    .child_spec(&child.name.value)
                    .is_some_and(|s| s.role == Role::SecretSlot);
                if !slot {
                    continue;
                }
                let Some(var) = child
                    .args
                    .iter()
                    .find(|a| matches!(a.value, Value::String(_)))
                else {
                    continue;
                };
                let var_name = var.value.as_str().unwrap_or_default();
                if credentials.contains(&var_name) {
                    continue;
                }
                let own = either(credentials);
                let owner = reviewer
                    .contract
                    .reviewers()
                    .iter()
                    .find(|k| k.credentials.contains(&var_name));
                // Every secret of the line: several are a model key's accounts.
                let secrets = child.args.iter().filter_map(|a| match &a.value {
                    Value::Secret(s) => Some(s.as_str()),
                    _ => None,
                });
                for secret in secrets {
                    if reported_by_secret_scope(cx, p, secret, name) {
                        continue;
                    }
                    let (at, help) = match owner {
                        Some(other) => (
                            format!("`{var_name}` is `{}`'s credential", other.name),
                            format!(
                                "give `{kind}` its own credential ({own}), or use `reviewer \"{}\"` with this one",
                                other.name
                            ),
                        ),
                        None => (
                            format!("`{var_name}` is not a credential of `{kind}`"),
                            match help_text(&did_you_mean(var_name, credentials.iter().copied())) {
                                Some(typo) => format!("{typo} `{kind}` reads only {own}"),
                                None => format!(
                                    "give `{kind}` only its own credential ({own}); use `{secret}` in a stage of its own, and take `{name}` out of its `visible-to`"
                                ),
                            },
                        ),
                    };
                    out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "the `{kind}` reviewer of `{name}` is given secret `{secret}` as `{var_name}`: only its model's own credential may reach its CLI"
                        ),
                        Label::new(var.span, at),
                    )
                    .related(Label::new(
                        reviewer.name_span,
                        format!("`{kind}` authenticates with {own}"),
                    ))
                    .help(help)
                    .confidence(Confidence::High)
                    .stage(name),
                );
                }
            }
        }
    }
}

/// Whether `url` names this machine (`http://127.0.0.1:8080`, `localhost`, `[::1]`): a gateway on
/// the runner, which the job runs.
fn on_this_machine(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = if let Some(v6) = host.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    };
    host == "localhost" || host == "::1" || host.starts_with("127.")
}

impl ReviewerCredential {
    /// A key given under a model's credential goes to that model's API, by the proxy: a secret
    /// known by its variable as another vendor's key (`secret … env="ANTHROPIC_API_KEY"` given
    /// as `secret-env "OPENAI_API_KEY" …`, an account among others included) would reach a
    /// vendor whose key it is not. An API an `env` moves elsewhere is `moved_keys`'s, and a
    /// variable the reviewer does not read is reported as such below.
    fn crossed_keys(
        &self,
        cx: &Context<'_>,
        stage: &crate::model::Stage,
        reviewer: &StageReviewer<'_>,
        out: &mut Vec<Finding>,
    ) {
        let p = cx.pipeline;
        let name = stage.name.value.as_str();
        let own = reviewer.kind.credentials;
        for child in &stage.children {
            let slot = reviewer
                .contract
                .child_spec(&child.name.value)
                .is_some_and(|s| s.role == Role::SecretSlot);
            let ([var, given @ ..], true) = (child.args.as_slice(), slot) else {
                continue;
            };
            let Some(var_name) = var.value.as_str() else {
                continue;
            };
            if !own.is_empty() && !own.contains(&var_name) {
                continue;
            }
            let Some(api) = reviewer
                .contract
                .reviewers()
                .iter()
                .find(|k| k.vendor.is_some() && k.credentials.contains(&var_name))
            else {
                continue;
            };
            let (Some(api_vendor), moved) = (
                api.vendor,
                api.api_url.is_some_and(|url| {
                    stage.children.iter().any(|c| {
                        reviewer
                            .contract
                            .child_spec(&c.name.value)
                            .is_some_and(|s| s.role == Role::Environment)
                            && c.args.first().and_then(|a| a.value.as_str()) == Some(url)
                    })
                }),
            ) else {
                continue;
            };
            if moved {
                continue;
            }
            for value in given {
                let Value::Secret(secret_name) = &value.value else {
                    continue;
                };
                let Some(secret) = p.secret(secret_name) else {
                    continue;
                };
                let source = secret.env.value.as_str();
                let Some(vendor) = reviewer.contract.keys_vendor([source]) else {
                    continue;
                };
                if vendor == api_vendor || reported_by_secret_scope(cx, p, secret_name, name) {
                    continue;
                }
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "`{name}` sends secret `{secret_name}`, read from `${source}` (a key of `{vendor}`), to `{api_vendor}`'s API as `{var_name}`: the key is another vendor's (principle 2)"
                        ),
                        Label::new(value.span, format!("a key of `{vendor}` given to `{api_vendor}`")),
                    )
                    .related(Label::new(secret.env.span, format!("a key of `{vendor}`, by its variable")))
                    .help(format!(
                        "give `{var_name}` only keys of `{api_vendor}` (each account a secret read from a variable of its own); a key of `{vendor}` goes to a reviewer of `{vendor}`"
                    ))
                    .confidence(Confidence::High)
                    .stage(name),
                );
            }
        }
    }

    /// A reviewer whose model API an `env` moves to another host sends its key there: a key
    /// read from a vendor's own variable (`secret … env="ANTHROPIC_API_KEY"`: a key known by the
    /// variable it comes from, principle 2) then reaches a host that is not the vendor's. A key
    /// read from another variable is the gateway's, and a gateway on this machine is the job's.
    fn moved_keys(
        &self,
        cx: &Context<'_>,
        stage: &crate::model::Stage,
        reviewer: &StageReviewer<'_>,
        out: &mut Vec<Finding>,
    ) {
        let (Some(var), Some(url)) = (reviewer.kind.api_url, reviewer.moved_to) else {
            return;
        };
        // A URL an input fills in is the environment's to choose: any host.
        let written = literal(&url.value);
        let written = written.as_deref();
        if written.is_some_and(on_this_machine) {
            return;
        }
        let shown = written.map_or_else(
            || "a host an input chooses".to_string(),
            |u| format!("`{u}`"),
        );
        // `vendor=` says whose model answers, not who may hold the key: a gateway that runs a
        // vendor's model is still another host. One declared nowhere, on a stage that says whose
        // its reviewer must not be, is `reviewer-vendor`'s finding (one root cause, one finding).
        let declared = reviewer
            .child
            .prop(super::reviewer::VENDOR)
            .and_then(|v| v.value.as_str());
        if declared.is_none()
            && stage
                .children_named("reviewer-vendor-differs-from")
                .next()
                .is_some()
        {
            return;
        }
        let name = &stage.name.value;
        for secret_name in stage.secrets_named() {
            let Some(secret) = cx
                .pipeline
                .secrets
                .iter()
                .find(|s| s.name.value == secret_name.value)
            else {
                continue;
            };
            let source = secret.env.value.as_str();
            let Some(vendor) = reviewer.contract.keys_vendor([source]) else {
                continue;
            };
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`{name}` sends secret `{}`, read from `${source}` (a key of `{vendor}`), to {shown}, where its `{var}` moves the model API: the key is the vendor's, the host is not (principle 2)",
                        secret.name.value
                    ),
                    Label::new(url.span, "another host receives the key"),
                )
                .related(Label::new(secret.env.span, format!("a key of `{vendor}`, by its variable")))
                .help(format!(
                    "give the gateway a key of its own: a secret read from the gateway's variable (`secret \"gateway-key\" env=\"LLM_GATEWAY_KEY\"`), given as `secret-env \"{}\" \"gateway-key\"`; or remove `{var}` to reach `{vendor}`'s API. If the host is `{vendor}`'s, say so with an `allow`",
                    reviewer.kind.credentials.first().copied().unwrap_or(source)
                ))
                .confidence(Confidence::High)
                .stage(name),
            );
        }
    }

    /// A model's client reads its configuration from its environment: `env` gives it only the
    /// variables its kind lists as changing its model, its limits or its output
    /// (`ReviewerKind::settings`, an allow-list), since any other may send the conversation
    /// elsewhere (`ANTHROPIC_LOG` prints every request on stderr, a proxy variable routes it
    /// through another host). A name the stage refuses when it starts (a credential, a variable
    /// reviewflow sets) is `run-refusal`'s finding, not reported twice.
    fn settings(
        &self,
        stage: &crate::model::Stage,
        reviewer: &StageReviewer<'_>,
        out: &mut Vec<Finding>,
    ) {
        let kind = reviewer.kind;
        // A reviewer whose program the pipeline names has no list of its own, but a variable of
        // a model client's family (`ANTHROPIC_…`, `OPENAI_…`: the words its credentials start
        // with) is that client's, and judged by its list: the program may well be built on it.
        let family = |var: &str| -> Option<&'static crate::contract::ReviewerKind> {
            reviewer.contract.reviewer_kinds.iter().find(|k| {
                k.settings.is_some()
                    && k.credentials.iter().any(|c| {
                        c.split_once('_')
                            .is_some_and(|(first, _)| var.starts_with(&format!("{first}_")))
                    })
            })
        };
        let refused: Vec<crate::span::Span> = reviewer
            .contract
            .refusals
            .map(|r| r(stage).into_iter().map(|(span, _)| span).collect())
            .unwrap_or_default();
        let name = stage.name.value.as_str();
        for child in &stage.children {
            let environment = reviewer
                .contract
                .child_spec(&child.name.value)
                .is_some_and(|s| s.role == Role::Environment);
            if !environment {
                continue;
            }
            let Some(var) = child.args.first() else {
                continue;
            };
            let Some(var_name) = var.value.as_str() else {
                continue;
            };
            let judge = match kind.settings {
                Some(_) => kind,
                None => match family(var_name) {
                    Some(client) => client,
                    None => continue,
                },
            };
            if judge.admits_setting(var_name) || refused.contains(&var.span) {
                continue;
            }
            let whose = if std::ptr::eq(judge, kind) {
                "which its client is not known to read harmlessly".to_owned()
            } else {
                format!(
                    "a variable of `{}`'s client, which that client is not known to read harmlessly",
                    judge.name
                )
            };
            // A value made of inputs or another stage's outputs is the flow checks' to judge
            // (`untrusted-input`, `secret-flow`): one root cause, one finding.
            let interpolated = child.args.iter().skip(1).any(|v| match &v.value {
                Value::Template(t) => {
                    t.references().next().is_some() || t.inputs().next().is_some()
                }
                Value::Reference(_) => true,
                _ => false,
            });
            if interpolated {
                continue;
            }
            out.push(
                Finding::new(
                    self.id(),
                    Severity::Warning,
                    format!(
                        "the `{}` reviewer of `{name}` is given `{var_name}`, {whose}: a model's client takes its configuration from its environment, and such a variable may send the conversation elsewhere (a debug log, a proxy, a telemetry endpoint)",
                        kind.name
                    ),
                    Label::new(var.span, "not a known setting of the client"),
                )
                .related(Label::new(
                    reviewer.name_span,
                    format!("`{}` takes settings of its model, limits and output only", judge.name),
                ))
                .help(format!(
                    "give the reviewer only the variables docs/reviewers.md lists for `{}` (its locale, `PATH`, its API's base URL, and settings of its model, limits and output); a variable another program needs belongs in that program's stage",
                    judge.name
                ))
                .confidence(Confidence::Medium)
                .stage(name),
            );
        }
    }
}

/// `secret-scope` reports a secret the stage may not see, and a key that a stage running no
/// program uses (a seal's, a restore's) held by one that runs one.
fn reported_by_secret_scope(cx: &Context<'_>, p: &Pipeline, secret: &str, stage: &str) -> bool {
    let Some(declared) = p.secret(secret) else {
        return true; // an unknown reference
    };
    if !declared.visible_to.iter().any(|v| v.value == stage) {
        return true;
    }
    p.stages.iter().any(|s| {
        let runs_program = cx
            .registry
            .get(&s.uses.value)
            .is_some_and(|c| c.opaque || c.has_effect(Effect::Executes));
        s.name.value != stage
            && !runs_program
            && s.secrets_named().iter().any(|n| n.value == secret)
    })
}
