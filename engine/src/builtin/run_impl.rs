//! The implementation of `run` (contract in [`super::run`]): one child process.
//!
//! The child's environment is cleared, then holds exactly: the stage's `env` children, its
//! `secret-env` children (secrets in its scope only), `PATH` (the stage's own, else
//! [`minimal_path`]), `REVIEWFLOW_WORK_DIR` (the stage's work folder, where `output … file=`
//! paths are read), and from the engine the stage marker and `TMPDIR`/`TMP`/`TEMP` (the work
//! folder). Secrets never appear in its arguments. Its output lines go through the run's
//! redactor before they are shown; outputs read from stdout are the redacted stdout.
//!
//! The child is confined (docs/executor.md, "What a child can reach"): it reads the checkout and
//! the system folders, writes its work folder, and also reads and writes the folders (or files)
//! that pipeline inputs it interpolates in `command`, `cwd` or `env` name. A `file` output of a
//! producer reaches it as a copy in its work folder (`inputs/<stage>/<output>`), never as a path
//! into the run directory.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::exec::confine::{self, ConfineSpec};
use crate::exec::process::{self, ChildSpec, Outcome, Stdin, minimal_path};
use crate::model::Value;
use crate::run::{BoxFuture, OutputValue, Resolved, StageCx, StageError, StageImpl, StageOutputs};

/// Stdout kept for outputs read from it.
const STDOUT_CAP: usize = 8 * 1024 * 1024;

/// `run`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunStage;

impl StageImpl for RunStage {
    fn run<'a>(&'a self, cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
        Box::pin(run(cx))
    }

    // Its work is its command: prepared before a slot is free, kept after.
    fn slot_per_program(&self) -> bool {
        true
    }
}

struct Declared {
    name: String,
    file: Option<String>,
    ty: String,
}

