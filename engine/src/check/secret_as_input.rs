//! `secret-as-input`: a credential enters the run as an `input` rather than a `secret`. An input
//! has no scope (any stage, store name or forge setting may interpolate it), its value is written
//! to `manifest.json` and compared on resume, and it is redacted only when it happens to equal a
//! declared secret. Three ways in:
//!
//! - the input reads the variable a declared secret reads (`input "t" env="DEPLOY_TOKEN"` beside
//!   `secret "deploy-token" env="DEPLOY_TOKEN"`);
//! - the input's variable is named as a credential ([`credential_word`]);
//! - its `default` is a credential, as one of the registry's detectors sees it (the stdlib
//!   registers `std/scan`'s).
//!
//! And each `{input}` that carries such a value onto a command line is a finding of its own: a
//! command line is visible to the other processes of the machine.
//!
//! Beyond inputs, a credential written anywhere in the file (an `env` value, an argument, a
//! setting, a comment) is one: the file is published with the repository, whatever slot the
//! text is in, so every line is read with the same detectors, not a list of places.

use super::{Check, Context};
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Input, InputType, Pipeline, Secret, Value};
use crate::span::Span;

pub struct SecretAsInput;

/// Why an input holds a credential.
enum Cause<'a> {
    /// It reads the variable of this secret.
    SecretVariable(&'a Secret),
    /// Its variable is named as a credential.
    Named { what: String, span: Span },
    /// Its default is a credential (the detector's label: "an AWS access key").
    Default(String),
}

impl Cause<'_> {
    /// The related label that says why, on an `{input}`'s finding.
    fn label(&self, input: &Input) -> Label {
        let name = &input.name.value;
        match self {
            Self::SecretVariable(s) => Label::new(
                input.env.as_ref().map_or(input.name.span, |e| e.span),
                format!(
                    "`{name}` reads `${}`, the variable of secret `{}`",
                    s.env.value, s.name.value
                ),
            ),
            Self::Named { what, span } => {
                Label::new(*span, format!("`{name}` holds a credential: {what}"))
            }
            Self::Default(label) => Label::new(
                input.default.as_ref().map_or(input.name.span, |d| d.span),
                format!("the default of `{name}` is {label}"),
            ),
        }
    }

    /// What stage `stage` should be given instead of `{input}`.
    fn instead(&self, input: &Input, stage: &str) -> String {
        match self {
            Self::SecretVariable(s) => format!(
                "the secret itself, `secret-env \"{}\" \"{}\"` (with \"{stage}\" in the `visible-to` of `{}`)",
                s.env.value, s.name.value, s.name.value
            ),
            _ => {
                let name = &input.name.value;
                let var = input.env.as_ref().map_or("VARIABLE", |e| e.value.as_str());
                format!(
                    "a secret, `secret \"{name}\" env=\"{var}\" {{ visible-to \"{stage}\" }}`, as `secret-env \"{var}\" \"{name}\"`"
                )
            }
        }
    }
}

/// Words that end a credential's name (`DEPLOY_TOKEN`, `CLIENT_SECRET`, `DB_PASSWORD`, `API_KEY`,
/// `GH_PAT`), compared in lower case.
const CREDENTIAL_WORDS: &[&str] = &[
    "token",
    "secret",
    "password",
    "passwd",
    "passphrase",
    "key",
    "apikey",
    "pat",
    "credential",
    "credentials",
    // A webhook's URL, a DSN, an auth string and a cookie are bearer credentials themselves.
    "webhook",
    "dsn",
    "auth",
    "cookie",
];

/// Words before `URL` or `URI` that make it a credential: a webhook's URL is its key, and a
/// database's or a broker's connection URL holds its password (`SLACK_WEBHOOK_URL`,
/// `DATABASE_URL`); `TOKEN_URL` and `AUTH_URL` name where a credential is asked for, not one.
const CREDENTIAL_URLS: &[&str] = &[
    "webhook",
    "database",
    "db",
    "redis",
    "mongo",
    "mongodb",
    "postgres",
    "postgresql",
    "mysql",
    "amqp",
    "broker",
    "connection",
];

