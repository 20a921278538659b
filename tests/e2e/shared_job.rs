//! `shared-job` against the export's partition: what the check says of a pipeline is what
//! `reviewflow export github` does with it, and an edge another check reports is reported once.

use std::path::{Path, PathBuf};

use reviewflow_engine::export::{Carries, Partition, Reason, partition};
use reviewflow_engine::finding::Finding;
use reviewflow_engine::flow::Flow;
use reviewflow_engine::model::{Access, Pipeline};
use reviewflow_engine::{CheckOptions, compile, run_checks};
use serde_json::Value;

use crate::support::{files_under, findings_json, root};

const ID: &str = "shared-job";

/// Every pipeline the tests hold that compiles: the check corpus, the examples, the fixtures.
fn pipelines() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["tests/checks", "examples", "tests/fixtures/pipelines"]
        .iter()
        .flat_map(|d| files_under(&root().join(d)))
        .filter(|p| p.extension().is_some_and(|e| e == "kdl"))
        .collect();
    files.sort();
    files
}

struct Checked {
    rel: String,
    pipeline: Pipeline,
    parts: Partition,
    findings: Vec<Finding>,
    programs: Vec<bool>,
}

/// The pipeline, its findings (allowed ones included) and the export's partition; `None` for a
/// file that does not compile, has a cycle, or is not on GitHub's forge.
fn checked(path: &Path) -> Option<Checked> {
    let rel = path
        .strip_prefix(root())
        .expect("inside the repository")
        .display()
        .to_string();
    let text = std::fs::read_to_string(path).ok()?;
    let registry = reviewflow_stdlib::registry();
    let compiled = compile(
        reviewflow_engine::Source::new(&rel, text),
        &registry,
        &reviewflow_engine::syntax::Limits::default(),
    )
    .ok()?;
    if compiled
        .pipeline
        .forge
        .as_ref()
        .is_some_and(|f| f.kind.value != "github")
    {
        return None;
    }
    let flow = Flow::compute(&compiled.pipeline, &registry, &compiled.dag)?;
    let parts = partition(&compiled.pipeline, &registry, &compiled.dag, &flow)?;
    let findings = run_checks(&compiled, &registry, CheckOptions { no_suppress: true });
    let programs = compiled
        .pipeline
        .stages
        .iter()
        .map(|s| {
            registry.get(&s.uses.value).is_some_and(|c| {
                c.opaque
                    || c.effects
                        .contains(&reviewflow_engine::contract::Effect::Executes)
            })
        })
        .collect();
    Some(Checked {
        rel,
        pipeline: compiled.pipeline,
        parts,
        findings,
        programs,
    })
}

fn declares_write(pipeline: &Pipeline, stage: usize) -> bool {
    pipeline.stages[stage]
        .permissions
        .iter()
        .any(|p| p.value.access == Access::Write)
}

/// How a finding names a join, as the check writes it.
fn join_text(pipeline: &Pipeline, reason: &Reason) -> Vec<String> {
    let name = |i: usize| pipeline.stages[i].name.value.as_str();
    match reason {
        Reason::Private {
            producer,
            consumer,
            outputs,
        } => outputs
            .iter()
            .map(|(o, carries)| {
                let why = match carries {
                    Carries::Private => "is private",
                    Carries::Diff => "is a diff",
                    Carries::Secret => "carries secret",
                };
                format!("`{}.{o}` → `{}` {why}", name(*producer), name(*consumer))
            })
            .collect(),
        Reason::Between {
            stage,
            after,
            before,
        } => vec![format!(
            "`{}` sits between `{}` and `{}`",
            name(*stage),
            name(*after),
            name(*before)
        )],
        Reason::Tangled {
            after,
            entry,
            exit,
            before,
        } => vec![format!(
            "`{}` → `{}` and `{}` → `{}` would make two jobs wait for each other",
            name(*after),
            name(*entry),
            name(*exit),
            name(*before)
        )],
    }
}

