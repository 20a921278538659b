//! Running the binary the way a user does.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

// What a test could not check here (shared with the stdlib's tests).
#[path = "../../stdlib/tests/support/skip.rs"]
mod skip;
pub use skip::{not_tried, skipped};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// `exit N`, then stdout and stderr, for snapshots.
    pub fn transcript(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// The variables by which a platform tells that a run is on it (each registered platform's
/// `detected`): the suite's own CI must not make a test's run one of that platform's.
const PLATFORM_VARIABLES: &[&str] = &["GITHUB_ACTIONS", "GITLAB_CI"];

/// The binary as a user starts it on their own machine: no colour, and on no platform, whatever
/// machine runs the suite. A test that wants a platform sets its variable after.
pub fn command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reviewflow"));
    cmd.env("NO_COLOR", "1");
    for name in PLATFORM_VARIABLES {
        cmd.env_remove(name);
    }
    cmd
}

pub fn reviewflow(args: &[&str]) -> Run {
    reviewflow_in(&root(), args)
}

pub fn reviewflow_in(dir: &Path, args: &[&str]) -> Run {
    let out: Output = command()
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The findings JSON of one file.
pub fn findings_json(path: &str) -> serde_json::Value {
    let run = reviewflow(&["check", "--format", "json", "--fail-on", "never", path]);
    serde_json::from_str(&run.stdout).expect("check --format json prints JSON")
}

/// Every file under `dir`, recursively (unreadable folders are skipped).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in read.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The pids whose parent is `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if parent == Some(pid) {
            out.push(child);
        }
    }
    out
}

/// A git repository in a temp folder on `main`: the checkout of a `reviewflow run` test.
pub struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    /// An empty repository.
    pub fn init() -> Self {
        let repo = Self {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    /// `examples/local.kdl` and `README.md` in a first commit, `src/lib.rs` in a second.
    pub fn local_example() -> Self {
        let repo = Self::init();
        std::fs::create_dir_all(repo.path().join("examples")).expect("mkdir");
        std::fs::copy(
            root().join("examples/local.kdl"),
            repo.path().join("examples/local.kdl"),
        )
        .expect("copy");
        repo.commit("README.md", "hello\n", "first");
        repo.commit("src/lib.rs", "pub fn f() {}\n", "second");
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs git in the repository; its trimmed stdout.
    pub fn git(&self, args: &[&str]) -> String {
        git_in(self.path(), args)
    }

    /// Writes `file` and commits everything but `.reviewflow`.
    pub fn commit(&self, file: &str, text: &str, message: &str) {
        self.write(file, text);
        self.git(&["add", "-A", "--", ".", ":!.reviewflow"]);
        self.git(&["commit", "-q", "-m", message]);
    }

    /// Writes `file` and commits it alone: untracked files stay out of the diff.
    pub fn commit_file(&self, file: &str, text: &str, message: &str) {
        self.write(file, text);
        self.git(&["add", "--", file]);
        self.git(&["commit", "-q", "-m", message]);
    }

    pub fn write(&self, file: &str, text: &str) {
        let path = self.path().join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, text).expect("write");
    }
}

/// Runs git in `dir` (with an identity, never signing); its trimmed stdout.
pub fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        // A GIT_DIR inherited from a hook would point every call at another repository.
        .env_remove("GIT_DIR")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A step of a GitHub Actions job as the runner starts it, against a fake GitHub: the event
/// that started the run, and the runner's temp folder (also `HOME`).
pub struct ActionsStep<'a> {
    pub api_url: &'a str,
    pub repository: &'a str,
    pub event_name: &'a str,
    pub event_path: &'a Path,
    pub run_id: u64,
    pub temp: &'a Path,
}

impl ActionsStep<'_> {
    /// Gives `cmd` the runner's variables and nothing of the test's environment but `PATH`;
    /// the caller adds the step's own `env` (secrets, inputs, `GITHUB_OUTPUT`).
    pub fn environment<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.temp)
            .env("NO_COLOR", "1")
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_API_URL", self.api_url)
            .env("GITHUB_SERVER_URL", "https://github.example")
            .env("GITHUB_REPOSITORY", self.repository)
            // The fake GitHub's id of its repository (`fake_github::REPO_ID`), as the runner
            // sets it.
            .env("GITHUB_REPOSITORY_ID", "1296269")
            .env("GITHUB_EVENT_NAME", self.event_name)
            .env("GITHUB_EVENT_PATH", self.event_path)
            .env("GITHUB_RUN_ID", self.run_id.to_string())
            .env("GITHUB_RUN_ATTEMPT", "1")
            .env("RUNNER_TEMP", self.temp)
    }
}