/// Endings of one word that make it a credential's name on their own (`GHTOKEN`, `APIKEY`).
const CREDENTIAL_ENDINGS: &[&str] = &["token", "secret", "password", "passwd", "apikey"];

/// Words that may follow the credential word and still name its value: encodings and versions
/// (`SECRET_KEY_BASE`, `SIGNING_KEY_B64`, `API_TOKEN_V2`).
const VALUE_SUFFIXES: &[&str] = &["value", "b64", "base64", "base", "raw", "pem", "hex"];

/// A word before `KEY` or `TOKEN` that makes it something other than a credential: a public key,
/// a database or cache key, a Jira key, a pagination token, a budget of model tokens.
const NOT_CREDENTIAL_QUALIFIERS: &[(&str, &[&str])] = &[
    (
        "key",
        &[
            "public",
            "primary",
            "foreign",
            "sort",
            "cache",
            "partition",
            "routing",
            "shard",
            "idempotency",
            "dedup",
            "dedupe",
            "lookup",
            "group",
            "concurrency",
            "issue",
            "project",
        ],
    ),
    (
        "token",
        &["page", "next", "continuation", "cancellation", "max", "min"],
    ),
];

/// The words of a name: split at every character that is not a letter or a digit and where a
/// lower-case letter meets an upper-case one (`deployToken`), in lower case.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            previous_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && previous_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        word.push(c.to_ascii_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// A version or a number (`2`, `v2`): it does not change what a name is.
fn is_version(word: &str) -> bool {
    let digits = word.strip_prefix('v').unwrap_or(word);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The word that makes `name` a credential's name, if it is one. The name's last word decides,
/// once encodings and versions are dropped from its end: `DEPLOY_TOKEN`, `clientSecret`,
/// `SECRET_KEY_BASE` and `GH_PAT` are credentials; `KEYBOARD_LAYOUT`, `PRIMARY_KEY_COLUMN`,
/// `AWS_ACCESS_KEY_ID`, `TOKEN_URL`, `SECRET_NAME`, `MAX_TOKENS` and `PUBLIC_KEY` are not.
pub(crate) fn credential_word(name: &str) -> Option<String> {
    let words = words(name);
    let mut end = words.len();
    while end > 1
        && (is_version(&words[end - 1]) || VALUE_SUFFIXES.contains(&words[end - 1].as_str()))
    {
        end -= 1;
    }
    let last = words.get(end.checked_sub(1)?)?.as_str();
    if matches!(last, "url" | "uri")
        && let Some(before) = end.checked_sub(2).and_then(|i| words.get(i))
        && CREDENTIAL_URLS.contains(&before.as_str())
    {
        return Some(format!("{}_{}", before, last).to_ascii_uppercase());
    }
    let credential = CREDENTIAL_WORDS.contains(&last)
        || CREDENTIAL_ENDINGS
            .iter()
            .any(|e| last.len() > e.len() && last.ends_with(e));
    if !credential {
        return None;
    }
    if let (Some(before), Some((_, qualifiers))) = (
        end.checked_sub(2).and_then(|i| words.get(i)),
        NOT_CREDENTIAL_QUALIFIERS.iter().find(|(w, _)| *w == last),
    ) && qualifiers.contains(&before.as_str())
    {
        return None;
    }
    Some(last.to_ascii_uppercase())
}

/// Whether `line` may hold a credential the detectors know, cheaply, so that their patterns are
/// built only for a file that may hold one: every such credential, encoded or not, has a run of
/// at least 20 characters of letters, digits and `_+/=-` with a letter and a digit in it, but a
/// private key's header, which names itself.
fn might_hold_credential(line: &[u8]) -> bool {
    const RUN: usize = 20;
    if line.windows(11).any(|w| w == b"PRIVATE KEY") {
        return true;
    }
    let (mut len, mut letter, mut digit) = (0, false, false);
    for &b in line {
        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'/' | b'=' | b'-') {
            len += 1;
            letter |= b.is_ascii_alphabetic();
            digit |= b.is_ascii_digit();
            if len >= RUN && letter && digit {
                return true;
            }
        } else {
            (len, letter, digit) = (0, false, false);
        }
    }
    false
}