async fn run(cx: StageCx<'_>) -> Result<StageOutputs, StageError> {
    let work = cx.work_dir().await?.to_path_buf();
    let mut words: Vec<String> = Vec::new();
    let mut cwd: PathBuf = cx.checkout.to_path_buf();
    let mut env: Vec<(String, String)> = Vec::new();
    let mut secret_env = Vec::new();
    let mut stdin = Stdin::Null;
    let mut outputs: Vec<Declared> = Vec::new();
    for child in cx.children {
        match child.name.as_str() {
            "command" => words.extend(child.args.iter().filter_map(Resolved::text)),
            "cwd" => {
                if let Some(dir) = child.args.first().and_then(Resolved::text) {
                    cwd = cx.checkout.join(dir);
                }
            }
            "env" => {
                if let (Some(n), Some(v)) = (
                    child.args.first().and_then(Resolved::text),
                    child.args.get(1).and_then(Resolved::text),
                ) {
                    env.push((n, v));
                }
            }
            "secret-env" => {
                let var = child.args.first().and_then(Resolved::text);
                let secret = match child.args.get(1) {
                    Some(Resolved::Secret(s)) => Some(s.as_str()),
                    _ => None,
                };
                if let (Some(var), Some(secret)) = (var, secret) {
                    let Some(value) = cx.secrets.get(secret) else {
                        return Err(StageError::failed(format!(
                            "secret `{secret}` is not in this stage's scope"
                        )));
                    };
                    secret_env.push((var, value.clone()));
                }
            }
            "stdin" => {
                if let Some(text) = child.args.first().and_then(Resolved::text) {
                    stdin = Stdin::Bytes(text.into_bytes());
                }
            }
            "output" => {
                if let Some(name) = child.args.first().and_then(Resolved::text) {
                    outputs.push(Declared {
                        name,
                        file: child.prop("file").and_then(Resolved::text),
                        ty: child
                            .prop("type")
                            .and_then(Resolved::text)
                            .unwrap_or_else(|| "text".into()),
                    });
                }
            }
            _ => {}
        }
    }
    // Kept files of producers reach the child as copies in its own folder.
    let copies = cx.copy_input_files().await?;
    if !copies.is_empty() {
        for text in words.iter_mut().chain(env.iter_mut().map(|(_, v)| v)) {
            localize(text, &copies);
        }
        if let Stdin::Bytes(bytes) = &mut stdin
            && let Ok(mut text) = String::from_utf8(std::mem::take(bytes))
        {
            localize(&mut text, &copies);
            *bytes = text.into_bytes();
        }
    }
    let Some((program, args)) = words.split_first() else {
        return Err(StageError::failed("`command` is empty"));
    };
    if !env.iter().any(|(n, _)| n == "PATH") {
        env.push(("PATH".into(), minimal_path().into()));
    }
    env.push((
        "REVIEWFLOW_WORK_DIR".into(),
        work.to_string_lossy().into_owned(),
    ));
    let mut spec = ChildSpec::new(program, cwd);
    spec.args = args.to_vec();
    spec.env = env;
    spec.secret_env = secret_env;
    spec.stdin = stdin;
    spec.grace = cx.grace;
    spec.capture_stdout = outputs
        .iter()
        .any(|o| o.file.is_none())
        .then_some(STDOUT_CAP);
    spec.confine = confinement(&cx, &work).await?;
    // A stage that names its hosts reaches them through the egress proxy, its only network.
    let egress = Egress::start(&cx)?;
    if let Some(egress) = &egress {
        let url = format!("http://127.0.0.1:{}", egress.port);
        spec.env.retain(|(n, _)| {
            !PROXY_VARS.contains(&n.as_str()) && !matches!(n.as_str(), "NO_PROXY" | "no_proxy")
        });
        for var in PROXY_VARS {
            spec.env.push(((*var).into(), url.clone()));
        }
        spec.confine = spec.confine.map(|c| c.connect(egress.port));
    }
    // A refused access shows only in the program's own words: a failure says how it ran.
    let confined = spec
        .confine
        .as_ref()
        .map(|c| format!(" ({})", confine::describe(c, &confine::kernel())))
        .unwrap_or_default();

    let cancel = cx.cancel.clone();
    let status = cx.status.clone();
    let result = process::run(
        spec,
        cx.redactor,
        async move {
            cancel.cancelled().await;
        },
        |stream, line| status.line(stream, &line),
    )
    .await
    .map_err(|e| StageError::failed(e.to_string()))?;
    if let Some(egress) = egress {
        egress.report(&cx);
    }

    if result.forced_kill {
        cx.status
            .status("the command did not stop on SIGTERM; killed after the grace period");
    }
    match result.outcome {
        Outcome::Exited(0) => {}
        Outcome::Exited(code) => {
            return Err(StageError::failed(format!(
                "the command exited with code {code}{confined}"
            )));
        }
        Outcome::Signalled(sig) => {
            return Err(StageError::failed(format!(
                "the command was killed by signal {sig}{confined}"
            )));
        }
        Outcome::TimedOut | Outcome::Cancelled => return Err(StageError::Cancelled),
    }
    if result.stdout_truncated {
        return Err(StageError::failed(format!(
            "stdout is longer than {} MiB, the most an output reads",
            STDOUT_CAP / (1024 * 1024)
        )));
    }
    let mut values = StageOutputs::new();
    for o in outputs {
        let bytes = match &o.file {
            None => result.stdout.clone(),
            Some(rel) => {
                let path = work.join(rel);
                if !path.starts_with(&work) || rel.split('/').any(|c| c == "..") {
                    return Err(StageError::failed(format!(
                        "output `{}`: `{rel}` is outside the work folder",
                        o.name
                    )));
                }
                // The child wrote the work folder: no link in it is followed, a FIFO is not
                // waited on, and a value is read within the bound.
                let (w, r, ty) = (work.clone(), rel.clone(), o.ty.clone());
                let read = tokio::task::spawn_blocking(move || read_output(&w, &r, &ty))
                    .await
                    .map_err(|e| StageError::failed(format!("a worker thread failed: {e}")))?;
                let bytes = match read {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        return Err(StageError::failed(format!(
                            "output `{}`: `{rel}`: {}",
                            o.name,
                            output_error(&e)
                        )));
                    }
                };
                if o.ty == "file" {
                    values.insert(o.name, cx.output_file(&path).await?);
                    continue;
                }
                bytes
            }
        };
        let value = parse(&o.name, &o.ty, bytes)?;
        values.insert(o.name, value);
    }
    Ok(values)
}

/// Reads the output file `rel` of the work folder `work` through the reader (no link followed
/// at any component, the work folder itself included): a value (at most [`STDOUT_CAP`] bytes),
/// or for a `file` output only the check that it is a regular file or a folder (kept later,
/// through the reader again, within its own bounds).
fn read_output(work: &Path, rel: &str, ty: &str) -> std::io::Result<Vec<u8>> {
    let folder = crate::beneath::Folder::open(work)?;
    if ty == "file" {
        folder.entry(Path::new(rel))?;
        return Ok(Vec::new());
    }
    folder.read(Path::new(rel), STDOUT_CAP as u64)
}

