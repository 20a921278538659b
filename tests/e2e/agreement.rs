//! The agreement tester (docs/agreement.md): seeded pipelines drawn from the language, each run
//! through `check` and `run` with a canary secret and spies. For a pipeline `check` passes, the
//! canary must stay in its scope; for one `run` refuses for a reason the file decides, `check`
//! must have refused it. A disagreement fails the test unless it is a known one, listed below
//! with the fixture that pins it (`tests/fixtures/agreement/found/`).
//!
//! `REVIEWFLOW_AGREEMENT_BUDGET=N` draws N pipelines (default [`DEFAULT_BUDGET`]),
//! `REVIEWFLOW_AGREEMENT_SEED=S` starts at seed S (default 1), `REVIEWFLOW_AGREEMENT_JOBS=J` runs J
//! at once (default 3).

mod case;
mod generator;
mod scripts;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use case::{Verdict, describe, judge};
use generator::generate;

/// What `cargo test` draws: enough to meet every kind of stage many times, in under a minute.
const DEFAULT_BUDGET: u64 = 120;

/// Known disagreements: the fixture that pins each (tests/fixtures/agreement/found/<name>.kdl)
/// and the words of its signature. Remove a line when its fixture's test passes.
const KNOWN: &[(&str, &str)] = &[];

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn known(signature: &str) -> Option<&'static str> {
    KNOWN
        .iter()
        .find(|(_, words)| signature.contains(words))
        .map(|(name, _)| *name)
}

#[derive(Default)]
struct Tally {
    pipelines: u64,
    check_passed: u64,
    ran: u64,
    spies: usize,
    /// Signature → (count, first seed, the first description).
    new: BTreeMap<String, (u64, u64, String)>,
    known: BTreeMap<String, (u64, &'static str)>,
    excluded: BTreeMap<String, u64>,
    refused_by: BTreeMap<String, u64>,
}

impl Tally {
    fn add(&mut self, seed: u64, text: &str, v: &Verdict) {
        self.pipelines += 1;
        self.check_passed += u64::from(v.check_passed);
        self.ran += u64::from(v.ran);
        self.spies += v.spies_done;
        for c in &v.check_errors {
            *self.refused_by.entry(c.clone()).or_default() += 1;
        }
        if std::env::var_os("REVIEWFLOW_AGREEMENT_SHOW").is_some() {
            println!("{}", describe(Some(seed), text, v));
        }
        for e in &v.excluded {
            *self.excluded.entry(e.clone()).or_default() += 1;
        }
        for d in &v.disagreements {
            if let Some(name) = known(&d.signature) {
                self.known.entry(d.signature.clone()).or_insert((0, name)).0 += 1;
            } else {
                let e = self
                    .new
                    .entry(d.signature.clone())
                    .or_insert_with(|| (0, seed, describe(Some(seed), text, v)));
                e.0 += 1;
            }
        }
    }

    fn summary(&self) -> String {
        let mut s = format!(
            "agreement: {} pipelines, {} passed check, {} ran, {} spies looked; {} new and {} known disagreements\n",
            self.pipelines,
            self.check_passed,
            self.ran,
            self.spies,
            self.new.len(),
            self.known.len()
        );
        for (sig, (n, name)) in &self.known {
            s.push_str(&format!("  known ({name}) x{n}: {sig}\n"));
        }
        for (sig, (n, seed, _)) in &self.new {
            s.push_str(&format!("  NEW x{n} (first seed {seed}): {sig}\n"));
        }
        let by: Vec<String> = self
            .refused_by
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        s.push_str(&format!("  check refused with: {}\n", by.join(", ")));
        for (e, n) in &self.excluded {
            s.push_str(&format!("  excluded x{n}: {e}\n"));
        }
        s
    }
}

#[test]
fn check_and_run_agree_on_generated_pipelines() {
    let budget = env_u64("REVIEWFLOW_AGREEMENT_BUDGET", DEFAULT_BUDGET);
    let first = env_u64("REVIEWFLOW_AGREEMENT_SEED", 1);
    let jobs = env_u64("REVIEWFLOW_AGREEMENT_JOBS", 3).max(1);
    let next = AtomicU64::new(first);
    let tally = Mutex::new(Tally::default());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= first + budget {
                        break;
                    }
                    let g = generate(seed);
                    let v = judge(&g.text, &g.canary, &g.aux);
                    tally.lock().expect("tally").add(seed, &g.text, &v);
                }
            });
        }
    });
    let tally = tally.into_inner().expect("tally");
    println!("{}", tally.summary());
    let new: Vec<&String> = tally.new.values().map(|(_, _, d)| d).collect();
    assert!(
        new.is_empty(),
        "new disagreements between check and run (each is a bug in one of them):\n{}\n{}",
        new.iter()
            .map(|d| d.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        tally.summary()
    );
}

