//! Kept outputs through the library: folder outputs (kept, digested, reused on resume, refused
//! when tampered with) and the facts a stage records in the manifest.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use reviewflow_engine::contract::{LabelRule, OutputType, StageContract};
use reviewflow_engine::run::{
    BoxFuture, CancelReason, ConsoleMode, Event, Implementations, Outcome, RunOptions, RunReport,
    RunStatus, StageCx, StageError, StageImpl, StageOutputs, cancel_pair, execute, read_tolerant,
};
use reviewflow_engine::syntax::Limits;
use reviewflow_engine::{Registry, Source, compile};

/// The value of the run's only secret, `token`.
const SECRET: &str = "s3cret-T0ken-value-0123456789";

/// Fills the folder a stage returns.
type Fill = Arc<dyn Fn(&Path) + Send + Sync>;

/// `test/folder`: returns its work folder, filled by `fill`, as `conversation`, and records which
/// model answered.
struct Folder {
    runs: Arc<AtomicUsize>,
    fill: Fill,
}

impl StageImpl for Folder {
    fn run<'a>(&'a self, cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
        Box::pin(async move {
            self.runs.fetch_add(1, Ordering::SeqCst);
            cx.facts.record("reviewer.model", "opus-4");
            let dir = cx.work_dir().await?.join("conversation");
            std::fs::create_dir(&dir).map_err(|e| StageError::io("create", e))?;
            (self.fill)(&dir);
            Ok(StageOutputs::from([(
                "conversation".to_string(),
                cx.output_file(&dir).await?,
            )]))
        })
    }
}

/// How `test/facts` ends once it has recorded its facts.
#[derive(Clone, Copy)]
enum End {
    Ok,
    Fail,
    Hang,
}

/// `test/facts`: records facts (one of them holding the run's secret), then ends as told.
struct Facts {
    end: End,
    /// Told when the facts are recorded: a test cancels after that, not after a while.
    recorded: Arc<tokio::sync::Notify>,
}

impl StageImpl for Facts {
    fn run<'a>(&'a self, cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
        Box::pin(async move {
            cx.facts.record("reviewer.model", "first");
            cx.facts.record("reviewer.model", "opus-4");
            cx.facts.record("reviewer.cli-version", "2.0.1");
            cx.facts
                .record("reviewer.said", format!("token {SECRET} used"));
            cx.facts.record("reviewer.long", "x".repeat(2000));
            self.recorded.notify_one();
            match self.end {
                End::Ok => Ok(StageOutputs::new()),
                End::Fail => Err(StageError::failed("the reviewer broke")),
                End::Hang => {
                    cx.cancel.cancelled().await;
                    Err(StageError::Cancelled)
                }
            }
        })
    }
}

fn registry() -> Registry {
    let mut r = Registry::with_builtins();
    r.register(
        StageContract::new("test/folder", "returns a folder").output(
            "conversation",
            OutputType::File,
            "a folder",
            LabelRule::none(),
        ),
    );
    r.register(StageContract::new("test/facts", "records facts"));
    r
}

/// `review` returns a folder; `after` reads a file in it, and fails until the allow file exists.
const FOLDER_PIPELINE: &str = r#"
pipeline "folders"
secret "token" env="TOKEN" {
    visible-to "after"
}
stage "review" uses="test/folder"
stage "after" uses="run" {
    command "sh" "-c" "test -f \"$ALLOW\" && cat {review.conversation}/notes/b.txt && test \"$(cat {review.conversation}/notes/b.txt)\" = 'said [redacted:token]'"
    env "ALLOW" "{allow}"
    secret-env "T" "token"
    output "said"
}
input "allow" env="ALLOW"
trusted "input" name="allow" reason="the test sets it"
"#;

fn facts_pipeline(props: &str) -> String {
    format!(
        r#"
pipeline "facts"
secret "token" env="TOKEN" {{
    visible-to "use"
}}
stage "review" uses="test/facts" {props}
stage "use" uses="run" {{
    command "true"
    secret-env "T" "token"
}}
"#
    )
}

