//! A SARIF log under construction: the one shape of every log reviewflow writes.
//!
//! The builder owns what must agree across a log: `$schema` and `version`, the tool, which
//! analysis the run is (`automationDetails.id`), the rules (each once, results pointing at them
//! by `ruleIndex`) and the fingerprints (never two results with one). What a result says and
//! where it is belongs to the caller.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::fingerprint::{Numbering, Occurrences};
use super::uri::SRCROOT;
use reviewflow_engine::finding::Severity;

/// The SARIF version written.
pub const SARIF_VERSION: &str = "2.1.0";

/// The published schema of [`SARIF_VERSION`] (OASIS, errata 01).
pub const SARIF_SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// Where reviewflow's documentation is published, if anywhere: the address of the `docs/`
/// folder, set at build time (`REVIEWFLOW_DOCS_URL=https://…/docs cargo build`). Without it the
/// log links nowhere (no `informationUri`, no `helpUri`): every rule carries its description and
/// help in the log itself, and no address is made up.
pub const DOCS_URL: Option<&str> = option_env!("REVIEWFLOW_DOCS_URL");

/// The docs address, when one is configured and absolute (SARIF requires absolute URIs).
pub(crate) fn docs_url() -> Option<&'static str> {
    DOCS_URL
        .map(|u| u.trim_end_matches('/'))
        .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
}

/// Which analysis a run is. GitHub reads `automationDetails.id` as `category/run-id` and
/// replaces earlier results of the same tool, category and commit only, so a check and a review
/// have distinct categories, so do the reviews of two pipelines, and each is the same from one
/// push to the next.
#[derive(Clone, Copy, Debug)]
pub enum Analysis<'a> {
    /// `reviewflow check`: `reviewflow/check/` (no run id).
    Check,
    /// A review: `reviewflow/review/<pipeline>/<run id>`, or `reviewflow/review/<run id>` for a
    /// review published under no pipeline's name.
    Review {
        /// The pipeline whose review it is, as its forge names it.
        pipeline: Option<&'a str>,
        /// The run that produced it.
        run_id: &'a str,
    },
}

impl Analysis<'_> {
    /// The `automationDetails.id`.
    pub fn automation_id(self) -> String {
        match self {
            Analysis::Check => "reviewflow/check/".to_owned(),
            // A `/` in a name would move the category: run ids and the forge's pipeline names
            // have none, but the category must not depend on that.
            Analysis::Review { pipeline, run_id } => {
                let run = run_id.replace('/', "-");
                match pipeline {
                    Some(p) => format!("reviewflow/review/{}/{run}", p.replace('/', "-")),
                    None => format!("reviewflow/review/{run}"),
                }
            }
        }
    }
}

/// A result's or rule's level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
    Note,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warning => "warning",
            Level::Note => "note",
        }
    }
}

/// The SARIF level of a finding's severity.
impl From<Severity> for Level {
    fn from(severity: Severity) -> Self {
        match severity {
            Severity::Error => Level::Error,
            Severity::Warning => Level::Warning,
            Severity::Info => Level::Note,
        }
    }
}

/// A rule (`reportingDescriptor`): everything code scanning shows about it.
#[derive(Clone, Debug)]
pub struct Rule {
    pub id: String,
    /// One line (`shortDescription`).
    pub short: String,
    /// What the rule finds (`fullDescription`).
    pub full: String,
    /// How to fix it, as plain text (`help.text`).
    pub help_text: String,
    /// The same as Markdown (`help.markdown`), when there is Markdown.
    pub help_markdown: Option<String>,
    /// A page about the rule, when one is published.
    pub help_uri: Option<String>,
    /// `defaultConfiguration.level`.
    pub level: Level,
    /// `properties` (tags, security severity, precision), when there are any.
    pub properties: Map<String, Value>,
}

impl Rule {
    /// A rule known only by its id (a result named it, nothing describes it).
    pub fn unknown(id: &str) -> Self {
        let text = format!("findings reported under the name `{id}`");
        Rule {
            id: id.to_owned(),
            short: text.clone(),
            full: text.clone(),
            help_text: text,
            help_markdown: None,
            help_uri: None,
            level: Level::Warning,
            properties: Map::new(),
        }
    }

