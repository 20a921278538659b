//! Claude Code: `claude -p` with the prompt on stdin and `--output-format json`.
//!
//! A resumed try places the restored session at
//! `$HOME/.claude/projects/<encoded cwd>/<old id>.jsonl` and runs
//! `--resume <old> --fork-session --session-id <new>`: the CLI writes the continued conversation
//! to a new session and leaves the old one whole. A missing session makes the CLI exit 1 with
//! `No conversation found with session ID: …` (a refused resume: try 2 is fresh). The session
//! kept is the one the CLI reports in its JSON (`session_id`), since some versions pick their own.

use std::path::{Path, PathBuf};

use super::home::{self, TryHome, encode_project_dir, is_uuid};
use super::{Access, CliReview, ModelReviewer};

/// The tools a read-only reviewer has (`--tools`, the built-in set it may use).
const READ_TOOLS: &str = "Read,Grep,Glob";

/// Tools a read-only reviewer may not use: the shell, edits, the web, sub-agents. Denied
/// explicitly, as a second layer under `--tools` (in headless runs `--allowedTools`
/// pre-approves but does not restrict). Every name is a tool of the pinned version (.ci/run),
/// which warns on every run of a rule that names none.
const DENIED_TOOLS: &str = "Bash,Edit,Write,NotebookEdit,WebFetch,WebSearch,Task";

/// Where the CLI keeps the sessions of `cwd` under `home`.
pub(crate) fn project_dir(home: &TryHome, cwd: &Path) -> PathBuf {
    home.home
        .join(".claude")
        .join("projects")
        .join(encode_project_dir(cwd))
}

/// The arguments of a try: `resume` is the old session's id on a resumed try, `new_id` the
/// id of the session the try writes.
pub(crate) fn args(spec: &ModelReviewer, resume: Option<&str>, new_id: &str) -> Vec<String> {
    let mut a: Vec<String> = vec!["-p".into(), "--output-format".into(), "json".into()];
    if let Some(model) = &spec.model {
        a.extend(["--model".into(), model.clone()]);
    }
    a.extend(["--max-turns".into(), spec.max_turns.to_string()]);
    // The checkout is the change under review: its `.claude/settings.json` (hooks, permissions)
    // and `.mcp.json` must not configure the reviewer.
    a.extend([
        "--setting-sources".into(),
        "user".into(),
        "--strict-mcp-config".into(),
    ]);
    match spec.access {
        // The tools it has (an allowlist), and the dangerous ones denied besides.
        Access::ReadOnly => a.extend([
            "--tools".into(),
            READ_TOOLS.into(),
            "--disallowedTools".into(),
            DENIED_TOOLS.into(),
        ]),
        Access::Write => a.extend([
            "--permission-mode".into(),
            "acceptEdits".into(),
            "--allowedTools".into(),
            "Bash,Edit,Write".into(),
        ]),
    }
    if let Some(old) = resume {
        a.extend(["--resume".into(), old.into(), "--fork-session".into()]);
    }
    a.extend(["--session-id".into(), new_id.into()]);
    a
}

/// Places the restored session where a resume finds it; returns its id.
pub(crate) fn place_session(home: &TryHome, cwd: &Path, restored: &Path) -> Result<String, String> {
    let bytes = home::read_restored(restored)?;
    let id = session_id_of(restored, &bytes).ok_or_else(|| {
        "the restored conversation is not a Claude Code session (no session id)".to_owned()
    })?;
    home::place(&bytes, &project_dir(home, cwd).join(format!("{id}.jsonl")))?;
    Ok(id)
}

/// The id of a session file: its name (`<uuid>.jsonl`), else the `sessionId` of its lines.
fn session_id_of(path: &Path, bytes: &[u8]) -> Option<String> {
    let stem = path.file_stem()?.to_string_lossy();
    if is_uuid(&stem) && path.extension().is_some_and(|e| e == "jsonl") {
        return Some(stem.into_owned());
    }
    home::json_lines(bytes, 64).iter().find_map(|line| {
        line.get("sessionId")
            .and_then(|v| v.as_str())
            .filter(|s| is_uuid(s))
            .map(str::to_owned)
    })
}

/// Reads the CLI's JSON result and finds the session it wrote.
pub(crate) fn read_outcome(
    stdout: &[u8],
    home: &TryHome,
    cwd: &Path,
    resume: Option<&str>,
) -> Result<CliReview, String> {
    let json: serde_json::Value = serde_json::from_slice(trim(stdout))
        .map_err(|e| format!("the CLI's output is not its JSON result: {e}"))?;
    if json.get("type").and_then(|v| v.as_str()) != Some("result") {
        return Err("the CLI's output is not a result".to_owned());
    }
    if json.get("is_error").and_then(serde_json::Value::as_bool) != Some(false) {
        let subtype = json
            .get("subtype")
            .and_then(|v| v.as_str())
            .unwrap_or("unknown");
        return Err(format!("the CLI reported an error ({subtype})"));
    }
    let text = json
        .get("result")
        .and_then(|v| v.as_str())
        .ok_or("the CLI's result has no text")?
        .to_owned();
    let session_id = json
        .get("session_id")
        .and_then(|v| v.as_str())
        .filter(|s| is_uuid(s))
        .ok_or("the CLI's result names no session")?
        .to_owned();
    let session = project_dir(home, cwd).join(format!("{session_id}.jsonl"));
    home::check_session(home, &session)?;
    // A resume keeps the old id only in versions that append in place; any id the CLI reports
    // for a session it wrote in this try's private home continues the placed copy.
    let resumed = resume.is_some();
    let model = json
        .get("modelUsage")
        .and_then(|v| v.as_object())
        .and_then(|m| {
            let mut names: Vec<&str> = m.keys().map(String::as_str).collect();
            names.sort_unstable();
            (!names.is_empty()).then(|| names.join(","))
        });
    Ok(CliReview {
        text,
        session,
        session_id,
        model,
        resumed,
    })
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &bytes[start..end]
}
