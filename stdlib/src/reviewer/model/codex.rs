//! Codex: `codex exec --json` with the prompt on stdin (`-`) and a `CODEX_HOME` private to the
//! try.
//!
//! The thread id comes from the first event, `thread.started`. A resumed try places the restored
//! rollout under `$CODEX_HOME/sessions/YYYY/MM/DD/` and runs `codex exec … resume <id> -`; Codex
//! appends to that copy. Recent versions refuse an unknown id (`no rollout found for thread id`,
//! exit 1); older ones silently started a fresh thread with exit 0, so a `thread.started` whose id
//! is not the one asked for is a refused resume too. The rollout of the thread that answered is
//! the conversation kept; the model that answered is read from its `turn_context` lines.

use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use reviewflow_engine::beneath::{self, Entry, Folder};

use super::home::{self, TryHome, is_uuid};
use super::{Access, CliReview, ModelReviewer};

/// How deep `sessions/` is searched (`YYYY/MM/DD/file`).
const SESSIONS_DEPTH: usize = 4;
/// Most entries looked at while searching `sessions/`.
const MAX_SEARCH_ENTRIES: usize = 10_000;
/// Largest last message read.
const MAX_MESSAGE_BYTES: u64 = 1024 * 1024;
/// Rollout lines read for the model.
const MAX_ROLLOUT_LINES: usize = 100_000;

/// The arguments of a try; `resume` is the thread to continue.
pub(crate) fn args(spec: &ModelReviewer, resume: Option<&str>, last_message: &Path) -> Vec<String> {
    let sandbox = match spec.access {
        // No writes and no network inside Codex's own sandbox.
        Access::ReadOnly => "read-only",
        Access::Write => "workspace-write",
    };
    let mut a: Vec<String> = vec![
        "exec".into(),
        "--json".into(),
        "--sandbox".into(),
        sandbox.into(),
        "--skip-git-repo-check".into(),
        "--color".into(),
        "never".into(),
        "--output-last-message".into(),
        last_message.to_string_lossy().into_owned(),
    ];
    if let Some(model) = &spec.model {
        a.extend(["--model".into(), model.clone()]);
    }
    if let Some(id) = resume {
        a.extend(["resume".into(), id.into()]);
    }
    // The prompt comes on stdin, which is then closed.
    a.push("-".into());
    a
}

/// Places the restored rollout where `codex exec resume` finds it; returns the thread id.
pub(crate) fn place_session(home: &TryHome, restored: &Path) -> Result<String, String> {
    let name = restored
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bytes = home::read_restored(restored)?;
    let id = thread_id_of(&bytes, &name)
        .ok_or("the restored conversation is not a Codex rollout (no thread id)")?;
    let (date, file) = match rollout_date(&name) {
        Some(date) if name.ends_with(&format!("{id}.jsonl")) => (date, name.clone()),
        _ => {
            let now = time_parts();
            (
                [now[0].clone(), now[1].clone(), now[2].clone()],
                format!(
                    "rollout-{}-{}-{}T{}-{}-{}-{id}.jsonl",
                    now[0], now[1], now[2], now[3], now[4], now[5]
                ),
            )
        }
    };
    let to = home
        .codex_home
        .join("sessions")
        .join(&date[0])
        .join(&date[1])
        .join(&date[2])
        .join(file);
    home::place(&bytes, &to)?;
    Ok(id)
}

/// The thread id: the UUID ending the file name, else the `session_meta` line's `payload.id`.
fn thread_id_of(bytes: &[u8], name: &str) -> Option<String> {
    if let Some(stem) = name.strip_suffix(".jsonl")
        && stem.len() >= 36
        && let Some(id) = stem.get(stem.len() - 36..)
        && is_uuid(id)
    {
        return Some(id.to_owned());
    }
    home::json_lines(bytes, 8).iter().find_map(|line| {
        (line.get("type")?.as_str()? == "session_meta")
            .then(|| line.pointer("/payload/id")?.as_str().map(str::to_owned))
            .flatten()
            .filter(|id| is_uuid(id))
    })
}

/// `rollout-YYYY-MM-DDT…` → `[YYYY, MM, DD]`.
fn rollout_date(name: &str) -> Option<[String; 3]> {
    let rest = name.strip_prefix("rollout-")?;
    let (y, m, d) = (rest.get(0..4)?, rest.get(5..7)?, rest.get(8..10)?);
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    (digits(y) && digits(m) && digits(d) && rest.get(4..5)? == "-" && rest.get(7..8)? == "-")
        .then(|| [y.to_owned(), m.to_owned(), d.to_owned()])
}

/// Now in UTC: year, month, day, hour, minute, second, zero-padded.
fn time_parts() -> [String; 6] {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let t = reviewflow_engine::date::Utc::from_unix(i64::try_from(secs).unwrap_or(i64::MAX));
    [
        format!("{:04}", t.year),
        format!("{:02}", t.month),
        format!("{:02}", t.day),
        format!("{:02}", t.hour),
        format!("{:02}", t.minute),
        format!("{:02}", t.second),
    ]
}

