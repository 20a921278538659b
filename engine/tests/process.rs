//! Child processes: cleared environment, secrets only in env or stdin, redacted output, and
//! termination of the whole process group on timeout, cancellation and exit.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use reviewflow_engine::exec::process::{
    self, ChildResult, ChildSpec, Outcome, ProcessError, Stdin, Stream, minimal_path,
};
use reviewflow_engine::exec::redact::Redactor;
use reviewflow_engine::exec::secret::SecretValue;
use tempfile::TempDir;

const TOKEN: &str = "tok_9f8e7d6c5b4a3210-secret";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/bin")
        .join(name)
}

fn spec(script: &str, dir: &TempDir) -> ChildSpec {
    let mut spec = ChildSpec::new(fixture(script), dir.path());
    spec.grace = Duration::from_millis(200);
    // A safety net so that a broken build fails instead of hanging; no test relies on it.
    spec.timeout = Some(Duration::from_secs(60));
    spec
}

fn redactor() -> Redactor {
    Redactor::new([("token", TOKEN)]).unwrap()
}

type Lines = Arc<Mutex<Vec<(Stream, String)>>>;

async fn run_collecting(spec: ChildSpec) -> (ChildResult, Vec<(Stream, String)>) {
    let lines: Lines = Arc::default();
    let sink = lines.clone();
    let result = process::run(spec, &redactor(), std::future::pending(), move |s, l| {
        sink.lock()
            .unwrap()
            .push((s, String::from_utf8_lossy(&l).into_owned()))
    })
    .await
    .unwrap();
    let lines = lines.lock().unwrap().clone();
    (result, lines)
}

fn texts(lines: &[(Stream, String)], stream: Stream) -> Vec<String> {
    lines
        .iter()
        .filter(|(s, _)| *s == stream)
        .map(|(_, l)| l.clone())
        .collect()
}

/// Whether `pid` names a live process (`kill -0`, with a zombie counting as dead: in a
/// container, pid 1 may never reap an orphan).
fn alive(pid: &str) -> bool {
    let status = std::process::Command::new("/bin/sh")
        .args(["-c", &format!("kill -0 {pid} 2>/dev/null")])
        .status()
        .unwrap();
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true);
    status.success() && !zombie
}

/// The grandchild was SIGKILLed before `run` returned; give the kernel a moment to finish it
/// off (a generous bound, not a timing assertion).
async fn assert_gone(pidfile: &Path) {
    let pid = std::fs::read_to_string(pidfile).unwrap();
    let pid = pid.trim();
    assert!(!pid.is_empty());
    for _ in 0..100 {
        if !alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Do not leave it behind when failing.
    let _ = std::process::Command::new("/bin/kill")
        .args(["-KILL", pid])
        .status();
    panic!("grandchild {pid} is still alive");
}

#[tokio::test]
async fn child_sees_only_declared_environment_and_secret_only_in_env() {
    let dir = TempDir::new().unwrap();
    let report = dir.path().join("report");
    let mut spec = spec("spy.sh", &dir)
        .arg(report.to_str().unwrap())
        .arg("--flag")
        .env("DECLARED", "yes")
        .secret_env("TOKEN", SecretValue::from(TOKEN));
    spec.timeout = None;
    let (result, lines) = run_collecting(spec).await;
    assert_eq!(result.outcome, Outcome::Exited(0));
    assert_eq!(texts(&lines, Stream::Stdout), ["reported"]);

    let report = std::fs::read_to_string(report).unwrap();
    let mut environ: Vec<&str> = report
        .lines()
        .filter_map(|l| l.strip_prefix("environ:"))
        .collect();
    environ.sort();
    assert_eq!(environ, ["DECLARED=yes", &format!("TOKEN={TOKEN}")]);
    // `env` runs under the shell, which exports PWD itself.
    let mut env: Vec<&str> = report
        .lines()
        .filter_map(|l| l.strip_prefix("env:"))
        .filter(|l| !l.starts_with("PWD="))
        .collect();
    env.sort();
    assert_eq!(env, environ);
    let args: Vec<&str> = report
        .lines()
        .filter_map(|l| l.strip_prefix("arg:"))
        .collect();
    assert_eq!(args.len(), 2);
    assert_eq!(args[1], "--flag");
    assert!(!args.iter().any(|a| a.contains(TOKEN)));
}

#[tokio::test]
async fn without_a_declared_path_a_bare_name_is_not_found() {
    let dir = TempDir::new().unwrap();
    let err = process::run(
        ChildSpec::new("sh", dir.path()),
        &redactor(),
        std::future::pending(),
        |_, _| {},
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, ProcessError::ProgramNotFound { path: None, .. }),
        "{err}"
    );
}