/// `text` with each `allow` that names no finding given the ids of the findings it would have
/// covered, one `allow` line per id (principle 6: an `allow` names the finding it hides). For
/// tests that must run a pipeline `check` reports on purpose; the ids are `check`'s own.
pub fn with_allow_ids(text: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    with_allow_ids_in(dir.path(), text)
}

/// [`with_allow_ids`], checked in `dir` (for checks that look at the files around the pipeline,
/// such as `lens-missing`).
pub fn with_allow_ids_in(dir: &Path, text: &str) -> String {
    let path = dir.join(".with-allow-ids.kdl");
    std::fs::write(&path, text).expect("write");
    let json = findings_json(path.to_str().expect("utf-8 path"));
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    let findings = json["files"][0]["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for f in findings.iter().rev() {
        let message = f["message"].as_str().unwrap_or_default();
        if f["check"] != "suppression" || !message.contains("names no finding") {
            continue;
        }
        let help = f["help"].as_str().unwrap_or_default();
        let ids: Vec<&str> = help
            .split("finding=\"")
            .skip(1)
            .filter_map(|s| s.split('"').next())
            .collect();
        let at = f["location"]["line"].as_u64().expect("a line") as usize - 1;
        let line = lines[at].clone();
        let Some(close) = line
            .find("allow \"")
            .and_then(|a| line[a + 7..].find('"').map(|c| a + 7 + c + 1))
        else {
            continue;
        };
        let named: Vec<String> = ids
            .iter()
            .map(|id| format!("{} finding=\"{id}\"{}", &line[..close], &line[close..]))
            .collect();
        lines.splice(at..=at, named);
    }
    let _ = std::fs::remove_file(&path);
    lines.join("\n")
}

/// The installation token the fake GitHub requires of the example's job.
pub const JOB_TOKEN: &str = "ghs_FakeInstallationTokenForTheTestsOnly0123";
/// The conversation key of the example's job.
pub const JOB_KEY: &str = "0123456789abcdef0123456789abcdef-github-test";

/// One job of the workflow that runs `examples/review.kdl` on pull request `pr`, against the
/// fake GitHub at `api_url`: the checkout holds `pipeline` as the example, the event names the
/// pull request, and the fake CLIs come first on `PATH`.
pub struct ExampleJob<'a> {
    pub api_url: &'a str,
    pub repository: &'a str,
    pub pr: u64,
    pub run_id: u64,
    pub pipeline: String,
    /// After `run examples/review.kdl`.
    pub args: &'a [&'a str],
    /// The step's own variables besides the token, the key and `PROJECT=web`.
    pub env: Vec<(&'a str, String)>,
}

/// How a job ended: its exit status, its log and its step summary.
pub struct JobRun {
    pub code: i32,
    pub log: String,
    pub summary: String,
}

impl ExampleJob<'_> {
    pub async fn run(self) -> JobRun {
        let job = tempfile::tempdir().expect("tempdir");
        let dir = job.path().to_owned();
        std::fs::create_dir_all(dir.join("checkout/examples")).expect("mkdir");
        std::fs::create_dir_all(dir.join("temp")).expect("mkdir");
        std::fs::write(dir.join("checkout/examples/review.kdl"), &self.pipeline).expect("write");
        let pr = self.pr;
        std::fs::write(
            dir.join("event.json"),
            format!(r#"{{"action":"synchronize","number":{pr},"pull_request":{{"number":{pr}}}}}"#),
        )
        .expect("event");
        let mut cmd = command();
        let step = ActionsStep {
            api_url: self.api_url,
            repository: self.repository,
            event_name: "pull_request_target",
            event_path: &dir.join("event.json"),
            run_id: self.run_id,
            temp: &dir.join("temp"),
        };
        let path = format!(
            "{}:{}",
            root().join("tests/fakes").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        step.environment(&mut cmd)
            .args(["run", "examples/review.kdl"])
            .args(self.args)
            .current_dir(dir.join("checkout"))
            .env("PATH", path)
            .env("GITHUB_OUTPUT", dir.join("github_output"))
            .env("GITHUB_STEP_SUMMARY", dir.join("summary.md"))
            .env("GITHUB_TOKEN", JOB_TOKEN)
            .env("REVIEW_CONVERSATION_KEY", JOB_KEY)
            .env("PROJECT", "web");
        for (name, value) in &self.env {
            cmd.env(name, value);
        }
        let out = tokio::task::spawn_blocking(move || cmd.output())
            .await
            .expect("join")
            .expect("the binary runs");
        let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap_or_default();
        drop(job);
        JobRun {
            code: out.status.code().unwrap_or(-1),
            log: format!(
                "exit {:?}\n--- stdout\n{}--- stderr\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
            summary,
        }
    }
}