/// The same seed draws the same pipeline: a failure's seed is enough to see it again.
#[test]
fn the_generator_is_deterministic() {
    for seed in [1, 2, 99, 12345] {
        assert_eq!(generate(seed).text, generate(seed).text);
        assert_eq!(generate(seed).canary, generate(seed).canary);
    }
    assert_ne!(generate(1).text, generate(2).text);
}

/// A found fixture through the tester: it must show no disagreement once its bug is fixed.
fn found(name: &str) {
    let path = crate::support::root().join(format!("tests/fixtures/agreement/found/{name}.kdl"));
    let text = std::fs::read_to_string(&path).expect("the fixture");
    let canary = format!(
        "{}{}",
        generator::CANARY_PREFIX,
        "0123456789abcdef0123456789ab"
    );
    let aux = "aux-fixed-0123456789abcdef0123456789abcdef";
    let v = judge(&text, &canary, aux);
    assert!(v.disagreements.is_empty(), "{}", describe(None, &text, &v));
}

/// One test per found fixture (docs/agreement.md, "Found"): ignored while its disagreement is
/// open, a plain test once fixed.
macro_rules! found_tests {
    (open: $($name:ident => $file:literal),* $(,)?) => {
        mod agreement_found {
            $(
                #[test]
                #[ignore = "a known disagreement (docs/agreement.md, Found)"]
                fn $name() {
                    super::found($file);
                }
            )*
        }
    };
    (fixed: $($name:ident => $file:literal),* $(,)?) => {
        mod agreement_fixed {
            $(
                #[test]
                fn $name() {
                    super::found($file);
                }
            )*
        }
    };
}

found_tests! {
    open:
}

found_tests! {
    fixed:
    input_default_against_its_pattern => "input_default_against_its_pattern",
    input_default_against_its_type => "input_default_against_its_type",
    model_reviewer_env_home => "model_reviewer_env_home",
    command_reviewer_env_reserved => "command_reviewer_env_reserved",
    reviewer_comment_carries_its_secret => "reviewer_comment_carries_its_secret",
    reviewer_comment_reaches_a_stage_out_of_scope => "reviewer_comment_reaches_a_stage_out_of_scope",
    store_name_not_a_store_name => "store_name_not_a_store_name",
    secret_holder_file_output_beside_a_shared_folder => "secret_holder_file_output_beside_a_shared_folder",
}

/// The tester can see a leak: a spy given a holder's output, with the flow allowed so that
/// `check` passes, is a disagreement through the spy's own search; the output it wrote carries the
/// canary and is discarded when the run ends.
#[test]
fn a_flow_check_was_told_to_allow_is_seen_as_a_leak() {
    let text = r#"// agreement: scope=holder may-fail=
pipeline "control"
allow "untrusted-input" reason="the tester writes every program in scripts/ itself, before the run"
allow "secret-flow" reason="the control of the agreement tester: a leak on purpose"
secret "canary" env="AGR_CANARY" {
    visible-to "holder"
}
stage "holder" uses="run" {
    command "sh" "scripts/holder.sh" "holder"
    secret-env "CANARY" "canary"
    output "o" file="o.txt"
}
stage "spy" uses="run" {
    command "sh" "scripts/spy.sh" "spy"
    stdin "{holder.o}"
    output "out" file="out.txt"
}
"#;
    let text = &crate::support::with_allow_ids(text);
    let canary = format!(
        "{}{}",
        generator::CANARY_PREFIX,
        "feedfacefeedfacefeedfacefeed"
    );
    let v = judge(text, &canary, "aux-unused-0123456789abcdef0123456789abcdef");
    let signatures: Vec<&str> = v
        .disagreements
        .iter()
        .map(|d| d.signature.as_str())
        .collect();
    assert!(v.check_passed, "{}", describe(None, text, &v));
    assert_eq!(v.spies_done, 1, "{}", describe(None, text, &v));
    assert!(
        signatures.contains(&"canary reached spy out of scope: given stdin (reversed)"),
        "{signatures:#?}"
    );
    // What the spy wrote carries the canary (it read the holder's output), so the run discards
    // it when it ends: nothing of it is kept.
    assert!(
        !signatures
            .iter()
            .any(|s| s.starts_with("canary kept in the run's outputs")),
        "{signatures:#?}"
    );
}