    fn to_json(&self) -> Value {
        let mut help = json!({ "text": self.help_text });
        if let Some(markdown) = &self.help_markdown {
            help["markdown"] = markdown.as_str().into();
        }
        let mut rule = json!({
            "id": self.id,
            "name": friendly_name(&self.id),
            "shortDescription": { "text": self.short },
            "fullDescription": { "text": self.full },
            "help": help,
            "defaultConfiguration": { "level": self.level.as_str() },
        });
        if let Some(uri) = &self.help_uri {
            rule["helpUri"] = uri.as_str().into();
        }
        if !self.properties.is_empty() {
            rule["properties"] = self.properties.clone().into();
        }
        rule
    }
}

/// A rule's `name`: its id in Pascal case (`secret-flow` → `SecretFlow`), the form SARIF
/// recommends for a friendly name. SARIF wants the name to differ from the id (SARIF1001), case
/// aside, so a one-word id gets `Rule` appended (`syntax` → `SyntaxRule`), and so does an id
/// without a letter or digit.
pub fn friendly_name(id: &str) -> String {
    let name: String = id
        .split(|c: char| !c.is_alphanumeric())
        .flat_map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect::<String>())
        })
        .collect();
    if name.to_lowercase() == id.to_lowercase() || name.is_empty() {
        format!("{name}Rule")
    } else {
        name
    }
}

/// A result's fingerprint before it is made unique.
#[derive(Clone, Debug)]
pub struct Fingerprint {
    /// The `partialFingerprints` key: one per recipe.
    pub key: &'static str,
    pub value: String,
    pub numbering: Numbering,
}

/// A result: the builder adds `ruleIndex` and makes the fingerprint unique.
#[derive(Clone, Debug)]
pub struct SarifResult {
    pub rule_id: String,
    pub level: Level,
    pub message: String,
    /// The one `location` (see [`location`]).
    pub location: Value,
    pub fingerprint: Fingerprint,
    /// Anything else the result carries (`relatedLocations`, `codeFlows`, `suppressions`,
    /// `baselineState`, `properties`).
    pub extra: Map<String, Value>,
}

/// A `location` in the artifact `uri` (relative to `%SRCROOT%`, see [`super::uri`]), its
/// `artifacts` index if the run lists artifacts, and a `region` (at least `startLine`: code
/// scanning shows no result without one).
pub fn location(uri: &str, artifact_index: Option<usize>, region: Value) -> Value {
    json!({ "physicalLocation": physical_location(uri, artifact_index, region) })
}

/// The `physicalLocation` of [`location`].
pub fn physical_location(uri: &str, artifact_index: Option<usize>, region: Value) -> Value {
    let mut artifact = json!({ "uri": uri, "uriBaseId": SRCROOT });
    if let Some(index) = artifact_index {
        artifact["index"] = index.into();
    }
    json!({ "artifactLocation": artifact, "region": region })
}

/// A log being built.
#[derive(Debug)]
pub struct LogBuilder {
    automation_id: String,
    tool_version: String,
    rules: Vec<Value>,
    rule_index: HashMap<String, usize>,
    artifacts: Option<Vec<Value>>,
    column_kind: Option<&'static str>,
    properties: Option<Map<String, Value>>,
    /// What the run has to say about itself (`invocations[0].toolExecutionNotifications`).
    notifications: Vec<Value>,
    /// Each result as pretty JSON: a `Value` costs about ten times its text, and a log of tens
    /// of thousands of results would otherwise hold hundreds of megabytes.
    results: Vec<String>,
    fingerprints: Occurrences,
}

/// Stands for the results in the skeleton that [`LogBuilder::finish_text`] prints; NUL never
/// occurs in a log's text unescaped, so the escaped form is found only here.
const RESULTS_HOLE: &str = r"\u0000results\u0000";

impl LogBuilder {
    pub fn new(analysis: Analysis<'_>, tool_version: &str) -> Self {
        LogBuilder {
            automation_id: analysis.automation_id(),
            tool_version: tool_version.to_owned(),
            rules: Vec::new(),
            rule_index: HashMap::new(),
            artifacts: None,
            column_kind: None,
            properties: None,
            notifications: Vec::new(),
            results: Vec::new(),
            fingerprints: Occurrences::default(),
        }
    }

    /// Adds `rule` unless one with its id is there already; its index either way.
    pub fn rule(&mut self, rule: &Rule) -> usize {
        if let Some(&index) = self.rule_index.get(&rule.id) {
            return index;
        }
        let index = self.rules.len();
        self.rules.push(rule.to_json());
        self.rule_index.insert(rule.id.clone(), index);
        index
    }