/// The secret whose variable `input` reads.
fn secret_of_variable<'a>(p: &'a Pipeline, input: &Input) -> Option<&'a Secret> {
    let env = input.env.as_ref()?;
    p.secrets.iter().find(|s| s.env.value == env.value)
}

impl SecretAsInput {
    /// The causes that make `input` hold a credential, each reported once.
    fn causes<'a>(&self, cx: &Context<'a>, input: &'a Input) -> Vec<Cause<'a>> {
        let mut causes = Vec::new();
        if let Some(secret) = secret_of_variable(cx.pipeline, input) {
            causes.push(Cause::SecretVariable(secret));
        } else if let Some(env) = &input.env
            && !matches!(input.ty.value, InputType::Int | InputType::Bool)
            && let Some(word) = credential_word(&env.value)
        {
            // The variable, not the input's own name: `input "signing-key"
            // env="SIGNING_KEY_FILE"` holds a path.
            causes.push(Cause::Named {
                what: format!("its variable `${}` is named as one (`{word}`)", env.value),
                span: env.span,
            });
        }
        if let Some(default) = &input.default
            && let Some(detector) = cx.registry.detect(default.value.as_bytes())
        {
            causes.push(Cause::Default(detector.label().to_string()));
        }
        causes
    }

    fn report(&self, input: &Input, cause: &Cause<'_>, out: &mut Vec<Finding>) {
        let name = &input.name.value;
        let finding = match cause {
            Cause::SecretVariable(s) => {
                let (secret, env) = (&s.name.value, &s.env.value);
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "input `{name}` reads `${env}`, the variable of secret `{secret}`: the secret enters the run as a plain input"
                    ),
                    Label::new(
                        input.env.as_ref().map_or(input.name.span, |e| e.span),
                        "read as an input here",
                    ),
                )
                .related(Label::new(s.env.span, format!("secret `{secret}` is read from `${env}`")))
                .help(format!(
                    "an input has no scope: any stage may interpolate it and its value is written to manifest.json. Remove the input and give the value to the stages that need it as the secret: `secret-env \"{env}\" \"{secret}\"` in each, listed in the `visible-to` of `{secret}`"
                ))
                .confidence(Confidence::High)
            }
            Cause::Named { what, span } => {
                let var = input
                    .env
                    .as_ref()
                    .map_or("VARIABLE", |e| e.value.as_str());
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!("input `{name}` holds a credential: {what}"),
                    Label::new(*span, "named as a credential"),
                )
                .help(format!(
                    "declare it as a secret, which only the stages in its `visible-to` hold and every log redacts: `secret \"{name}\" env=\"{var}\" {{ visible-to \"…\" }}`, and give it to those stages with `secret-env \"{var}\" \"{name}\"` instead of `{{{name}}}`. If the value is no credential, name the variable for what it holds"
                ))
                .confidence(Confidence::Medium)
            }
            Cause::Default(label) => Finding::new(
                self.id(),
                self.severity(),
                format!("the default of input `{name}` is a credential ({label})"),
                Label::new(
                    input.default.as_ref().map_or(input.name.span, |d| d.span),
                    "a credential written in the file",
                ),
            )
            .help(format!(
                "everyone who can read the repository can read this credential: revoke it, keep the new one in the CI's secret store, and declare it as a secret, `secret \"{name}\" env=\"{}\" {{ visible-to \"…\" }}`, given to the stages that need it with `secret-env`; remove the input and its default",
                input.env.as_ref().map_or("VARIABLE", |e| e.value.as_str())
            ))
            .confidence(Confidence::High),
        };
        out.push(finding);
    }

    /// Each line of the file that holds a credential, as a registered detector sees it, but a
    /// line whose input default was reported above (with its cause).
    fn written(&self, cx: &Context<'_>, reported: &mut Vec<Span>, out: &mut Vec<Finding>) {
        let text = cx.source.text();
        let mut offset = 0;
        for line in text.split_inclusive('\n') {
            let start = offset;
            offset += line.len();
            let trimmed = line.trim_end();
            if !might_hold_credential(trimmed.as_bytes())
                || reported
                    .iter()
                    .any(|r| r.offset >= start && r.offset < start + line.len())
            {
                continue;
            }
            let Some(detector) = cx.registry.detect(trimmed.as_bytes()) else {
                continue;
            };
            let lead = trimmed.len() - trimmed.trim_start().len();
            let span = Span::new(start + lead, trimmed.len() - lead);
            reported.push(span);
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "a credential is written in the file ({}): it enters the run as text, not as a secret",
                        detector.label()
                    ),
                    Label::new(span, "a credential written in the file"),
                )
                .help(
                    "everyone who can read the repository can read it, whatever the setting it is in: revoke it, keep the new one in the CI's secret store, declare it as a `secret` read from its variable, and give it to the stages that need it with `secret-env` (or to a forge with `token=`)",
                )
                .confidence(Confidence::High),
            );
        }
    }

    /// Each `{input}` of a credential-holding input on a stage's command line.
    fn command_lines(
        &self,
        cx: &Context<'_>,
        held: &[(&Input, Vec<Cause<'_>>)],
        out: &mut Vec<Finding>,
    ) {
        for stage in &cx.pipeline.stages {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            let stage_name = stage.name.value.as_str();
            for child in &stage.children {
                let on_command_line = contract
                    .child_spec(&child.name.value)
                    .is_some_and(|c| c.role == Role::CommandLine);
                if !on_command_line {
                    continue;
                }
                for value in child.values() {
                    let Value::Template(t) = &value.value else {
                        continue;
                    };
                    for (name, span) in t.inputs() {
                        let Some((input, causes)) = held.iter().find(|(i, _)| i.name.value == name)
                        else {
                            continue;
                        };
                        let Some(cause) = causes.first() else {
                            continue;
                        };
                        out.push(
                            Finding::new(
                                self.id(),
                                self.severity(),
                                format!(
                                    "input `{name}` holds a credential, and `{stage_name}` puts it on its command line"
                                ),
                                Label::new(span, "on the command line here"),
                            )
                            .related(cause.label(input))
                            .help(format!(
                                "a command line is visible to the other processes of the machine (`ps`, /proc) and tools echo it into logs: give `{stage_name}` {} instead of `{{{name}}}`, and have the command read the variable",
                                cause.instead(input, stage_name)
                            ))
                            .confidence(Confidence::High)
                            .stage(stage_name),
                        );
                    }
                }
            }
        }
    }
}

impl Check for SecretAsInput {
    fn principle(&self) -> super::Principle {
        super::Principle::Labels
    }
    fn id(&self) -> &'static str {
        "secret-as-input"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "no credential enters the run but as a secret: not as an input (from a secret's variable, a variable named as a credential, or a default), nor written anywhere in the file"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let mut held = Vec::new();
        for input in cx.pipeline.inputs.iter().filter(|i| !i.builtin) {
            let causes = self.causes(cx, input);
            for cause in &causes {
                self.report(input, cause, out);
            }
            if !causes.is_empty() {
                held.push((input, causes));
            }
        }
        if !held.is_empty() {
            self.command_lines(cx, &held, out);
        }
        let reported: Vec<Span> = held
            .iter()
            .filter(|(_, causes)| causes.iter().any(|c| matches!(c, Cause::Default(_))))
            .filter_map(|(input, _)| input.default.as_ref().map(|d| d.span))
            .collect();
        let mut reported = reported;
        self.written(cx, &mut reported, out);
        self.env_entries(cx, &reported, out);
        self.public_secrets(cx, out);
    }
}