#[tokio::test]
async fn a_bare_name_is_found_in_the_declared_path() {
    let dir = TempDir::new().unwrap();
    let spec = ChildSpec::new("sh", dir.path())
        .env("PATH", minimal_path())
        .arg("-c")
        .arg("echo hi");
    let (result, lines) = run_collecting(spec).await;
    assert_eq!(result.outcome, Outcome::Exited(0));
    assert_eq!(texts(&lines, Stream::Stdout), ["hi"]);
}

#[tokio::test]
async fn a_variable_declared_twice_is_refused_before_spawning() {
    let dir = TempDir::new().unwrap();
    let spec = spec("status.sh", &dir)
        .env("TOKEN", "plain")
        .secret_env("TOKEN", SecretValue::from(TOKEN));
    let err = process::run(spec, &redactor(), std::future::pending(), |_, _| {})
        .await
        .unwrap_err();
    assert!(matches!(&err, ProcessError::DuplicateEnv { name } if name == "TOKEN"));
}

#[tokio::test]
async fn secret_echoed_in_every_shape_comes_out_redacted() {
    let dir = TempDir::new().unwrap();
    let mut spec = spec("secret_echo.sh", &dir).secret_env("TOKEN", SecretValue::from(TOKEN));
    spec.capture_stdout = Some(1 << 20);
    let (result, lines) = run_collecting(spec).await;
    assert_eq!(result.outcome, Outcome::Exited(0));
    assert_eq!(
        texts(&lines, Stream::Stdout),
        [
            "plain:[redacted:token]",
            "b64:[redacted:token]",
            "split:[redacted:token]"
        ]
    );
    assert_eq!(texts(&lines, Stream::Stderr), ["stderr:[redacted:token]"]);
    let stdout = String::from_utf8(result.stdout).unwrap();
    assert_eq!(
        stdout,
        "plain:[redacted:token]\nb64:[redacted:token]\nsplit:[redacted:token]\n"
    );
    let b64 = base64::engine::general_purpose::STANDARD.encode(TOKEN);
    for (_, line) in &lines {
        assert!(!line.contains(TOKEN) && !line.contains(&b64));
    }
}

#[tokio::test]
async fn stdin_is_delivered_then_closed() {
    let dir = TempDir::new().unwrap();
    let mut spec = spec("stdin_cat.sh", &dir);
    spec.stdin = Stdin::Bytes(b"hello\nworld\n".to_vec());
    let (result, lines) = run_collecting(spec).await;
    assert_eq!(result.outcome, Outcome::Exited(0));
    assert_eq!(texts(&lines, Stream::Stdout), ["hello", "world", "eof"]);
}

#[tokio::test]
async fn secret_stdin_is_delivered_and_its_echo_redacted() {
    let dir = TempDir::new().unwrap();
    let mut spec = spec("stdin_cat.sh", &dir);
    spec.stdin = Stdin::Secret(SecretValue::from(format!("key={TOKEN}\n")));
    let (result, lines) = run_collecting(spec).await;
    assert_eq!(result.outcome, Outcome::Exited(0));
    assert_eq!(
        texts(&lines, Stream::Stdout),
        ["key=[redacted:token]", "eof"]
    );
}

#[tokio::test]
async fn without_stdin_a_reader_gets_end_of_file() {
    let dir = TempDir::new().unwrap();
    let (result, lines) = run_collecting(spec("stdin_cat.sh", &dir)).await;
    assert_eq!(result.outcome, Outcome::Exited(0));
    assert_eq!(texts(&lines, Stream::Stdout), ["eof"]);
}

#[tokio::test]
async fn exit_codes_and_signals_are_reported() {
    let dir = TempDir::new().unwrap();
    let (result, _) = run_collecting(spec("status.sh", &dir).arg("code").arg("7")).await;
    assert_eq!(result.outcome, Outcome::Exited(7));
    assert!(!result.outcome.success());
    let (result, _) = run_collecting(spec("status.sh", &dir).arg("code").arg("0")).await;
    assert!(result.outcome.success());
    let (result, _) = run_collecting(spec("status.sh", &dir).arg("signal").arg("KILL")).await;
    assert_eq!(result.outcome, Outcome::Signalled(9));
    assert!(!result.forced_kill);
}