#[test]
fn every_join_a_finding_names_is_one_the_export_makes() {
    let mut reported = 0;
    for path in pipelines() {
        let Some(c) = checked(&path) else { continue };
        for f in c.findings.iter().filter(|f| f.check == ID) {
            reported += 1;
            let rel = &c.rel;
            let stage = f
                .stage
                .as_deref()
                .expect("a shared-job finding names its stage");
            let r = c
                .pipeline
                .stages
                .iter()
                .position(|s| s.name.value == stage)
                .expect("a stage of the pipeline");
            let job = c.parts.job_of[r];
            assert!(c.programs[r], "{rel}: `{stage}` runs no program");
            // The chain follows the first `): `, after what the writer can write with.
            let (_, chain) = f
                .message
                .split_once("): ")
                .unwrap_or_else(|| panic!("{rel}: {}", f.message));
            let joins: Vec<String> = c
                .parts
                .reasons
                .iter()
                .filter(|reason| match reason {
                    Reason::Private { consumer, .. } => c.parts.job_of[*consumer] == job,
                    Reason::Between { stage, .. } => c.parts.job_of[*stage] == job,
                    Reason::Tangled { entry, .. } => c.parts.job_of[*entry] == job,
                })
                .flat_map(|reason| join_text(&c.pipeline, reason))
                .collect();
            for part in chain.split("; ").filter(|p| !p.ends_with(" more joins")) {
                assert!(
                    joins.iter().any(|j| part.starts_with(j.as_str())),
                    "{rel}: `{part}` is not a join of `{stage}`'s job: {joins:#?}"
                );
            }
            assert!(
                c.parts.jobs[job].stages.iter().any(|&w| w != r
                    && f.message.contains(&format!(
                        "with `{}`, which can write",
                        c.pipeline.stages[w].name.value
                    ))),
                "{rel}: the stage that can write is not in `{stage}`'s job: {}",
                f.message
            );
        }
    }
    assert!(
        reported >= 3,
        "{reported} shared-job findings in the tests' pipelines"
    );
}

/// Whatever puts a program beside a write permission in an exported job is reported: by this
/// check, or by another (whose edge this check then takes as gone).
#[test]
fn no_program_shares_a_job_with_a_write_unreported() {
    let mut pairs = 0;
    let mut by_this = 0;
    for path in pipelines() {
        let Some(c) = checked(&path) else { continue };
        let n = c.pipeline.stages.len();
        for r in (0..n).filter(|&r| c.programs[r] && !declares_write(&c.pipeline, r)) {
            let beside = (0..n).any(|w| {
                w != r && declares_write(&c.pipeline, w) && c.parts.job_of[w] == c.parts.job_of[r]
            });
            if !beside {
                continue;
            }
            pairs += 1;
            let stage = c.pipeline.stages[r].name.value.as_str();
            let own = c
                .findings
                .iter()
                .any(|f| f.check == ID && f.stage.as_deref() == Some(stage));
            by_this += usize::from(own);
            assert!(
                own || c.findings.iter().any(|f| f.check != ID),
                "{}: `{stage}` shares a job with a write and nothing says so",
                c.rel
            );
        }
    }
    assert!(
        pairs > by_this && by_this >= 3,
        "{pairs} pairs, {by_this} reported by shared-job"
    );
}

/// The claim of docs/checks.md: where a private value, a secret or a diff reaches or leaves a
/// stage that can write, in a job with a program, another check reports it.
#[test]
fn a_join_at_the_stage_that_writes_is_another_checks_finding() {
    let mut seen = 0;
    for path in pipelines() {
        let Some(c) = checked(&path) else { continue };
        for reason in &c.parts.reasons {
            let Reason::Private {
                producer, consumer, ..
            } = reason
            else {
                continue;
            };
            let job = c.parts.job_of[*consumer];
            let has_program = c.parts.jobs[job]
                .stages
                .iter()
                .any(|&s| c.programs[s] && !declares_write(&c.pipeline, s));
            if !has_program {
                continue;
            }
            for writer in [*producer, *consumer]
                .into_iter()
                .filter(|&w| declares_write(&c.pipeline, w))
            {
                seen += 1;
                let ends = [
                    c.pipeline.stages[*producer].name.value.as_str(),
                    c.pipeline.stages[*consumer].name.value.as_str(),
                ];
                assert!(
                    c.findings
                        .iter()
                        .any(|f| f.check != ID
                            && f.stage.as_deref().is_some_and(|s| ends.contains(&s))),
                    "{}: the join {} → {} at `{}`, which can write, is no other check's finding",
                    c.rel,
                    ends[0],
                    ends[1],
                    c.pipeline.stages[writer].name.value
                );
            }
        }
    }
    assert!(seen >= 3, "{seen} joins at a stage that writes");
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the pipeline");
    path.to_str().expect("utf-8").to_owned()
}

