//! One pipeline through `check` and `run`, in a checkout of its own, and the verdict: where the
//! two disagree.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::generator::header;
use super::scripts;
use crate::support::{files_under, git_in, root};

/// A disagreement: its signature (what makes two the same bug) and what shows it.
#[derive(Debug, Clone)]
pub struct Disagreement {
    pub signature: String,
    pub detail: String,
}

/// What one pipeline did.
#[derive(Debug, Default)]
pub struct Verdict {
    pub check_passed: bool,
    /// The run started stages.
    pub ran: bool,
    pub disagreements: Vec<Disagreement>,
    /// Refusals and finds set aside as depending on the environment, with why.
    pub excluded: Vec<String>,
    /// Spies that finished their look.
    pub spies_done: usize,
    /// The checks whose errors made `check` fail.
    pub check_errors: Vec<String>,
    pub log: String,
}

/// Words of a refusal that depends on the machine, not on the file (docs/agreement.md).
const ENVIRONMENTAL: &[&str] = &[
    "is not held",
    "cannot open the change under review",
    "is not set",
    "cannot find the top level of the checkout",
    "cannot create the run directory",
    "cannot start",
];

/// A case folder: the checkout (a git repository on a topic branch, with the scripts), the run's
/// temp folder, a HOME, a folder an input may name, and the pipeline beside the checkout.
pub struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    pub fn new(text: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        for d in ["checkout/scripts", "tmp", "home", "share"] {
            std::fs::create_dir_all(p.join(d)).expect("mkdir");
        }
        for (name, body) in [
            ("holder.sh", scripts::HOLDER),
            ("spy.sh", scripts::SPY),
            ("reviewer.sh", scripts::REVIEWER),
        ] {
            std::fs::write(p.join("checkout/scripts").join(name), body).expect("script");
        }
        std::fs::write(p.join("checkout/README.md"), "hello\n").expect("readme");
        std::fs::write(p.join("review.kdl"), text).expect("pipeline");
        let checkout = p.join("checkout");
        git_in(&checkout, &["init", "-q", "-b", "main"]);
        git_in(&checkout, &["add", "-A"]);
        git_in(&checkout, &["commit", "-q", "-m", "first"]);
        git_in(&checkout, &["checkout", "-q", "-b", "feature"]);
        std::fs::create_dir_all(checkout.join("src")).expect("mkdir");
        std::fs::write(checkout.join("src/lib.rs"), "pub fn f() {}\n// TODO\n").expect("src");
        git_in(&checkout, &["add", "-A"]);
        git_in(&checkout, &["commit", "-q", "-m", "change"]);
        Self { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_reviewflow")
}

/// The raw, base64, hex and reversed forms of `value`.
pub fn forms(value: &str) -> Vec<(&'static str, String)> {
    use base64::Engine as _;
    vec![
        ("raw", value.to_string()),
        (
            "base64",
            base64::engine::general_purpose::STANDARD.encode(value),
        ),
        ("hex", value.bytes().map(|b| format!("{b:02x}")).collect()),
        ("reversed", value.chars().rev().collect()),
    ]
}

fn found_in(bytes: &[u8], forms: &[(&'static str, String)]) -> Option<&'static str> {
    forms
        .iter()
        .find(|(_, f)| bytes.windows(f.len()).any(|w| w == f.as_bytes()))
        .map(|(n, _)| *n)
}

/// A reason without what changes from run to run (paths, ids, numbers, stage numbers).
pub fn normalize(reason: &str) -> String {
    let mut out = String::new();
    let mut chars = reason.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '/' && out.ends_with([' ', '`', '"', '(', '\'']) {
            while chars
                .peek()
                .is_some_and(|c| !c.is_whitespace() && !"`\"'):,".contains(*c))
            {
                chars.next();
            }
            out.push_str("PATH");
        } else if c.is_ascii_digit() {
            while chars.peek().is_some_and(char::is_ascii_hexdigit) {
                chars.next();
            }
            out.push('N');
        } else {
            out.push(c);
        }
    }
    out.lines().next().unwrap_or_default().trim().to_string()
}

/// The role of a stage name (`spy2` → `spy`): signatures name roles, not draws.
fn role(stage: &str) -> &str {
    stage.trim_end_matches(|c: char| c.is_ascii_digit())
}

/// Runs `text` (written by the generator, or a found fixture) through both, and judges.
pub fn judge(text: &str, canary: &str, aux: &str) -> Verdict {
    // An `allow` written without its finding is given the ids `check` reports (principle 6).
    let text = &crate::support::with_allow_ids(text);
    let case = Case::new(text);
    let head = header(text);
    let mut v = Verdict::default();

    let check = crate::support::command()
        .args(["check", "--format", "json", "--fail-on", "error"])
        .arg(case.path("review.kdl"))
        .current_dir(case.path(""))
        .output()
        .expect("check runs");
    let check_code = check.status.code().unwrap_or(-1);
    let findings: serde_json::Value =
        serde_json::from_slice(&check.stdout).unwrap_or(serde_json::Value::Null);
    let errors: Vec<String> = findings["files"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["severity"] == "error" && f["suppressed"].is_null())
        .map(|f| format!("{}: {}", f["check"].as_str().unwrap_or("?"), f["message"]))
        .collect();
    v.check_passed = check_code == 0;
    v.check_errors = errors
        .iter()
        .filter_map(|e| e.split(':').next())
        .map(str::to_string)
        .collect();
    v.check_errors.sort();
    v.check_errors.dedup();

    let fakes = root().join("tests/fakes");
    let out = Command::new("timeout")
        .args(["-k", "10", "300", bin(), "run"])
        .arg(case.path("review.kdl"))
        .arg("--checkout")
        .arg(case.path("checkout"))
        .args(["--jobs", "2", "--grace", "300ms"])
        .current_dir(case.path("checkout"))
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", fakes.display()))
        .env("NO_COLOR", "1")
        .env("HOME", case.path("home"))
        .env("TMPDIR", case.path("tmp"))
        .env("AGR_CANARY", canary)
        .env("AGR_AUX", aux)
        .env("AGR_SHARE", case.path("share"))
        .stdin(Stdio::null())
        .output()
        .expect("run runs");
    let code = out.status.code().unwrap_or(-1);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    v.log = format!(
        "check exit {check_code}\n{}\nrun exit {code}\n{stdout}{stderr}",
        errors.join("\n")
    );
    let manifest_path = files_under(&case.path("checkout/.reviewflow/runs"))
        .into_iter()
        .find(|p| p.ends_with("manifest.json"));
    let manifest: Option<serde_json::Value> = manifest_path
        .as_ref()
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice(&b).ok());
    v.ran = manifest.is_some();
    let mut say = |signature: String, detail: String| {
        v.disagreements.push(Disagreement { signature, detail });
    };

    if !v.check_passed {
        // Check refused: run must refuse the same, before any stage.
        if code != 2 || v.ran {
            say(
                format!("run ran what check refused ({})", errors.join("; ")),
                format!("run exit {code}"),
            );
        }
        return v;
    }
    if code == 124 || code == 137 {
        say("run did not end".into(), format!("exit {code}"));
        return v;
    }
    let Some(manifest) = manifest else {
        // Refused before any stage started.
        let reason = stderr
            .lines()
            .filter(|l| l.starts_with("error:") || l.contains("not running"))
            .collect::<Vec<_>>()
            .join(" / ");
        let reason = if reason.is_empty() {
            stderr.lines().last().unwrap_or_default().to_string()
        } else {
            reason
        };
        if ENVIRONMENTAL.iter().any(|w| reason.contains(w)) {
            v.excluded.push(format!("refusal: {}", normalize(&reason)));
        } else {
            say(
                format!(
                    "check passed, run refused before any stage: {}",
                    normalize(&reason)
                ),
                reason,
            );
        }
        return v;
    };

    // Refusals of a stage: a failure no generated stage is built to have.
    for s in manifest["stages"].as_array().into_iter().flatten() {
        let name = s["name"].as_str().unwrap_or_default();
        let outcome = s["outcome"].as_str().unwrap_or_default();
        let reason = s["reason"].as_str().unwrap_or_default();
        let failed = matches!(outcome, "failed" | "fell-back")
            || (outcome == "skipped" && !reason.contains("when") && !reason.contains("skipped"));
        if !failed || head.may_fail.iter().any(|m| m == name) {
            continue;
        }
        if ENVIRONMENTAL.iter().any(|w| reason.contains(w)) {
            v.excluded
                .push(format!("stage {}: {}", role(name), normalize(reason)));
            continue;
        }
        say(
            format!(
                "check passed, run refused stage {} ({}): {}",
                role(name),
                s["kind"].as_str().unwrap_or_default(),
                normalize(reason)
            ),
            format!("{name}: {outcome}: {reason}"),
        );
    }

    // Isolation: which layers held (finds through them count only where they all held).
    let layers: Vec<(String, bool)> = manifest["isolation"]["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            (
                l["name"].as_str().unwrap_or_default().to_string(),
                l["held"] == true,
            )
        })
        .collect();
    // What a spy reaches beyond what it was given is closed by the filesystem sandbox (and
    // `/proc` with it); where that layer does not hold, a find there says nothing of `check`.
    let sandboxed = layers.iter().any(|(n, h)| n == "landlock-filesystem" && *h);
    let missing: Vec<&str> = layers
        .iter()
        .filter(|(_, h)| !h)
        .map(|(n, _)| n.as_str())
        .collect();

    // Direction 1: what the spies found.
    let log = format!("{stdout}{stderr}");
    let mut work: Vec<(String, String)> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split("AGR-WORK ").nth(1)
            && let Some((who, dir)) = rest.split_once(' ')
        {
            work.push((who.to_string(), dir.trim().to_string()));
        }
        if line.contains("AGR-DONE ") {
            v.spies_done += 1;
        }
    }
    for line in log.lines() {
        let Some(rest) = line.split("AGR-HIT ").nth(1) else {
            continue;
        };
        let mut words = rest.split(' ');
        let (Some(who), Some(path), Some(form)) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        if head.scope.iter().any(|s| s == who) {
            continue;
        }
        let own = work
            .iter()
            .find(|(w, _)| w == who)
            .map(|(_, d)| d.as_str())
            .unwrap_or("\u{0}");
        let channel = if let Some(rel) = path.strip_prefix(own) {
            let rel = rel.trim_start_matches('/');
            let first = rel.split('/').take(2).collect::<Vec<_>>();
            match first.as_slice() {
                ["given", f] => format!("given {f}"),
                ["inputs", _] => "given input file".into(),
                _ => format!("given, in its folder {}", first.first().unwrap_or(&"")),
            }
        } else if path.starts_with("/proc/") {
            let what = path
                .rsplit('/')
                .nth(usize::from(path.contains("/fd/")))
                .unwrap_or("");
            format!("reached /proc {what}")
        } else {
            "reached a file".to_string()
        };
        if !channel.starts_with("given") && !sandboxed {
            v.excluded.push(format!(
                "{} {channel} {form} (layers not held: {})",
                role(who),
                missing.join(", ")
            ));
            continue;
        }
        say(
            format!(
                "canary reached {} out of scope: {channel} ({form})",
                role(who)
            ),
            line.trim().to_string(),
        );
    }

    // Direction 1: what the run kept, published or printed.
    let forms = forms(canary);
    if let Some(form) = found_in(log.as_bytes(), &forms) {
        let line = log
            .lines()
            .find(|l| found_in(l.as_bytes(), &forms).is_some())
            .unwrap_or_default();
        let who = line.split(" │ ").next().unwrap_or("reviewflow").trim();
        let who = if who.len() > 24 { "reviewflow" } else { who };
        if head.scope.iter().any(|s| s == who) && form != "raw" && form != "base64" {
            // A stage in scope printing its secret in a form no redactor knows: its own doing.
            v.excluded
                .push(format!("{} printed the canary ({form})", role(who)));
        } else {
            say(
                format!("canary in the run's output ({form}, after {})", role(who)),
                line.to_string(),
            );
        }
    }
    let checkout = case.path("checkout");
    for file in files_under(&checkout) {
        let rel = file.strip_prefix(&checkout).unwrap_or(&file);
        let rel_s = rel.to_string_lossy();
        if rel_s.starts_with(".git/") {
            continue;
        }
        // Outputs of a stage in scope are that stage's to keep.
        let parts: Vec<&str> = rel_s.split('/').collect();
        if parts.len() > 4
            && parts[..2] == [".reviewflow", "runs"]
            && parts[3] == "outputs"
            && head.scope.iter().any(|s| s == parts[4])
        {
            continue;
        }
        let bytes = std::fs::read(&file).unwrap_or_default();
        if let Some(form) = found_in(&bytes, &forms) {
            say(
                format!("canary kept in {} ({form})", area(&parts)),
                rel_s.into_owned(),
            );
        }
    }
    v
}

/// Where a kept file is, by what it is (not by the run's id).
fn area(parts: &[&str]) -> String {
    match parts {
        [".reviewflow", "runs", _, "outputs", stage, ..] => {
            format!("the run's outputs of {}", role(stage))
        }
        [".reviewflow", "runs", _, file] => format!("the run's {file}"),
        [".reviewflow", top, ..] => format!(".reviewflow/{top}"),
        [first, ..] if first.starts_with("dropped-") => "the checkout (a stage wrote it)".into(),
        _ => "the checkout".into(),
    }
}

/// A disagreement written out for a failure message.
pub fn describe(seed: Option<u64>, text: &str, v: &Verdict) -> String {
    let mut s = String::new();
    if let Some(seed) = seed {
        let _ = writeln!(s, "=== seed {seed}");
    }
    for d in &v.disagreements {
        let _ = writeln!(s, "DISAGREEMENT: {}\n    {}", d.signature, d.detail);
    }
    let _ = writeln!(s, "--- pipeline\n{text}--- log (tail)");
    let lines: Vec<&str> = v.log.lines().collect();
    let from = lines.len().saturating_sub(60);
    for l in &lines[from..] {
        let _ = writeln!(s, "{l}");
    }
    s
}
