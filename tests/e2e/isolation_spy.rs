//! The spy test: a canary secret scoped to one stage, and stages outside its scope that look
//! everywhere an attacker would — before it, while it runs, and after it. Not one of them may
//! find the canary, raw, in base64 or in hex. What each spy could open is printed, so a pass
//! says what was tried.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::files_under;

const CANARY: &str = "canary-7f3e9a1c5b2d8e4f6a0c9b3d7e1f5a2c";
/// Marks every process of the run, so the test can look for leftovers.
const MARKER: &str = "reviewflow-spy-marker-5b1d";

const PIPELINE: &str = r#"
pipeline "spy"
allow "untrusted-input" reason="the test writes every program in scripts/ itself, before the run"
input "reversed" env="REVERSED"
secret "canary" env="CANARY" {
    visible-to "holder"
}
stage "before" uses="run" {
    command "sh" "scripts/spy.sh" "before"
    env "REVERSED" "{reversed}"
}
stage "holder" uses="run" {
    command "sh" "scripts/holder.sh"
    secret-env "CANARY" "canary"
    output "kept" file="kept.txt"
    needs "before"
}
stage "during" uses="run" {
    command "sh" "scripts/spy.sh" "during"
    env "REVERSED" "{reversed}"
    needs "before"
}
stage "after" uses="run" {
    command "sh" "scripts/spy.sh" "after"
    env "REVERSED" "{reversed}"
    needs "holder" "during"
}
"#;

/// The stage in scope: it writes the canary (in every form) into its work folder and a kept
/// output, leaves a `setsid` grandchild holding it, and stays alive while `during` looks.
const HOLDER: &str = r#"#!/bin/sh
dir="${REVIEWFLOW_WORK_DIR:-.}"
echo "HOLDER_DIR=$dir"
printf '%s\n' "$CANARY" > "$dir/raw.txt"
printf '%s' "$CANARY" | base64 > "$dir/b64.txt"
printf '%s' "$CANARY" | od -An -tx1 | tr -d ' \n' > "$dir/hex.txt"
cp "$dir/hex.txt" "$dir/kept.txt"
setsid sh -c "sleep 30; echo MARKER" </dev/null >/dev/null 2>&1 &
sleep 2
echo holder done
"#;

/// A spy: it derives the canary from its reversed form (so the spy itself holds no copy in its
/// environment), then looks everywhere and prints `HIT <where> <form>` for each find.
const SPY: &str = r#"#!/bin/sh
who="$1"
[ "$who" = during ] && sleep 1
canary=$(printf '%s' "$REVERSED" | rev)
b64=$(printf '%s' "$canary" | base64)
hex=$(printf '%s' "$canary" | od -An -tx1 | tr -d ' \n')
check() { # check <where> <file>
    if [ -r "$2" ] && cat "$2" >/dev/null 2>&1; then
        echo "READ $1"
        for form in raw b64 hex; do
            case $form in raw) v=$canary;; b64) v=$b64;; hex) v=$hex;; esac
            if tr '\0' '\n' < "$2" 2>/dev/null | grep -qF -- "$v"; then echo "HIT $1 $form"; fi
        done
    else
        echo "DENIED $1"
    fi
}
env > "${TMPDIR:-/tmp}/spy-env.$$" 2>/dev/null && check env "${TMPDIR:-/tmp}/spy-env.$$"
check parent-environ "/proc/$PPID/environ"
check parent-cmdline "/proc/$PPID/cmdline"
if (exec 3</proc/$PPID/mem) 2>/dev/null; then echo "HIT parent-mem open"; else echo "DENIED parent-mem"; fi
for f in /proc/[0-9]*/environ; do
    [ "$f" = "/proc/$$/environ" ] && continue
    check "proc-environ" "$f"