/// Reads the events (the thread that started), the last message, and finds the rollout.
pub(crate) fn read_outcome(
    stdout: &[u8],
    home: &TryHome,
    resume: Option<&str>,
) -> Result<CliReview, String> {
    let mut thread = None;
    // `error` events are also transient ("Reconnecting... 2/5"): only `turn.failed` ends the
    // turn; the last error explains a missing answer.
    let mut last_error: Option<String> = None;
    for line in stdout.split(|&b| b == b'\n') {
        let Ok(event) = serde_json::from_slice::<serde_json::Value>(line) else {
            continue;
        };
        match event.get("type").and_then(|v| v.as_str()) {
            Some("thread.started") if thread.is_none() => {
                thread = event
                    .get("thread_id")
                    .and_then(|v| v.as_str())
                    .map(str::to_owned);
            }
            Some("turn.failed") => {
                let message = event
                    .pointer("/error/message")
                    .and_then(|v| v.as_str())
                    .unwrap_or("no message");
                let message: String = message.chars().take(200).collect();
                return Err(format!("the turn failed: {message}"));
            }
            Some("error") => {
                last_error = event
                    .get("message")
                    .and_then(|v| v.as_str())
                    .map(|m| m.chars().take(200).collect());
            }
            _ => {}
        }
    }
    let thread = thread
        .filter(|t| is_uuid(t))
        .ok_or("the CLI reported no thread.started event")?;
    if let Some(asked) = resume
        && asked != thread
    {
        // Older versions start a new thread silently when the one asked for is unknown.
        return Err(format!(
            "the CLI started thread {thread} instead of resuming {asked} (a refused resume)"
        ));
    }
    let session = find_rollout(home, &thread)
        .ok_or_else(|| format!("the CLI wrote no rollout for thread {thread}"))?;
    let rollout = home::read_session(home, &session)?;
    let text = read_last_message(home).map_err(|e| match &last_error {
        Some(error) => format!("{e} (the last error: {error})"),
        None => e,
    })?;
    let model = home::json_lines(&rollout, MAX_ROLLOUT_LINES)
        .iter()
        .rev()
        .find_map(|l| {
            (l.get("type")?.as_str()? == "turn_context")
                .then(|| l.pointer("/payload/model")?.as_str().map(str::to_owned))
                .flatten()
        });
    Ok(CliReview {
        text,
        session,
        session_id: thread,
        model,
        resumed: resume.is_some(),
    })
}

/// The last message the CLI wrote (`-o`), through the engine's reader beneath the try's folder.
fn read_last_message(home: &TryHome) -> Result<String, String> {
    let rel = home
        .last_message
        .strip_prefix(&home.root)
        .map_err(|_| "the last message is not in the try's folder".to_owned())?;
    let read = Folder::open(&home.root).and_then(|f| f.read(rel, MAX_MESSAGE_BYTES));
    match read {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err("the CLI wrote no last message".to_owned())
        }
        Err(e) if e.kind() == io::ErrorKind::FileTooLarge || beneath::refused(&e).is_some() => {
            Err("the CLI's last message is not a regular file within 1 MiB".to_owned())
        }
        Err(e) => Err(format!("cannot read the last message: {e}")),
    }
}

/// The rollout of `thread` under `sessions/` in the try's folder, found by descriptors (never
/// through a link), bounded.
fn find_rollout(home: &TryHome, thread: &str) -> Option<PathBuf> {
    let suffix = format!("-{thread}.jsonl");
    let rel = home
        .codex_home
        .join("sessions")
        .strip_prefix(&home.root)
        .ok()?
        .to_path_buf();
    let sessions = Folder::open(&home.root).ok()?.folder(&rel).ok()?;
    let mut seen = 0;
    let mut stack = vec![(sessions, home.codex_home.join("sessions"), 0usize)];
    while let Some((dir, path, depth)) = stack.pop() {
        let names = dir.names(MAX_SEARCH_ENTRIES).ok()?;
        for name in names {
            seen += 1;
            if seen > MAX_SEARCH_ENTRIES {
                return None;
            }
            let name = std::ffi::OsStr::from_bytes(name.to_bytes());
            // Links and special files are skipped: the reader refuses them.
            match dir.entry(Path::new(name)) {
                Ok(Entry::Folder(f)) if depth + 1 < SESSIONS_DEPTH => {
                    stack.push((f, path.join(name), depth + 1));
                }
                Ok(Entry::File(_)) => {
                    let text = name.to_string_lossy();
                    if text.starts_with("rollout-") && text.ends_with(&suffix) {
                        return Some(path.join(name));
                    }
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollout_name_gives_its_date() {
        assert_eq!(
            rollout_date("rollout-2026-11-30T18-02-11-0199a2b3-0000-7000-8000-000000000000.jsonl"),
            Some(["2026".into(), "11".into(), "30".into()])
        );
        assert_eq!(rollout_date("session.jsonl"), None);
    }

    #[test]
    fn now_has_plausible_parts() {
        let t = time_parts();
        assert_eq!(t[0].len(), 4);
        assert!(t[1].as_str() >= "01" && t[1].as_str() <= "12");
    }
}