    /// Lists an analysed file in `artifacts`; its index there.
    pub fn artifact(&mut self, uri: &str) -> usize {
        let artifacts = self.artifacts.get_or_insert_with(Vec::new);
        artifacts.push(json!({
            "location": { "uri": uri, "uriBaseId": SRCROOT },
            "roles": ["analysisTarget"],
        }));
        artifacts.len() - 1
    }

    /// States the run's `columnKind` (for logs whose regions have columns).
    pub fn column_kind(&mut self, kind: &'static str) {
        self.column_kind = Some(kind);
    }

    /// Sets the run's `properties`.
    pub fn properties(&mut self, properties: Map<String, Value>) {
        self.properties = Some(properties);
    }

    /// Adds a notification about the run itself (`invocations[0].toolExecutionNotifications`).
    pub fn notification(&mut self, level: Level, text: &str) {
        self.notifications.push(json!({
            "level": level.as_str(),
            "message": { "text": text },
        }));
    }

    /// Adds a result; a rule the log does not describe yet is added as [`Rule::unknown`].
    pub fn result(&mut self, result: SarifResult) {
        let rule_index = match self.rule_index.get(&result.rule_id) {
            Some(&index) => index,
            None => self.rule(&Rule::unknown(&result.rule_id)),
        };
        let Fingerprint {
            key,
            value,
            numbering,
        } = result.fingerprint;
        let fingerprint = self.fingerprints.tag(key, &value, numbering);
        let mut out = result.extra;
        out.insert("ruleId".into(), result.rule_id.into());
        out.insert("ruleIndex".into(), rule_index.into());
        out.insert("level".into(), result.level.as_str().into());
        out.insert("message".into(), json!({ "text": result.message }));
        out.insert("locations".into(), json!([result.location]));
        out.insert("partialFingerprints".into(), json!({ key: fingerprint }));
        // A map of strings and numbers always serialises.
        self.results
            .push(serde_json::to_string_pretty(&out).unwrap_or_default());
    }

    /// The log as a value (for tests and callers that inspect it).
    pub fn finish(self) -> Value {
        serde_json::from_str(&self.finish_text()).unwrap_or_default()
    }

    /// The log as pretty JSON with a final newline, the same text `serde_json::to_string_pretty`
    /// gives for [`LogBuilder::finish`], built without holding the results as values.
    pub fn finish_text(mut self) -> String {
        let results = std::mem::take(&mut self.results);
        let skeleton = serde_json::to_string_pretty(&self.skeleton()).unwrap_or_default();
        let hole = format!("\"{RESULTS_HOLE}\"");
        // A text of the log's own that spells the hole (a reviewer's rule id could) makes it
        // ambiguous: then the results are put back as values, at the cost of memory.
        let (Some(at), 1) = (skeleton.find(&hole), skeleton.matches(&hole).count()) else {
            let mut log: Value = serde_json::from_str(&skeleton).unwrap_or_default();
            log["runs"][0]["results"] = results
                .iter()
                .map(|r| serde_json::from_str(r).unwrap_or_default())
                .collect::<Vec<Value>>()
                .into();
            return serde_json::to_string_pretty(&log).unwrap_or_default() + "\n";
        };
        let line_start = skeleton[..at].rfind('\n').map_or(0, |n| n + 1);
        let indent =
            " ".repeat(skeleton[line_start..].len() - skeleton[line_start..].trim_start().len());
        let mut out = String::with_capacity(
            skeleton.len() + results.iter().map(|r| r.len() + 16).sum::<usize>(),
        );
        out.push_str(&skeleton[..at]);
        if results.is_empty() {
            out.push_str("[]");
        } else {
            out.push_str("[\n");
            for (n, result) in results.iter().enumerate() {
                for (i, line) in result.lines().enumerate() {
                    if i > 0 {
                        out.push('\n');
                    }
                    out.push_str(&indent);
                    out.push_str("  ");
                    out.push_str(line);
                }
                out.push_str(if n + 1 < results.len() { ",\n" } else { "\n" });
            }
            out.push_str(&indent);
            out.push(']');
        }
        out.push_str(&skeleton[at + RESULTS_HOLE.len() + 2..]);
        out.push('\n');
        out
    }