done
# Where the holder's folder is: beside this stage's own (the test checks that it is), at
# `<run's work folder>/holder-*`.
echo "SPY_DIR=$TMPDIR"
seen=0
for f in "$TMPDIR"/../holder-*/*; do
    [ -e "$f" ] && { seen=1; check holder-work "$f"; }
done
[ "$seen" = 1 ] || echo "UNREACHABLE holder-work"
for f in $(find .reviewflow "$RUNS" -type f 2>/dev/null); do check run-dir "$f"; done
[ -d .reviewflow ] || echo "DENIED dot-reviewflow"
if command -v sudo >/dev/null 2>&1; then
    if sudo -n true 2>/dev/null; then echo "SUDO ok"; else echo "DENIED sudo"; fi
fi
grep -E '^(NoNewPrivs|CapEff):' "/proc/$$/status" 2>/dev/null | sed 's/^/STATUS /'
echo "spy $who done"
"#;

struct Case {
    dir: tempfile::TempDir,
}

impl Case {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let scripts = dir.path().join("checkout/scripts");
        std::fs::create_dir_all(&scripts).expect("mkdir");
        let holder = HOLDER.replace("MARKER", MARKER);
        std::fs::write(scripts.join("holder.sh"), holder).expect("holder");
        std::fs::write(scripts.join("spy.sh"), SPY).expect("spy");
        std::fs::write(
            dir.path().join("review.kdl"),
            crate::support::with_allow_ids(PIPELINE),
        )
        .expect("pipeline");
        Self { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn command(&self) -> Command {
        let reversed: String = CANARY.chars().rev().collect();
        let mut c = crate::support::command();
        c.arg("run")
            .arg(self.path("review.kdl"))
            .arg("--checkout")
            .arg(self.path("checkout"))
            .args(["--jobs", "4", "--grace", "300ms"])
            .current_dir(self.path("checkout"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("REVERSED", reversed)
            .env("CANARY", CANARY)
            .stdin(Stdio::null());
        c
    }
}

/// The raw, base64 and hex forms of the canary.
fn forms() -> Vec<String> {
    use base64::Engine as _;
    let hex: String = CANARY.bytes().map(|b| format!("{b:02x}")).collect();
    vec![
        CANARY.to_string(),
        base64::engine::general_purpose::STANDARD.encode(CANARY),
        hex,
    ]
}

/// Whether the run's manifest records the Landlock filesystem layer as held.
fn landlock_held(runs: &Path) -> bool {
    let manifest = files_under(runs)
        .into_iter()
        .find(|p| p.ends_with("manifest.json"))
        .expect("the run's manifest");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(manifest).expect("read")).expect("json");
    json["isolation"]["layers"]
        .as_array()
        .expect("isolation layers")
        .iter()
        .any(|l| l["name"] == "landlock-filesystem" && l["held"] == true)
}

/// Processes whose command line carries `marker`.
fn alive_with(marker: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(marker) {
                out.push(format!("{}: {text}", e.file_name().to_string_lossy()));
            }
        }
    }
    out
}

#[test]
fn no_stage_outside_the_scope_finds_the_canary() {
    let case = Case::new();
    let out = case.command().output().expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let log = format!("{stdout}{stderr}");
    assert_eq!(out.status.code(), Some(0), "{log}");
    // On a kernel without Landlock the spies may read what the sandbox would hide: then the test
    // asserts the honest degradation (a warning and the manifest's record) instead, and says so.
    if !landlock_held(&case.path("checkout/.reviewflow/runs")) {
        println!("Landlock is missing on this kernel: checking that the run says so instead");
        assert!(
            log.contains("landlock"),
            "the missing layer is named: {log}"
        );
        return;
    }
    for who in ["before", "during", "after"] {
        assert!(log.contains(&format!("spy {who} done")), "{who} ran: {log}");
    }
    let hits: Vec<&str> = log.lines().filter(|l| l.contains("HIT ")).collect();
    // The spy that runs beside the holder looked where the holder's folder is: the folder the
    // holder printed is beside the spy's own, which the spy's pattern covers.
    let printed = |key: &str, who: &str| {
        log.lines()
            .find_map(|l| l.strip_prefix(&format!("{who} │ {key}=")))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("{who} printed its {key}: {log}"))
    };
    let holder_dir = printed("HOLDER_DIR", "holder");
    let spy_dir = printed("SPY_DIR", "during");
    assert_eq!(holder_dir.parent(), spy_dir.parent(), "{log}");
    assert!(
        holder_dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("holder-")),
        "{log}"
    );
    // Unreachable where the run has a mount namespace per child; unreadable with Landlock alone.
    assert!(
        log.contains("during │ UNREACHABLE holder-work")
            || log.contains("during │ DENIED holder-work"),
        "{log}"
    );
    assert!(!log.contains("during │ READ holder-work"), "{log}");
    assert!(
        hits.is_empty(),
        "the canary was found outside its scope: {hits:#?}\n{log}"
    );
    assert!(
        !log.contains("SUDO ok"),
        "a stage raised its privileges: {log}"
    );
    // Every spy ran with no new privileges and, as root, no capability.
    assert_eq!(
        log.lines()
            .filter(|l| l.contains("STATUS NoNewPrivs"))
            .count(),
        3,
        "each spy read its own status: {log}"
    );
    for line in log.lines().filter(|l| l.contains("STATUS NoNewPrivs")) {
        assert!(line.trim_end().ends_with('1'), "{line}");
    }
    for line in log.lines().filter(|l| l.contains("STATUS CapEff")) {
        assert!(line.trim_end().ends_with("0000000000000000"), "{line}");
    }
    // The spies' kept files and the run's records hold no form of it either (the holder's own
    // kept output is the one place the canary may be, redacted or not).
    for file in files_under(&case.path("checkout/.reviewflow")) {
        if file.to_string_lossy().contains("holder") {
            continue;
        }
        let bytes = std::fs::read(&file).unwrap_or_default();
        for form in forms() {
            assert!(
                !bytes.windows(form.len()).any(|w| w == form.as_bytes()),
                "{} holds the canary",
                file.display()
            );
        }
    }
    // What was tried, for the test's output (`--nocapture`).
    let mut tried: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("READ ") || l.contains("DENIED "))
        .collect();
    tried.sort_unstable();
    tried.dedup();
    println!("{}", tried.join("\n"));
    // The grandchild the holder left behind is gone with the run.
    let left = alive_with(MARKER);
    assert!(left.is_empty(), "left behind: {left:?}");
}