fn findings(path: &str) -> Vec<Value> {
    let json = findings_json(path);
    assert_eq!(json["files"][0]["unusable"], false, "{json:#}");
    json["files"][0]["findings"]
        .as_array()
        .expect("findings")
        .clone()
}

fn of_check<'a>(findings: &'a [Value], check: &str) -> Vec<&'a Value> {
    findings.iter().filter(|f| f["check"] == check).collect()
}

fn corpus(name: &str) -> String {
    std::fs::read_to_string(root().join("tests/checks").join(name)).expect("corpus file")
}

#[test]
fn the_finding_names_the_writer_and_each_join_with_why() {
    let all = findings("tests/checks/shared-job/bad-stats-after-post.kdl");
    let review = all
        .iter()
        .find(|f| f["check"] == ID && f["stage"] == "review")
        .expect("a finding on the reviewer");
    assert_eq!(review["severity"], "warning");
    assert_eq!(
        review["message"],
        "`review` runs a reviewer in one GitHub Actions job with `post`, which can write with \
         the job's token (`pull-requests:write`): `gather.diff` → `review` is a diff; \
         `gather.diff` → `stats` is a diff; `post` sits between `review` and `stats`"
    );
    let related: Vec<&str> = review["related"]
        .as_array()
        .expect("related")
        .iter()
        .map(|l| l["message"].as_str().unwrap_or_default())
        .collect();
    for wanted in [
        "`gather.diff` is a diff: it never crosses a job boundary, so `gather` and `review` share a job",
        "`gather.diff` is a diff: it never crosses a job boundary, so `gather` and `stats` share a job",
        "`post` runs after `review` and before `stats`, which share a job",
        "`post` can write with this",
    ] {
        assert!(
            related.iter().any(|m| m.starts_with(wanted)),
            "no related label {wanted:?}: {related:#?}"
        );
    }
    assert!(
        review["help"]
            .as_str()
            .is_some_and(|h| h.contains("let `stats` not wait for `post`")),
        "{review:#}"
    );
    // The command that reads the diff is beside the token too.
    assert!(
        all.iter()
            .any(|f| f["check"] == ID && f["stage"] == "stats")
    );

    let label = findings("tests/checks/shared-job/bad-label-between-restore-and-review.kdl");
    let label = of_check(&label, ID);
    assert_eq!(label.len(), 1, "{label:#?}");
    assert_eq!(
        label[0]["message"],
        "`review` runs a reviewer in one GitHub Actions job with `label`, which can write with \
         secret `label-token` (pull-requests:write): `restore.conversation` → `review` is \
         private; `label` sits between `restore` and `review`"
    );
}