    /// The log with a placeholder where the results go.
    fn skeleton(self) -> Value {
        let mut driver = json!({
            "name": "reviewflow",
            "version": self.tool_version,
            "rules": self.rules,
        });
        if let Some(uri) = docs_url() {
            driver["informationUri"] = uri.into();
        }
        let mut run = Map::new();
        run.insert("tool".into(), json!({ "driver": driver }));
        run.insert(
            "automationDetails".into(),
            json!({ "id": self.automation_id }),
        );
        if let Some(kind) = self.column_kind {
            run.insert("columnKind".into(), kind.into());
        }
        if let Some(artifacts) = self.artifacts {
            run.insert("artifacts".into(), artifacts.into());
        }
        if !self.notifications.is_empty() {
            run.insert(
                "invocations".into(),
                json!([{
                    "executionSuccessful": true,
                    "toolExecutionNotifications": self.notifications,
                }]),
            );
        }
        run.insert("results".into(), "\u{0}results\u{0}".into());
        if let Some(properties) = self.properties {
            run.insert("properties".into(), properties.into());
        }
        json!({
            "$schema": SARIF_SCHEMA,
            "version": SARIF_VERSION,
            "runs": [run],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn friendly_names_are_pascal_case() {
        assert_eq!(friendly_name("secret-flow"), "SecretFlow");
        assert_eq!(friendly_name("syntax"), "SyntaxRule");
        assert_eq!(friendly_name("Trust"), "TrustRule");
        assert_eq!(friendly_name("missing test / docs"), "MissingTestDocs");
        assert_eq!(friendly_name("--"), "Rule");
    }

    #[test]
    fn categories_differ_and_stay_put() {
        assert_eq!(Analysis::Check.automation_id(), "reviewflow/check/");
        let review = |pipeline, run_id| Analysis::Review { pipeline, run_id }.automation_id();
        assert_eq!(review(None, "r1"), "reviewflow/review/r1");
        assert_eq!(review(None, "a/b"), "reviewflow/review/a-b");
        assert_eq!(review(Some("web"), "r1"), "reviewflow/review/web/r1");
        assert_eq!(review(Some("x/y"), "a/b"), "reviewflow/review/x-y/a-b");
    }

    #[test]
    fn a_result_of_an_undescribed_rule_gets_one() {
        let mut log = LogBuilder::new(Analysis::Check, "0");
        for _ in 0..2 {
            log.result(SarifResult {
                rule_id: "x".into(),
                level: Level::Note,
                message: "m".into(),
                location: location("a", None, json!({ "startLine": 1 })),
                fingerprint: Fingerprint {
                    key: "k",
                    value: "v".into(),
                    numbering: Numbering::Repeats,
                },
                extra: Map::new(),
            });
        }
        let log = log.finish();
        let run = &log["runs"][0];
        assert_eq!(
            run["tool"]["driver"]["rules"].as_array().map(Vec::len),
            Some(1)
        );
        assert_eq!(run["results"][0]["partialFingerprints"]["k"], "v");
        assert_eq!(run["results"][1]["partialFingerprints"]["k"], "v:2");
        assert_eq!(run["results"][1]["ruleIndex"], 0);
    }

    #[test]
    fn the_text_is_serde_s_pretty_print_of_the_log() {
        for n in [0, 1, 3, 4] {
            let mut log = LogBuilder::new(Analysis::Check, "0");
            if n == 4 {
                // A rule whose id spells the hole: the results are put back as values.
                log.rule(&Rule::unknown("\u{0}results\u{0}"));
            }
            log.properties(Map::from_iter([("p".to_string(), json!({ "q": [1, 2] }))]));
            for i in 0..n {
                let mut extra = Map::new();
                extra.insert(
                    "properties".into(),
                    json!({ "nested": { "list": [i, "x\ny"] } }),
                );
                log.result(SarifResult {
                    rule_id: format!("rule-{i}"),
                    level: Level::Warning,
                    message: format!("message \"{i}\" with \\u0000results\\u0000"),
                    location: location("a b", Some(0), json!({ "startLine": i + 1 })),
                    fingerprint: Fingerprint {
                        key: "k",
                        value: "v".into(),
                        numbering: Numbering::Repeats,
                    },
                    extra,
                });
            }
            let text = log.finish_text();
            let value: Value = serde_json::from_str(&text).expect("JSON");
            let again = serde_json::to_string_pretty(&value).expect("prints") + "\n";
            assert_eq!(text, again, "{n} results");
            assert_eq!(
                value["runs"][0]["results"].as_array().map(Vec::len),
                Some(n)
            );
        }
    }
}