/// The reason, without the work folder's path (the status line names the output and `rel`).
fn output_error(e: &std::io::Error) -> String {
    use crate::beneath::{Why, refused};
    if e.kind() == std::io::ErrorKind::FileTooLarge {
        return format!(
            "it is larger than {} MiB, the most an output reads",
            STDOUT_CAP / (1024 * 1024)
        );
    }
    // The file itself, or a folder on the way to it.
    match refused(e).map(|r| r.why) {
        Some(Why::Link) => {
            "it is a symbolic link (an output is read only from a regular file the command wrote)"
                .to_owned()
        }
        Some(Why::NotRegular) => {
            "it is not a regular file (a FIFO, socket, device or folder)".to_owned()
        }
        Some(Why::Special) => {
            "it is not a regular file or folder (a FIFO, socket or device)".to_owned()
        }
        Some(Why::Changed) => "it changed while it was read".to_owned(),
        _ => e.to_string(),
    }
}

/// The child's confinement: the stage's, plus the paths its declaration names through pipeline
/// inputs. `None` when the run turned it off.
async fn confinement(cx: &StageCx<'_>, work: &Path) -> Result<Option<ConfineSpec>, StageError> {
    let Some(mut spec) = cx.confine().await? else {
        return Ok(None);
    };
    for (input, named, real) in declared_paths(cx) {
        match forbidden(&real, cx, work) {
            // As named: a link inside the checkout must not widen the grant (the planner
            // checks where it leads).
            None => spec = spec.write(named),
            Some(why) => cx.status.status(format!(
                "warning: input `{input}` names {}, {why}: the command may not reach it",
                real.display()
            )),
        }
    }
    Ok(Some(spec))
}

/// Existing absolute paths named by the pipeline inputs the stage interpolates in `command`,
/// `cwd` or `env`: the input, the path as named, and resolved.
fn declared_paths(cx: &StageCx<'_>) -> Vec<(String, PathBuf, PathBuf)> {
    let names: BTreeSet<&str> = cx
        .stage
        .children
        .iter()
        .filter(|c| matches!(c.name.value.as_str(), "command" | "cwd" | "env"))
        .flat_map(|c| c.args.iter())
        .filter_map(|a| match &a.value {
            Value::Template(t) => Some(t.inputs().map(|(name, _)| name)),
            _ => None,
        })
        .flatten()
        .collect();
    names
        .into_iter()
        .filter_map(|name| {
            let value = Path::new(cx.inputs.get(name)?);
            if !value.is_absolute() {
                return None;
            }
            let real = std::fs::canonicalize(value).ok()?;
            Some((name.to_string(), value.to_path_buf(), real))
        })
        .collect()
}

