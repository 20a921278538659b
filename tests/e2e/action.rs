//! The composite action at the repository's top (`action.yml`, `docs/install.md`): its script,
//! `.github/action/install.sh`, run as the action runs it, with a fake `cargo` and a fake `curl`
//! on `PATH` (no network), and the action checked by zizmor and shellcheck where installed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::export::{tool, zizmor};
use crate::support::root;

/// A runner: the action's folder (the script, and the releases file when one is written), a
/// folder of fake programs, and the job's output and PATH files.
struct Runner {
    dir: tempfile::TempDir,
}

impl Runner {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let action = dir.path().join("action/.github/action");
        std::fs::create_dir_all(&action).expect("mkdir");
        std::fs::copy(
            root().join(".github/action/install.sh"),
            action.join("install.sh"),
        )
        .expect("copy the script");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        // cargo: logs its arguments and installs a reviewflow under --root.
        write_program(
            &bin.join("cargo"),
            "#!/bin/sh\necho \"cargo $*\" >>\"$FAKE_LOG\"\nwhile [ $# -gt 0 ]; do\n  \
             if [ \"$1\" = --root ]; then root=\"$2\"; fi\n  shift\ndone\n\
             mkdir -p \"$root/bin\"\nprintf '#!/bin/sh\\necho built\\n' >\"$root/bin/reviewflow\"\n\
             chmod +x \"$root/bin/reviewflow\"\n",
        );
        // curl: logs its arguments and writes the archive the test prepared to --output.
        write_program(
            &bin.join("curl"),
            "#!/bin/sh\necho \"curl $*\" >>\"$FAKE_LOG\"\nwhile [ $# -gt 0 ]; do\n  \
             if [ \"$1\" = --output ]; then out=\"$2\"; fi\n  shift\ndone\n\
             cp \"$FAKE_ARCHIVE\" \"$out\"\n",
        );
        Self { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path("log")).unwrap_or_default()
    }

    /// `install.sh <mode>`, as a step of the action.
    fn run(&self, mode: &str, env: &[(&str, &str)]) -> Output {
        let path = format!(
            "{}:{}",
            self.path("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut command = Command::new("bash");
        command
            .arg(self.path("action/.github/action/install.sh"))
            .arg(mode)
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.path("home"))
            .env("GITHUB_ACTION_PATH", self.path("action"))
            .env("GITHUB_OUTPUT", self.path("output"))
            .env("GITHUB_PATH", self.path("github-path"))
            .env("RUNNER_OS", "Linux")
            .env("RUNNER_ARCH", "X64")
            .env("RUNNER_TOOL_CACHE", self.path("tools"))
            .env("REVIEWFLOW_DIR", self.installed())
            .env("FAKE_LOG", self.path("log"))
            .env("FAKE_ARCHIVE", self.path("archive.tar.gz"));
        for (k, v) in env {
            command.env(k, v);
        }
        command.output().expect("bash runs")
    }

    /// The folder the plan step named, as the install step is given it.
    fn installed(&self) -> PathBuf {
        self.path("tools/reviewflow/planned")
    }

    /// The plan's outputs: the cache's folder and key.
    fn plan(&self) -> (String, String) {
        let _ = std::fs::remove_file(self.path("output"));
        let out = self.run("plan", &[]);
        assert!(out.status.success(), "{}", transcript(&out));
        let written = std::fs::read_to_string(self.path("output")).expect("outputs");
        let value = |name: &str| {
            written
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("no {name}= in {written:?}"))
                .to_owned()
        };
        (value("dir"), value("key"))
    }

    /// A release archive holding `bin/reviewflow`, and the releases file listing it with
    /// `checksum` (its own when `None`).
    fn release(&self, checksum: Option<&str>) {
        let tree = self.path("tree");
        std::fs::create_dir_all(tree.join("bin")).expect("mkdir");
        write_program(&tree.join("bin/reviewflow"), "#!/bin/sh\necho released\n");
        let tar = Command::new("tar")
            .arg("-czf")
            .arg(self.path("archive.tar.gz"))
            .arg("-C")
            .arg(&tree)
            .arg("bin")
            .output()
            .expect("tar runs");
        assert!(tar.status.success(), "{tar:?}");
        let sum = Command::new("sha256sum")
            .arg(self.path("archive.tar.gz"))
            .output()
            .expect("sha256sum runs");
        let own = String::from_utf8_lossy(&sum.stdout)
            .split(' ')
            .next()
            .unwrap_or_default()
            .to_owned();
        std::fs::write(
            self.path("action/.github/action/releases"),
            format!(
                "# target sha256 url\n\
                 aarch64-unknown-linux-gnu {} https://example.invalid/arm.tar.gz\n\
                 x86_64-unknown-linux-gnu {} https://example.invalid/x86.tar.gz\n",
                "0".repeat(64),
                checksum.unwrap_or(&own)
            ),
        )
        .expect("write");
    }
}