#[test]
fn an_edge_another_check_reports_is_not_reported_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Seed 000: the conversation `post` keeps unsealed joins the reviewer and `post`; that edge
    // is `private-egress`'s error, allowed or not.
    let seed = corpus("seed-000/conversation-uploaded-unsealed.kdl");
    let plain = write(dir.path(), "seed.kdl", &seed);
    let ids: Vec<Value> = findings(&plain)
        .iter()
        .map(|f| f["check"].clone())
        .collect();
    assert_eq!(ids, ["private-egress"]);
    let allowed = seed.replace(
        "    upload \"review.conversation\" to=\"conversations\"\n",
        "    upload \"review.conversation\" to=\"conversations\"\n    \
         allow \"private-egress\" reason=\"kept unsealed on purpose\"\n",
    );
    assert_ne!(allowed, seed);
    let allowed = crate::support::with_allow_ids(&allowed);
    let allowed = write(dir.path(), "allowed.kdl", &allowed);
    let all = findings(&allowed);
    assert!(of_check(&all, ID).is_empty(), "{all:#?}");
    assert!(!of_check(&all, "private-egress").is_empty());

    // The same reported edge in a pipeline that also keeps `post` between two stages of the
    // reviewer's job: reported, naming only the joins that remain.
    let stats = seed.replace(
        "// Refuses when the pull request's head moved",
        "stage \"stats\" uses=\"run\" when=\"post.posted\" {\n    command \"diff-stats\"\n    \
         stdin \"{gather.diff}\"\n}\n\n// Refuses when the pull request's head moved",
    );
    let stats = write(dir.path(), "stats.kdl", &stats);
    let all = findings(&stats);
    let shared: Vec<&str> = of_check(&all, ID)
        .iter()
        .filter(|f| f["stage"] == "review")
        .map(|f| f["message"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(shared.len(), 1, "{all:#?}");
    assert!(
        shared[0].contains("`post` sits between `review` and `stats`")
            && !shared[0].contains("review.conversation"),
        "{}",
        shared[0]
    );
}

#[test]
fn an_unrelated_finding_keeps_it_and_another_forge_has_no_jobs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = corpus("shared-job/bad-status-before-review.kdl");
    // A secret `post` never uses: `secret-scope`'s error, about another edge.
    let extra = bad.replace(
        "forge \"github\" token=\"github-token\"\n",
        "forge \"github\" token=\"github-token\"\n\nsecret \"model-key\" env=\"MODEL_KEY\" {\n    \
         visible-to \"post\"\n}\n",
    );
    assert_ne!(extra, bad);
    let extra = write(dir.path(), "extra.kdl", &extra);
    let all = findings(&extra);
    assert!(!of_check(&all, "secret-scope").is_empty(), "{all:#?}");
    assert_eq!(of_check(&all, ID).len(), 1, "{all:#?}");

    let local = bad.replace("forge \"github\" token=\"github-token\"", "forge \"local\"");
    let local = write(dir.path(), "local.kdl", &local);
    let all = findings(&local);
    assert!(of_check(&all, ID).is_empty(), "{all:#?}");
}

/// A hostile file can chain a thousand joins between a reviewer and a token: each finding names
/// the few at its ends and counts the rest, so the output stays linear in the file.
#[test]
fn a_long_chain_is_named_by_its_ends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut text = String::from(
        "pipeline \"chain\"\nforge \"github\" token=\"github-token\"\n\
         secret \"github-token\" env=\"GITHUB_TOKEN\" {\n    visible-to \"gather\" \"w\"\n}\n\
         stage \"gather\" uses=\"std/gather\"\n\
         stage \"w\" uses=\"run\" permissions=\"statuses:write\" {\n    cwd \"{work}\"\n    \
         command \"set-status\" \"{gather.head}\"\n    secret-env \"GH_TOKEN\" \"github-token\"\n}\n",
    );
    let n = 1000;
    for i in 0..n {
        let needs = if i == n - 1 { "    needs \"w\"\n" } else { "" };
        let reads = match i {
            0 => "    untrusted \"gather.diff\"\n".to_owned(),
            _ => format!("    resume \"r{}.conversation\"\n", i - 1),
        };
        text.push_str(&format!(
            "stage \"r{i}\" uses=\"std/review\" {{\n{needs}    reviewer \"rules\"\n{reads}}}\n"
        ));
    }
    let path = write(dir.path(), "chain.kdl", &text);
    let all = findings(&path);
    assert_eq!(all.len(), n, "one finding per reviewer");
    let first = &all[0];
    assert_eq!(first["stage"], "r0");
    let message = first["message"].as_str().unwrap_or_default();
    assert!(
        message.ends_with(
            "`gather.diff` → `r0` is a diff; `r0.conversation` → `r1` is private; \
             `r1.conversation` → `r2` is private; 995 more joins; `r997.conversation` → `r998` \
             is private; `r998.conversation` → `r999` is private; `w` sits between `gather` and \
             `r999`"
        ),
        "{message}"
    );
    for f in &all {
        assert!(f["related"].as_array().map_or(0, Vec::len) <= 8, "{f:#}");
        assert!(f["message"].as_str().map_or(0, str::len) < 1024, "{f:#}");
    }
}