/// Why a declared path may not be granted: the root, the run directories, `.reviewflow`, the
/// checkout's `.git`, another stage's folder, or a folder that holds any of them (Landlock
/// cannot deny beneath a folder it grants, so a grant of the checkout would reach `.git/hooks`
/// and the kept outputs: the whole grant is refused).
fn forbidden(path: &Path, cx: &StageCx<'_>, work: &Path) -> Option<&'static str> {
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if path.parent().is_none() {
        return Some("the root folder");
    }
    let runs = cx.run_dir.parent().map(real);
    if let Some(runs) = &runs {
        if path.starts_with(runs) {
            return Some("inside the run directories");
        }
        if runs.starts_with(path) {
            return Some("a folder that holds the run directories");
        }
    }
    for (name, inside, holds) in [
        (
            ".reviewflow",
            "inside the checkout's .reviewflow",
            "a folder that holds the checkout's .reviewflow",
        ),
        (
            ".git",
            "inside the checkout's .git",
            "a folder that holds the checkout's .git",
        ),
    ] {
        let protected = real(&cx.checkout.join(name));
        if path.starts_with(&protected) {
            return Some(inside);
        }
        if protected.starts_with(path) {
            return Some(holds);
        }
    }
    // Every path no stage may reach (the user's home, the temp folder, …): a grant of one, or
    // of a folder holding one, would reach it.
    if let Some(spec) = cx.scope_confinement()
        && spec
            .hidden
            .iter()
            .map(|h| real(h))
            .any(|h| h.starts_with(path))
    {
        return Some(
            "a folder no stage may reach, or one that holds it (the user's home, the temp folder)",
        );
    }
    // The run's work root, beside the other runs' in the temp folder.
    let root = work.parent().map(real);
    if root.as_ref().is_some_and(|r| r.starts_with(path)) {
        return Some("a folder that holds the stages' work folders");
    }
    let temp = work.parent().and_then(Path::parent).map(real);
    if let Some(temp) = temp
        && let Ok(rest) = path.strip_prefix(&temp)
        && rest
            .components()
            .next()
            .is_some_and(|c| c.as_os_str().to_string_lossy().starts_with("reviewflow-"))
    {
        return Some("inside a stage's work folder");
    }
    None
}

/// Replaces each kept path in `text` with its copy (longest first, so that no path is replaced
/// inside a longer one).
fn localize(text: &mut String, copies: &[(PathBuf, PathBuf)]) {
    let mut pairs: Vec<(String, String)> = copies
        .iter()
        .map(|(from, to)| (from.display().to_string(), to.display().to_string()))
        .collect();
    pairs.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    for (from, to) in pairs {
        if text.contains(&from) {
            *text = text.replace(&from, &to);
        }
    }
}

fn parse(name: &str, ty: &str, bytes: Vec<u8>) -> Result<OutputValue, StageError> {
    let text = || {
        String::from_utf8(bytes.clone())
            .map_err(|_| StageError::failed(format!("output `{name}` is not UTF-8 text")))
    };
    Ok(match ty {
        "bool" => match text()?.trim() {
            "true" => OutputValue::Bool(true),
            "false" => OutputValue::Bool(false),
            other => {
                return Err(StageError::failed(format!(
                    "output `{name}` is not `true` or `false`: {:?}",
                    other.chars().take(40).collect::<String>()
                )));
            }
        },
        "json" | "findings" => OutputValue::Json(
            serde_json::from_slice(&bytes)
                .map_err(|e| StageError::failed(format!("output `{name}` is not JSON: {e}")))?,
        ),
        "file" => OutputValue::Bytes(bytes),
        _ => {
            let mut t = text()?;
            // `echo` ends with a newline that is not part of the value.
            if t.ends_with('\n') {
                t.pop();
                if t.ends_with('\r') {
                    t.pop();
                }
            }
            OutputValue::Text(t)
        }
    })
}

/// The variables that name an HTTP proxy, upper and lower case (programs read either).
const PROXY_VARS: &[&str] = &[
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// The egress proxy of a stage whose `network` names hosts (docs/egress.md): served by the
/// engine on a loopback port of the stage's own network namespace, ended with the stage.
struct Egress {
    port: u16,
    tally: std::sync::Arc<crate::exec::egress::Tally>,
    task: tokio::task::JoinHandle<()>,
}

impl Egress {
    fn start(cx: &StageCx<'_>) -> Result<Option<Self>, StageError> {
        use crate::exec::egress::{Allowed, Limits, Tally, serve};
        let stage = cx.stage;
        if stage.network.is_empty() || stage.host_network() {
            return Ok(None);
        }
        let failed = |e: std::io::Error| {
            StageError::failed(format!("cannot start the egress proxy of `network`: {e}"))
        };
        let listener = confine::listen_loopback().map_err(failed)?;
        let port = listener.local_addr().map_err(failed)?.port();
        let listener = tokio::net::TcpListener::from_std(listener).map_err(failed)?;
        let allowed = Allowed::new(
            stage
                .network
                .iter()
                .filter_map(|e| Some((e.value.host.as_deref()?, e.value.port))),
        );
        let tally = std::sync::Arc::new(Tally::default());
        let task = tokio::spawn(serve(
            listener,
            std::sync::Arc::new(allowed),
            Limits::default(),
            tally.clone(),
        ));
        Ok(Some(Self { port, tally, task }))
    }

    /// Says what the proxy refused, if anything.
    fn report(&self, cx: &StageCx<'_>) {
        let refused = self.tally.refused();
        if refused > 0 {
            // What the child asked for may hold a secret of its stage: redacted like its output.
            let first = self.tally.first_refused().unwrap_or_default();
            let first = cx.redactor.redact(first.as_bytes());
            cx.status.status(format!(
                "egress: {} tunnel(s) opened, {refused} request(s) refused (first: {})",
                self.tally.tunnels(),
                String::from_utf8_lossy(&first)
            ));
        }
    }
}

impl Drop for Egress {
    /// The proxy ends with the stage, however the stage ends.
    fn drop(&mut self) {
        self.task.abort();
    }
}