fn write_program(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn transcript(out: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The key is a digest of the action's files (the commit's, whatever ref named it): the same
/// files give the same key wherever they are, and any change gives another.
#[test]
fn the_plan_keys_the_cache_by_the_actions_files() {
    let runner = Runner::new();
    let (dir, key) = runner.plan();
    let digest = key
        .strip_prefix("reviewflow-Linux-X64-")
        .unwrap_or_else(|| panic!("{key}"));
    assert!(
        digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
        "{key}"
    );
    assert_eq!(
        dir,
        format!("{}/{digest}", runner.path("tools/reviewflow").display())
    );
    assert_eq!(runner.plan().1, key, "deterministic");
    let elsewhere = Runner::new();
    assert_eq!(elsewhere.plan().1, key, "the files, not where they are");
    std::fs::write(runner.path("action/Cargo.lock"), "changed\n").expect("write");
    assert_ne!(runner.plan().1, key, "another commit's files");
}

#[test]
fn without_a_release_it_builds_the_actions_source() {
    let runner = Runner::new();
    let out = runner.run("install", &[]);
    assert!(out.status.success(), "{}", transcript(&out));
    assert_eq!(
        runner.log(),
        format!(
            "cargo install --locked --path {} --root {}\n",
            runner.path("action").display(),
            runner.installed().display()
        ),
        "built once, from the action's folder, and nothing downloaded"
    );
    assert_eq!(
        std::fs::read_to_string(runner.path("github-path")).expect("PATH file"),
        format!("{}/bin\n", runner.installed().display())
    );
}

#[test]
fn a_listed_release_is_downloaded_and_checked() {
    let runner = Runner::new();
    runner.release(None);
    let out = runner.run("install", &[]);
    assert!(out.status.success(), "{}", transcript(&out));
    let log = runner.log();
    assert!(
        log.starts_with("curl --proto =https --tlsv1.2 "),
        "https only: {log}"
    );
    assert!(log.contains("https://example.invalid/x86.tar.gz"), "{log}");
    assert!(!log.contains("cargo"), "nothing built: {log}");
    assert_eq!(
        std::fs::read_to_string(runner.installed().join("bin/reviewflow")).expect("installed"),
        "#!/bin/sh\necho released\n"
    );
    assert_eq!(
        std::fs::read_to_string(runner.path("github-path")).expect("PATH file"),
        format!("{}/bin\n", runner.installed().display())
    );
}

#[test]
fn a_release_that_fails_its_checksum_installs_nothing() {
    let runner = Runner::new();
    runner.release(Some(&"1".repeat(64)));
    let out = runner.run("install", &[]);
    assert!(!out.status.success(), "{}", transcript(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("lists {}: nothing installed", "1".repeat(64))),
        "{stderr}"
    );
    assert!(!runner.log().contains("cargo"), "no build instead");
    assert!(!runner.installed().join("bin/reviewflow").exists());
    assert!(!runner.path("github-path").exists(), "nothing on PATH");
}

#[test]
fn a_cache_hit_installs_nothing_again() {
    let runner = Runner::new();
    std::fs::create_dir_all(runner.installed().join("bin")).expect("mkdir");
    write_program(
        &runner.installed().join("bin/reviewflow"),
        "#!/bin/sh\necho cached\n",
    );
    let out = runner.run("install", &[("REVIEWFLOW_CACHE_HIT", "true")]);
    assert!(out.status.success(), "{}", transcript(&out));
    assert_eq!(runner.log(), "", "neither built nor downloaded");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("restored from the cache"),
        "{}",
        transcript(&out)
    );
}

#[test]
fn the_action_passes_zizmor_and_shellcheck() {
    if let Some(z) = tool("zizmor", "REVIEWFLOW_ZIZMOR") {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("action.yml");
        std::fs::copy(root().join("action.yml"), &file).expect("copy");
        let found = zizmor(&z, &file);
        assert!(found.is_empty(), "zizmor on action.yml: {found:?}");
    }
    if let Some(s) = shellcheck() {
        let out = Command::new(s)
            .arg(root().join(".github/action/install.sh"))
            .output()
            .expect("shellcheck runs");
        assert!(out.status.success(), "{}", transcript(&out));
    }
}

/// shellcheck, named by `REVIEWFLOW_SHELLCHECK` or on `PATH`; optional even under CI (`.ci/run`
/// installs it where the system's packages have it), so a missing one is a note.
fn shellcheck() -> Option<PathBuf> {
    let found = match std::env::var_os("REVIEWFLOW_SHELLCHECK") {
        Some(p) => Some(PathBuf::from(p)).filter(|p| p.is_file()),
        None => std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("shellcheck"))
                .find(|p| p.is_file())
        }),
    };
    if found.is_none() {
        crate::support::skipped(
            "shellcheck not found (REVIEWFLOW_SHELLCHECK or PATH): .github/action/install.sh not checked",
        );
    }
    found
}

/// The action runs the script it is tested by.
#[test]
fn the_action_calls_the_script() {
    let action = std::fs::read_to_string(root().join("action.yml")).expect("action.yml");
    for mode in ["plan", "install"] {
        assert!(
            action.contains(&format!(
                "run: bash \"$GITHUB_ACTION_PATH/.github/action/install.sh\" {mode}\n"
            )),
            "{action}"
        );
    }
}