struct Env {
    dir: tempfile::TempDir,
    runs: Arc<AtomicUsize>,
}

impl Env {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            runs: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn options(&self, resume: Option<&str>) -> RunOptions {
        let mut o = RunOptions::new(self.dir.path());
        o.console = ConsoleMode::Quiet;
        o.grace = std::time::Duration::from_millis(300);
        o.resume = resume.map(str::to_string);
        let allow = self.dir.path().join("allow").to_string_lossy().into_owned();
        o.env = Arc::new(move |name| match name {
            "ALLOW" => Some(allow.clone().into()),
            "TOKEN" => Some(SECRET.into()),
            _ => None,
        });
        o
    }

    async fn run(&self, source: &str, impls: Implementations, options: RunOptions) -> RunReport {
        let registry = registry();
        let compiled = compile(
            Source::new("t.kdl", source.to_string()),
            &registry,
            &Limits::default(),
        )
        .map_err(|_| "compile")
        .unwrap();
        execute(&compiled, &registry, &impls, options)
            .await
            .unwrap()
    }

    async fn run_folder(&self, fill: Fill, resume: Option<&str>) -> RunReport {
        let mut impls = Implementations::with_builtins();
        impls.register(
            "test/folder",
            Arc::new(Folder {
                runs: self.runs.clone(),
                fill,
            }),
        );
        self.run(FOLDER_PIPELINE, impls, self.options(resume)).await
    }

    async fn run_facts(&self, props: &str, end: End, options: RunOptions) -> RunReport {
        self.run_facts_told(props, end, options, Arc::default())
            .await
    }

    /// [`Env::run_facts`], `recorded` told once the stage has recorded its facts.
    async fn run_facts_told(
        &self,
        props: &str,
        end: End,
        options: RunOptions,
        recorded: Arc<tokio::sync::Notify>,
    ) -> RunReport {
        let mut impls = Implementations::with_builtins();
        impls.register("test/facts", Arc::new(Facts { end, recorded }));
        self.run(&facts_pipeline(props), impls, options).await
    }

    /// A parent whose `review` kept its folder and whose `after` failed (no allow file yet).
    async fn parent(&self) -> RunReport {
        let r = self.run_folder(conversation(), None).await;
        assert_eq!(r.status, RunStatus::Failed, "{:?}", r.manifest);
        assert_eq!(
            r.manifest.stage("review").unwrap().outcome,
            Outcome::Succeeded
        );
        std::fs::write(self.dir.path().join("allow"), "").unwrap();
        r
    }
}

/// A conversation folder: two files (one holding the run's secret), a subfolder, an empty one.
fn conversation() -> Fill {
    Arc::new(|dir: &Path| {
        std::fs::write(dir.join("a.txt"), "hello").unwrap();
        std::fs::create_dir(dir.join("notes")).unwrap();
        std::fs::write(dir.join("notes/b.txt"), format!("said {SECRET}")).unwrap();
        std::fs::create_dir(dir.join("empty")).unwrap();
    })
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn manifest_json(r: &RunReport) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(r.run_dir.join("manifest.json")).unwrap()).unwrap()
}