#[tokio::test]
async fn timeout_kills_a_child_that_ignores_sigterm_and_its_grandchild() {
    let dir = TempDir::new().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let mut spec = spec("stubborn.sh", &dir).arg(pidfile.to_str().unwrap());
    spec.timeout = Some(Duration::from_secs(2));
    let (result, lines) = run_collecting(spec).await;
    assert_eq!(result.outcome, Outcome::TimedOut);
    assert!(
        result.forced_kill,
        "SIGTERM is ignored: only SIGKILL ends it"
    );
    assert_eq!(texts(&lines, Stream::Stdout), ["ready"]);
    assert_gone(&pidfile).await;
}

#[tokio::test]
async fn cancellation_kills_a_child_that_ignores_sigterm_and_its_grandchild() {
    let dir = TempDir::new().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let mut spec = spec("stubborn.sh", &dir).arg(pidfile.to_str().unwrap());
    spec.timeout = None;
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();
    let mut ready_tx = Some(ready_tx);
    let cancel = async {
        let _ = ready_rx.await;
    };
    let result = process::run(spec, &redactor(), cancel, move |_, line| {
        if line == b"ready" {
            ready_tx.take().map(|tx| tx.send(()));
        }
    })
    .await
    .unwrap();
    assert_eq!(result.outcome, Outcome::Cancelled);
    assert!(result.forced_kill);
    assert_gone(&pidfile).await;
}

#[tokio::test]
async fn cancellation_of_a_child_that_obeys_sigterm_still_kills_what_it_left_behind() {
    let dir = TempDir::new().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let mut spec = spec("polite.sh", &dir).arg(pidfile.to_str().unwrap());
    // A grace far longer than the child needs: its own exit must end the wait.
    spec.grace = Duration::from_secs(5);
    spec.timeout = None;
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut rx_cancel = rx.clone();
    let cancel = async move {
        let _ = rx_cancel.wait_for(|cancelled| *cancelled).await;
    };
    let result = process::run(spec, &redactor(), cancel, move |_, line| {
        if line == b"ready" {
            let _ = tx.send(true);
        }
    })
    .await
    .unwrap();
    drop(rx);
    assert_eq!(result.outcome, Outcome::Cancelled);
    assert!(!result.forced_kill);
    assert_eq!(result.status.code(), Some(3));
    assert_gone(&pidfile).await;
}

#[tokio::test]
async fn a_background_grandchild_does_not_outlive_a_successful_child() {
    let dir = TempDir::new().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let mut spec = spec("lingering.sh", &dir).arg(pidfile.to_str().unwrap());
    // The grandchild holds stdout open: killing it is what ends the drain (bounded by the grace).
    spec.grace = Duration::from_secs(5);
    let (result, lines) = run_collecting(spec).await;
    assert_eq!(result.outcome, Outcome::Exited(0));
    assert_eq!(texts(&lines, Stream::Stdout), ["started"]);
    assert_gone(&pidfile).await;
}

#[tokio::test]
async fn a_long_line_is_cut_into_bounded_pieces_and_still_redacted() {
    let dir = TempDir::new().unwrap();
    let mut spec = spec("long_line.sh", &dir).secret_env("TOKEN", SecretValue::from(TOKEN));
    spec.max_line = 4096;
    spec.capture_stdout = Some(1000);
    let (result, lines) = run_collecting(spec).await;
    assert_eq!(result.outcome, Outcome::Exited(0));
    assert!(lines.iter().all(|(_, l)| l.len() <= 4096));
    let joined: String = lines.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(joined.len(), 200_000 + "[redacted:token]".len());
    assert!(joined.contains("x[redacted:token]y"));
    assert_eq!(result.stdout.len(), 1000);
    assert!(result.stdout_truncated);
}

#[tokio::test]
async fn the_run_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let dir = TempDir::new().unwrap();
    let redactor = redactor();
    let future = process::run(
        spec("status.sh", &dir).arg("code").arg("0"),
        &redactor,
        std::future::pending(),
        |_, _| {},
    );
    assert_send(&future);
    assert!(future.await.unwrap().outcome.success());
}