impl SecretAsInput {
    /// The mirror of an input that holds a credential: a `secret` read from a variable a
    /// platform sets itself in every job (principle 3: a variable is a secret's source only if
    /// no registered platform says it is public). Its value is known to whoever reads the job,
    /// so what it keys or signs is open to them: a conversation key read so opens and seals
    /// every conversation.
    fn public_secrets(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        for secret in &cx.pipeline.secrets {
            let var = secret.env.value.as_str();
            let Some(platform) = cx.registry.platforms().find(|p| p.public_variable(var)) else {
                continue;
            };
            let name = &secret.name.value;
            out.push(
                Finding::new(
                    self.id(),
                    Severity::Error,
                    format!(
                        "secret `{name}` is read from `${var}`, which {} sets in every job for anyone who reads the job to know: it is no secret, and what it keys or signs is open to them (principle 3)",
                        platform.title()
                    ),
                    Label::new(secret.env.span, "a variable the platform sets"),
                )
                .help(format!(
                    "read `{name}` from a variable of your own that holds a random secret value (`openssl rand -base64 48`), kept in the platform's secrets"
                ))
                .confidence(Confidence::High),
            );
        }
    }

    /// Every stage's `env` entries, each read once by the rules below.
    fn env_entries(&self, cx: &Context<'_>, reported: &[Span], out: &mut Vec<Finding>) {
        use crate::contract::Role;
        for stage in &cx.pipeline.stages {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            let refused: Vec<Span> = contract
                .refusals
                .map(|r| r(stage).into_iter().map(|(span, _)| span).collect())
                .unwrap_or_default();
            for child in contract.children_in(stage, Role::Environment) {
                let [name, value] = child.args.as_slice() else {
                    continue;
                };
                let Some(var) = name.value.as_str() else {
                    continue;
                };
                let refused = refused.contains(&name.span) || refused.contains(&value.span);
                if !refused {
                    out.extend(self.named_in_env(stage, var, value, reported));
                }
                out.extend(self.referenced_in_env(stage, var, value));
            }
        }
    }