fn warnings(r: &RunReport) -> Vec<String> {
    read_tolerant(&r.run_dir.join("events.jsonl"))
        .unwrap()
        .events
        .into_iter()
        .filter_map(|e| match e.event {
            Event::Warning { message, .. } => Some(message),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_folder_output_is_kept_private_redacted_and_reused_on_resume() {
    let env = Env::new();
    let parent = env.parent().await;
    let record = &parent.manifest.stage("review").unwrap().outputs["conversation"];
    assert_eq!(record.ty, "file");
    assert_eq!(
        record.file.as_deref(),
        Some("outputs/review/conversation"),
        "{record:?}"
    );
    assert!(record.digest.starts_with("sha256:"), "{record:?}");
    let kept = parent.run_dir.join("outputs/review/conversation");
    assert_eq!(
        std::fs::read_to_string(kept.join("a.txt")).unwrap(),
        "hello"
    );
    assert_eq!(
        std::fs::read_to_string(kept.join("notes/b.txt")).unwrap(),
        "said [redacted:token]"
    );
    assert!(kept.join("empty").is_dir());
    assert_eq!(mode(&kept), 0o700);
    assert_eq!(mode(&kept.join("notes")), 0o700);
    assert_eq!(mode(&kept.join("empty")), 0o700);
    assert_eq!(mode(&kept.join("a.txt")), 0o600);
    assert_eq!(mode(&kept.join("notes/b.txt")), 0o600);

    let r = env.run_folder(conversation(), Some(&parent.run_id)).await;
    assert_eq!(r.status, RunStatus::Succeeded, "{:?}", r.manifest);
    assert_eq!(env.runs.load(Ordering::SeqCst), 1, "the reviewer ran again");
    let review = r.manifest.stage("review").unwrap();
    assert_eq!(review.outcome, Outcome::Reused);
    assert_eq!(review.outputs["conversation"], *record);
    let copy = r.run_dir.join("outputs/review/conversation");
    assert_eq!(
        std::fs::read_to_string(copy.join("a.txt")).unwrap(),
        "hello"
    );
    assert!(copy.join("empty").is_dir());
    assert_eq!(mode(&copy.join("notes/b.txt")), 0o600);
    // The consumer read the folder through its own copy, redacted: it succeeds only if it read
    // `said [redacted:token]`. What it said carries the secret it holds, so it does not outlive
    // the run.
    let after = r.manifest.stage("after").unwrap();
    assert_eq!(after.outcome, Outcome::Succeeded, "{after:?}");
    assert_eq!(after.outputs["said"].discarded.as_deref(), Some("secret"));
    assert_eq!(after.outputs["said"].file, None);
    // What really answered stays with the outputs it produced.
    assert_eq!(review.facts["reviewer.model"], "opus-4");
}

#[tokio::test]
async fn a_folder_changed_inside_is_not_reused_on_resume() {
    type Tamper = fn(&Path);
    let tampers: [(&str, Tamper); 4] = [
        ("changed", |k| {
            std::fs::write(k.join("a.txt"), "HELLO").unwrap()
        }),
        ("added", |k| {
            std::fs::write(k.join("notes/c.txt"), "").unwrap()
        }),
        ("removed", |k| {
            std::fs::remove_file(k.join("a.txt")).unwrap()
        }),
        // A removed empty folder is made again from the record (the next test); an added one is
        // not in it.
        ("an empty folder added", |k| {
            std::fs::create_dir(k.join("notes/new")).unwrap()
        }),
    ];
    for (what, tamper) in tampers {
        let env = Env::new();
        let parent = env.parent().await;
        tamper(&parent.run_dir.join("outputs/review/conversation"));
        let r = env.run_folder(conversation(), Some(&parent.run_id)).await;
        assert_eq!(r.status, RunStatus::Succeeded, "{what}: {:?}", r.manifest);
        assert_eq!(
            r.manifest.stage("review").unwrap().outcome,
            Outcome::Succeeded,
            "{what}"
        );
        assert_eq!(env.runs.load(Ordering::SeqCst), 2, "{what}");
        let warnings = warnings(&r);
        assert!(
            warnings
                .iter()
                .any(|w| w == "not reused: output `conversation` no longer matches its digest"),
            "{what}: {warnings:?}"
        );
        // The stage ran again and kept its folder where the refused copy would have gone.
        let kept = r.run_dir.join("outputs/review/conversation");
        assert_eq!(
            std::fs::read_to_string(kept.join("a.txt")).unwrap(),
            "hello"
        );
    }
}

/// A kept folder handed over as a GitHub artifact loses its empty folders (an artifact carries
/// files only), its modes (a download writes 0644 files in 0755 folders) and its times: its record
/// lists the empty folders, a resume makes them again, and modes and times are not read.
#[tokio::test]
async fn a_kept_folder_that_lost_its_empty_folders_modes_and_times_is_reused() {
    let env = Env::new();
    let parent = env.parent().await;
    let record = &parent.manifest.stage("review").unwrap().outputs["conversation"];
    assert_eq!(record.empty_folders, ["empty"], "{record:?}");
    let kept = parent.run_dir.join("outputs/review/conversation");
    std::fs::remove_dir(kept.join("empty")).unwrap();
    let long_ago = std::time::UNIX_EPOCH + std::time::Duration::from_secs(86_400);
    for (path, m) in [
        (kept.join("a.txt"), 0o644),
        (kept.join("notes/b.txt"), 0o644),
        (kept.join("notes"), 0o755),
        (kept.clone(), 0o755),
    ] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(m)).unwrap();
        std::fs::File::open(&path)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
    }
    let r = env.run_folder(conversation(), Some(&parent.run_id)).await;
    assert_eq!(r.status, RunStatus::Succeeded, "{:?}", r.manifest);
    let review = r.manifest.stage("review").unwrap();
    assert_eq!(review.outcome, Outcome::Reused, "{:?}", warnings(&r));
    assert_eq!(
        env.runs.load(Ordering::SeqCst),
        1,
        "the reviewer did not run again"
    );
    assert_eq!(review.outputs["conversation"], *record);
    let copy = r.run_dir.join("outputs/review/conversation");
    assert!(copy.join("empty").is_dir());
    assert_eq!(mode(&copy.join("empty")), 0o700);
    assert_eq!(mode(&copy.join("a.txt")), 0o600);
}

#[tokio::test]
async fn a_link_planted_in_a_kept_folder_is_not_reused() {
    let env = Env::new();
    let parent = env.parent().await;
    let kept = parent.run_dir.join("outputs/review/conversation");
    std::os::unix::fs::symlink("/etc/passwd", kept.join("notes/link")).unwrap();
    let r = env.run_folder(conversation(), Some(&parent.run_id)).await;
    assert_eq!(
        r.manifest.stage("review").unwrap().outcome,
        Outcome::Succeeded
    );
    let warnings = warnings(&r);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("output `conversation`") && w.contains("symbolic link")),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn a_folder_holding_a_symbolic_link_is_refused_naming_it() {
    let env = Env::new();
    std::fs::write(env.dir.path().join("allow"), "").unwrap();
    let fill: Fill = Arc::new(|dir: &Path| {
        std::fs::create_dir(dir.join("notes")).unwrap();
        std::fs::write(dir.join("notes/b.txt"), "b").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.join("notes/passwd")).unwrap();
    });
    let r = env.run_folder(fill, None).await;
    assert_eq!(r.status, RunStatus::Failed);
    let review = r.manifest.stage("review").unwrap();
    assert_eq!(review.outcome, Outcome::Failed);
    let reason = review.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("output `conversation`")
            && reason.contains("notes/passwd")
            && reason.contains("symbolic link"),
        "{reason}"
    );
    assert!(
        !r.run_dir.join("outputs/review/conversation").exists(),
        "nothing half-kept"
    );
}