#[test]
fn debug_of_a_spec_never_shows_a_secret() {
    let mut spec = ChildSpec::new("/bin/true", "/").secret_env("TOKEN", SecretValue::from(TOKEN));
    spec.stdin = Stdin::Secret(SecretValue::from(TOKEN));
    let debug = format!("{spec:?}");
    assert!(!debug.contains(TOKEN), "{debug}");
    assert!(debug.contains("[redacted]"));
}

#[tokio::test]
async fn dropping_the_run_future_kills_the_whole_group() {
    let dir = TempDir::new().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let mut spec = spec("stubborn.sh", &dir).arg(pidfile.to_str().unwrap());
    spec.timeout = None;
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();
    let mut ready_tx = Some(ready_tx);
    let redactor = redactor();
    let run = process::run(spec, &redactor, std::future::pending(), move |_, line| {
        if line == b"ready" {
            ready_tx.take().map(|tx| tx.send(()));
        }
    });
    tokio::select! {
        _ = run => panic!("the stubborn child cannot finish by itself"),
        _ = ready_rx => {}
    }
    assert_gone(&pidfile).await;
}

#[tokio::test]
async fn every_child_starts_without_new_privileges_or_capabilities() {
    // Outside a run and without a `confine` spec: no Landlock, but the privilege steps apply.
    let dir = TempDir::new().unwrap();
    let mut spec = ChildSpec::new("/bin/cat", dir.path()).arg("/proc/self/status");
    spec.timeout = Some(Duration::from_secs(60));
    let (result, lines) = run_collecting(spec).await;
    assert!(result.outcome.success());
    let status = texts(&lines, Stream::Stdout);
    let field = |name: &str| {
        status
            .iter()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .map(str::trim)
    };
    assert_eq!(field("NoNewPrivs"), Some("1"), "{status:?}");
    assert_eq!(field("CapEff"), Some("0000000000000000"));
    assert_eq!(field("CapPrm"), Some("0000000000000000"));
    assert_eq!(field("CapAmb"), Some("0000000000000000"));
}

#[test]
fn a_child_dies_with_the_thread_that_started_it() {
    // The supervising future is forgotten, so nothing but the parent-death signal can end the
    // child: when the thread that spawned it ends, the kernel sends it SIGKILL.
    let dir = TempDir::new().unwrap();
    let pidfile = dir.path().join("child.pid");
    let script = format!(
        "echo $$ > {}; echo ready; exec sleep 1000",
        pidfile.display()
    );
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();
            let mut ready_tx = Some(ready_tx);
            let redactor = redactor();
            let spec = ChildSpec::new("/bin/sh", "/").arg("-c").arg(script);
            let mut run = Box::pin(process::run(
                spec,
                &redactor,
                std::future::pending(),
                move |_, line| {
                    if line == b"ready" {
                        ready_tx.take().map(|tx| tx.send(()));
                    }
                },
            ));
            tokio::select! {
                _ = &mut run => panic!("the child cannot finish by itself"),
                _ = ready_rx => {}
            }
            std::mem::forget(run);
        });
        std::mem::forget(runtime);
    });
    thread.join().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(assert_gone(&pidfile));
}

/// The engine ignores SIGPIPE (the Rust runtime does); its children start with it at its
/// default, whether the kernel reset the engine's handlers at the `clone3` or the child did.
#[tokio::test]
async fn a_child_starts_with_sigpipe_at_its_default() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = ChildSpec::new(PathBuf::from("/bin/cat"), dir.path());
    spec.args = vec!["/proc/self/status".into()];
    spec.timeout = Some(Duration::from_secs(60));
    let (result, lines) = run_collecting(spec).await;
    assert_eq!(result.outcome, Outcome::Exited(0), "{lines:?}");
    let ignored = texts(&lines, Stream::Stdout)
        .iter()
        .find_map(|l| l.strip_prefix("SigIgn:").map(|m| m.trim().to_string()))
        .expect("SigIgn in /proc/self/status");
    let mask = u64::from_str_radix(&ignored, 16).unwrap();
    assert_eq!(
        mask & (1 << (13 - 1)),
        0,
        "SIGPIPE ignored in the child: {ignored}"
    );
}