    /// An `env` that gives a stage a value written in the file under a credential's name
    /// (`env "SONAR_TOKEN" "squ_…"`): the name says what it holds, whatever a detector knows of
    /// its shape. A name the stage refuses when it starts is `run-refusal`'s, and a value on a
    /// line `reported` already (a detector knew it) is not reported again.
    fn named_in_env(
        &self,
        stage: &crate::model::Stage,
        var: &str,
        value: &crate::span::Spanned<crate::model::Value>,
        reported: &[Span],
    ) -> Option<Finding> {
        use crate::model::Value;
        // Written whole in the file: a string, or a template of text alone.
        let text = match &value.value {
            Value::String(text) => Some(text.clone()),
            Value::Template(t) => t
                .segments
                .iter()
                .map(|seg| match seg {
                    crate::model::Segment::Literal { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Option<String>>(),
            _ => None,
        }?;
        if text.trim().is_empty() {
            return None;
        }
        let word = credential_word(var)?;
        if reported
            .iter()
            .any(|r| r.offset <= value.span.offset && value.span.end() <= r.end())
        {
            return None;
        }
        let stage_name = stage.name.value.as_str();
        Some(
            Finding::new(
                self.id(),
                self.severity(),
                format!(
                    "`{stage_name}` is given `{var}`, named as a credential (`{word}`), with a value written in the file: it enters the run as text, not as a secret"
                ),
                Label::new(value.span, "a credential written in the file"),
            )
            .help(format!(
                "everyone who can read the repository can read it: revoke it, keep the new one in the CI's secret store, declare it as a secret read from its variable, and give it to `{stage_name}` with `secret-env \"{var}\" \"…\"`; if the value is no credential, name the variable for what it holds"
            ))
            .confidence(Confidence::High)
            .stage(stage_name),
        )
    }

    /// An `env` that gives a stage a credential by reference (`SSH_AUTH_SOCK`, `KUBECONFIG`,
    /// `DOCKER_HOST`, `…_CREDENTIALS_FILE`): the credential reaches the stage's program, and
    /// everything it runs, outside every secret's scope, so `check` cannot say who holds it
    /// (principle 2: an authority not declared can do anything its kind can).
    fn referenced_in_env(
        &self,
        stage: &crate::model::Stage,
        var: &str,
        value: &crate::span::Spanned<crate::model::Value>,
    ) -> Option<Finding> {
        let upper = var.to_ascii_uppercase();
        let what = CREDENTIAL_REFERENCES
            .iter()
            .find(|(n, _)| *n == upper)
            .map(|(_, what)| *what)
            .or_else(|| {
                [
                    "_CREDENTIALS_FILE",
                    "_KEY_FILE",
                    "_TOKEN_FILE",
                    "_PASSWORD_FILE",
                ]
                .iter()
                .any(|end| upper.ends_with(end))
                .then_some("a file that holds a credential")
            })?;
        if matches!(&value.value, crate::model::Value::String(t) if t.trim().is_empty()) {
            return None;
        }
        let stage_name = stage.name.value.as_str();
        Some(
            Finding::new(
                self.id(),
                self.severity(),
                format!(
                    "`{stage_name}` is given `{var}`, which names a credential by where it is ({what}): its program, and whatever it runs, uses it outside every secret's scope (principle 2, unknown authority can do anything its kind can)"
                ),
                Label::new(value.span, "a credential by reference"),
            )
            .help(format!(
                "give `{stage_name}` only what it needs as a declared secret (`secret-env`, a token that can do that one thing), or leave `{var}` out; a stage that runs the change's code must never hold one"
            ))
            .confidence(Confidence::High)
            .stage(stage_name),
        )
    }
}

/// Variables that name a credential by where it is, for the programs that read them: an agent's
/// socket, a file of keys or tokens, a daemon that acts as root. Which variable a program reads
/// its credential from is the program's business; this table says it for the common ones.
const CREDENTIAL_REFERENCES: &[(&str, &str)] = &[
    (
        "SSH_AUTH_SOCK",
        "an SSH agent's socket: every key it holds signs for the stage",
    ),
    ("GPG_AGENT_INFO", "a GnuPG agent's socket"),
    ("GNUPGHOME", "a GnuPG home, with its private keys and agent"),
    (
        "KUBECONFIG",
        "a Kubernetes configuration, with the cluster's credentials",
    ),
    (
        "DOCKER_HOST",
        "a container daemon, which runs what it is asked as root",
    ),
    ("DOCKER_CONFIG", "a container registry's login"),
    ("CONTAINER_HOST", "a container daemon"),
    (
        "GOOGLE_APPLICATION_CREDENTIALS",
        "a cloud service account's key",
    ),
    ("AWS_SHARED_CREDENTIALS_FILE", "a cloud account's keys"),
    (
        "AWS_CONFIG_FILE",
        "a cloud account's profiles and credential processes",
    ),
    ("AZURE_CONFIG_DIR", "a cloud login"),
    ("CLOUDSDK_CONFIG", "a cloud login"),
    ("NETRC", "logins for hosts (`.netrc`)"),
    (
        "GIT_ASKPASS",
        "a program that answers git's password prompts",
    ),
    (
        "SSH_ASKPASS",
        "a program that answers ssh's passphrase prompts",
    ),
    ("VAULT_TOKEN_FILE", "a Vault token"),
];

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::credential_word;
    use crate::registry::CredentialDetector;
    use crate::{CheckOptions, Registry, Source, compile, run_checks};

    /// Finds `FAKE-CREDENTIAL-` anywhere.
    struct Fake;

    impl CredentialDetector for Fake {
        fn id(&self) -> &str {
            "fake"
        }
        fn label(&self) -> &str {
            "a fake credential"
        }
        fn detects(&self, text: &[u8]) -> bool {
            text.windows(16).any(|w| w == b"FAKE-CREDENTIAL-")
        }
    }

    fn findings(registry: &Registry, text: &str) -> Vec<String> {
        let compiled =
            compile(Source::new("t.kdl", text), registry, &Default::default()).expect("compiles");
        run_checks(&compiled, registry, CheckOptions::default())
            .into_iter()
            .filter(|f| f.check == "secret-as-input")
            .map(|f| f.message)
            .collect()
    }

    const DEFAULT: &str = r#"
pipeline "p"
input "auth" env="HEADER" default="FAKE-CREDENTIAL-1234"
input "label" env="LABEL" default="reviewed"
stage "s" uses="run" {
    command "tool" "--auth" "{auth}" "--label" "{label}"
}
"#;

    #[test]
    fn a_credential_is_found_wherever_the_file_holds_it() {
        let mut registry = Registry::with_builtins();
        registry.register_detector(Arc::new(Fake));
        let text = r#"
pipeline "p"
// rotated: FAKE-CREDENTIAL-0000-OLD
stage "s" uses="run" {
    command "tool"
    env "AUTH" "FAKE-CREDENTIAL-1234"
}
"#;
        assert_eq!(
            findings(&registry, text),
            [
                "a credential is written in the file (a fake credential): it enters the run as text, not as a secret",
                "a credential is written in the file (a fake credential): it enters the run as text, not as a secret",
            ]
        );
    }

    #[test]
    fn a_line_without_a_long_mixed_run_is_not_read_by_the_detectors() {
        use super::might_hold_credential as may;
        assert!(!may(
            br#"secret "k" env="REVIEW_CONVERSATION_KEY" min-bytes=32"#
        ));
        assert!(!may(br#"trust workflow="ci/workflows/review.yml""#));
        assert!(may(
            br#"env "T" "ghp_0123456789abcdefghij0123456789abcdef""#
        ));
        assert!(may(b"AKIAIOSFODNN7EXAMPLE"));
        assert!(may(b"-----BEGIN OPENSSH PRIVATE KEY-----"));
    }

    #[test]
    fn a_default_is_judged_by_the_registered_detectors() {
        let mut registry = Registry::with_builtins();
        assert_eq!(findings(&registry, DEFAULT), Vec::<String>::new());
        registry.register_detector(Arc::new(Fake));
        assert_eq!(
            findings(&registry, DEFAULT),
            [
                "the default of input `auth` is a credential (a fake credential)",
                "input `auth` holds a credential, and `s` puts it on its command line",
            ]
        );
    }

    #[test]
    fn only_the_variable_of_a_string_input_is_judged() {
        let text = r#"
pipeline "p"
input "max" env="MAX_TOKEN" type="int"
input "keys" env="USE_API_KEY" type="bool"
input "auth" env="DEPLOY_TOKEN"
input "signing-key" env="SIGNING_KEY_FILE"
stage "s" uses="run" {
    command "tool" "{max}" "{keys}" "--key-file" "{signing-key}"
    env "A" "{auth}"
}
"#;
        assert_eq!(
            findings(&Registry::with_builtins(), text),
            [
                "input `auth` holds a credential: its variable `$DEPLOY_TOKEN` is named as one (`TOKEN`)"
            ]
        );
    }

    #[test]
    fn credential_names() {
        for name in [
            "DEPLOY_TOKEN",
            "deploy_token",
            "DEPLOY_TOKEN",
            "CLIENT_SECRET",
            "DB_PASSWORD",
            "API_KEY",
            "OPENAI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "SECRET_KEY_BASE",
            "SIGNING_KEY_B64",
            "API_TOKEN_V2",
            "GH_PAT",
            "GHTOKEN",
            "deployToken",
            "NPM_APIKEY",
            "deploy-token",
            "SSH_PASSPHRASE",
            "GCP_CREDENTIALS",
            "KEY",
            "SLACK_WEBHOOK_URL",
            "DISCORD_WEBHOOK",
            "SENTRY_DSN",
            "DATABASE_URL",
            "REDIS_URL",
            "NPM_AUTH",
            "SESSION_COOKIE",
        ] {
            assert!(credential_word(name).is_some(), "{name}");
        }
    }

    #[test]
    fn names_that_are_not_credentials() {
        for name in [
            "KEYBOARD_LAYOUT",
            "PRIMARY_KEY_COLUMN",
            "PRIMARY_KEY",
            "AWS_ACCESS_KEY_ID",
            "TOKEN_URL",
            "SECRET_NAME",
            "KEY_FILE",
            "TOKEN_PATH",
            "MAX_TOKENS",
            "MAX_TOKEN",
            "PUBLIC_KEY",
            "CACHE_KEY",
            "JIRA_ISSUE_KEY",
            "SONAR_PROJECT_KEY",
            "NEXT_PAGE_TOKEN",
            "MONKEY",
            "PROJECT",
            "PATH",
            "PWD",
            "PATTERN",
            "V2",
            "AUTH_URL",
            "WEBHOOK_NAME",
            "GIT_AUTHOR_NAME",
            "SITE_URL",
        ] {
            assert_eq!(credential_word(name), None, "{name}");
        }
    }
}