#[tokio::test]
async fn a_folder_holding_a_fifo_is_refused_naming_it() {
    let env = Env::new();
    let fill: Fill = Arc::new(|dir: &Path| {
        let fifo = std::ffi::CString::new(dir.join("pipe").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    });
    let r = env.run_folder(fill, None).await;
    let review = r.manifest.stage("review").unwrap();
    assert_eq!(review.outcome, Outcome::Failed);
    let reason = review.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains("pipe") && reason.contains("not a regular file or folder"),
        "{reason}"
    );
}

#[tokio::test]
async fn stage_facts_are_in_the_manifest_redacted() {
    let env = Env::new();
    let r = env.run_facts("", End::Ok, env.options(None)).await;
    assert_eq!(r.status, RunStatus::Succeeded, "{:?}", r.manifest);
    let json = manifest_json(&r);
    let stages = json["stages"].as_array().unwrap();
    let review = stages.iter().find(|s| s["name"] == "review").unwrap();
    let facts: BTreeMap<String, String> = serde_json::from_value(review["facts"].clone()).unwrap();
    assert_eq!(facts["reviewer.model"], "opus-4", "a later record replaces");
    assert_eq!(facts["reviewer.cli-version"], "2.0.1");
    assert_eq!(facts["reviewer.said"], "token [redacted:token] used");
    assert_eq!(
        facts["reviewer.long"],
        "x".repeat(1024),
        "cut at 1024 chars"
    );
    assert_eq!(facts.len(), 4);
    assert!(!json.to_string().contains(SECRET));
    // A stage that records nothing has no `facts` key at all.
    let used = stages.iter().find(|s| s["name"] == "use").unwrap();
    assert!(used.get("facts").is_none(), "{used}");

    // The manifest with facts is valid against the published schema.
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/manifest.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[tokio::test]
async fn facts_are_kept_whatever_the_stage_outcome() {
    for (props, end, outcome) in [
        (r#"on-error="fallback""#, End::Fail, Outcome::FellBack),
        ("", End::Fail, Outcome::Failed),
        (r#"timeout="200ms""#, End::Hang, Outcome::Failed),
    ] {
        let env = Env::new();
        let r = env.run_facts(props, end, env.options(None)).await;
        let review = r.manifest.stage("review").unwrap();
        assert_eq!(review.outcome, outcome, "{props}");
        assert_eq!(review.facts["reviewer.model"], "opus-4", "{props}");
        assert_eq!(
            review.facts["reviewer.said"], "token [redacted:token] used",
            "{props}"
        );
    }

    let env = Env::new();
    let mut options = env.options(None);
    let (canceller, signal) = cancel_pair();
    options.cancel = signal;
    let recorded = Arc::new(tokio::sync::Notify::new());
    let told = recorded.clone();
    let interrupt = tokio::spawn(async move {
        told.notified().await;
        canceller.cancel(CancelReason::Interrupted(libc::SIGINT));
        canceller
    });
    let r = env.run_facts_told("", End::Hang, options, recorded).await;
    drop(interrupt.await);
    assert_eq!(r.status, RunStatus::Cancelled);
    let review = r.manifest.stage("review").unwrap();
    assert_eq!(review.outcome, Outcome::Cancelled);
    assert_eq!(review.facts["reviewer.model"], "opus-4");
}

/// `test/tamper`: a stage that reached the run directory (through a folder it shares with the
/// checkout, say) and rewrites what `make` kept, before `use` reads it.
struct Tamper {
    what: fn(&Path),
}

impl StageImpl for Tamper {
    fn run<'a>(&'a self, cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
        Box::pin(async move {
            (self.what)(&cx.run_dir.join("outputs/make"));
            Ok(StageOutputs::new())
        })
    }
}

/// `make` keeps a file and a folder; `tamper` runs after it, `use` after both.
const TAMPER_PIPELINE: &str = r#"
pipeline "tamper"
stage "make" uses="run" {
    command "sh" "-c" "cd \"$REVIEWFLOW_WORK_DIR\" && echo as-kept > cfg && mkdir tree && echo a > tree/a"
    output "cfg" file="cfg" type="file"
    output "tree" file="tree" type="file"
}
stage "tamper" uses="test/tamper" {
    needs "make"
}
stage "use" uses="run" {
    needs "tamper"
    command "cat" "{make.cfg}" "{make.tree}/a"
    output "said"
}
"#;

#[tokio::test]
async fn a_kept_output_changed_before_its_consumer_reads_it_fails_the_consumer() {
    type Change = fn(&Path);
    let changes: [(&str, Change, &str); 4] = [
        ("nothing", |_| {}, ""),
        (
            "the file rewritten",
            |k| std::fs::write(k.join("cfg"), "tampered\n").unwrap(),
            "kept output `cfg` of stage `make` changed after it was kept",
        ),
        (
            "a file planted in the folder",
            |k| std::fs::write(k.join("tree/planted"), "").unwrap(),
            "kept output `tree` of stage `make` changed after it was kept",
        ),
        (
            "the file swapped for a link",
            |k| {
                std::fs::remove_file(k.join("cfg")).unwrap();
                std::os::unix::fs::symlink("/etc/hostname", k.join("cfg")).unwrap();
            },
            "is a symbolic link",
        ),
    ];
    for (what, change, reason) in changes {
        let env = Env::new();
        let mut registry = registry();
        registry.register(StageContract::new("test/tamper", "rewrites a kept output"));
        let mut impls = Implementations::with_builtins();
        impls.register("test/tamper", Arc::new(Tamper { what: change }));
        let compiled = compile(
            Source::new("t.kdl", TAMPER_PIPELINE.to_string()),
            &registry,
            &Limits::default(),
        )
        .map_err(|_| "compile")
        .unwrap();
        let r = execute(&compiled, &registry, &impls, env.options(None))
            .await
            .unwrap();
        let used = r.manifest.stage("use").unwrap();
        if reason.is_empty() {
            assert_eq!(r.status, RunStatus::Succeeded, "{what}: {:?}", r.manifest);
            continue;
        }
        assert_eq!(r.status, RunStatus::Failed, "{what}: {:?}", r.manifest);
        assert_eq!(used.outcome, Outcome::Failed, "{what}");
        let said = used.reason.clone().unwrap_or_default();
        assert!(said.contains(reason), "{what}: {said}");
    }
}

/// `test/reader`: reads `spender.cost` and keeps what it is told of the producers that did not
/// finish.
struct Reader {
    seen: Arc<std::sync::Mutex<Vec<reviewflow_engine::run::Unfinished>>>,
}

impl StageImpl for Reader {
    fn run<'a>(&'a self, cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
        Box::pin(async move {
            self.seen
                .lock()
                .unwrap()
                .extend(cx.unfinished.iter().cloned());
            Ok(StageOutputs::new())
        })
    }
}

#[tokio::test]
async fn a_stage_that_did_not_finish_hands_its_facts_to_its_consumers() {
    use reviewflow_engine::contract::{ChildSpec, FallbackValue, Role, ValueType};
    let mut registry = registry();
    registry.register(
        StageContract::new("test/spender", "records what it spent, then fails")
            .output("cost", OutputType::Json, "what it cost", LabelRule::none())
            .fallback("cost", FallbackValue::Absent),
    );
    registry.register(
        StageContract::new("test/reader", "reads a cost").child(
            ChildSpec::new("cost", Role::Data, "what the spender cost")
                .arg(ValueType::Reference)
                .accepts(&[OutputType::Json]),
        ),
    );
    let source = r#"
pipeline "unfinished"
secret "token" env="TOKEN" {
    visible-to "use"
}
stage "review" uses="test/spender" on-error="fallback"
stage "read" uses="test/reader" {
    cost "review.cost"
}
stage "use" uses="run" {
    command "true"
    secret-env "T" "token"
}
"#;
    let compiled = compile(
        Source::new("t.kdl", source.to_string()),
        &registry,
        &Limits::default(),
    )
    .map_err(|_| "compile")
    .unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut impls = Implementations::with_builtins();
    impls.register(
        "test/spender",
        Arc::new(Facts {
            end: End::Fail,
            recorded: Arc::default(),
        }),
    );
    impls.register("test/reader", Arc::new(Reader { seen: seen.clone() }));
    let env = Env::new();
    let r = execute(&compiled, &registry, &impls, env.options(None))
        .await
        .unwrap();
    assert_eq!(
        r.manifest.stage("review").unwrap().outcome,
        Outcome::FellBack
    );
    let seen = seen.lock().unwrap();
    let review = seen.iter().find(|u| u.stage == "review").unwrap();
    // As the manifest keeps them: redacted, cut.
    assert_eq!(review.facts, r.manifest.stage("review").unwrap().facts);
    assert_eq!(review.facts["reviewer.model"], "opus-4");
    assert_eq!(review.facts["reviewer.said"], "token [redacted:token] used");
}
