//! The output race: a stage declares a nested file output and leaves a `setsid` watcher behind
//! that swaps the output's folder for a symbolic link to a credential outside the checkout the
//! moment reviewflow first opens that folder (inotify, no sleeps). reviewflow, unconfined, must
//! never keep what the link leads to: the output is refused, and no later stage prints it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::files_under;

/// What the runner's credential holds: nothing of the run may ever show it.
const CREDENTIAL: &str = "ghp_outputrace0credential0canary0d41c8e2";

const PIPELINE: &str = r#"
pipeline "race"
stage "attacker" uses="run" {
    command "python3" "scripts/attack.py"
    output "cfg" file="out/config.json" type="file"
    output "pad" file="pad.json" type="json"
}
stage "printer" uses="run" {
    command "cat" "{attacker.cfg}"
}
"#;

/// The attacker: writes `out/config.json` (a decoy) and a large JSON value (reading and parsing
/// it widens the window between reviewflow's first look at `out` and its copy), then forks a
/// `setsid` watcher on `out` and exits once the watch is in place. On the first `IN_OPEN` of the
/// folder itself the watcher renames it away and puts a link to the credential's folder there.
const ATTACK: &str = r#"
import ctypes, os, struct, sys
TARGET = "@TARGET@"
IN_OPEN = 0x20
os.chdir(os.environ["REVIEWFLOW_WORK_DIR"])
os.mkdir("out")
with open("out/config.json", "w") as f:
    f.write('{"decoy": true}\n')
with open("pad.json", "w") as f:
    f.write("[" + ",".join(["12345"] * 400000) + "]")
ready_r, ready_w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(0)
    if fd < 0 or libc.inotify_add_watch(fd, b"out", IN_OPEN) < 0:
        os.write(ready_w, b"E")
        os._exit(1)
    os.write(ready_w, b"R")
    while True:
        buf = os.read(fd, 65536)
        at, hit = 0, False
        while at < len(buf):
            _, mask, _, size = struct.unpack_from("iIII", buf, at)
            name = buf[at + 16 : at + 16 + size].rstrip(b"\0")
            at += 16 + size
            # The folder itself was opened (an event on a file in it has a name).
            hit = hit or (mask & IN_OPEN and not name)
        if hit:
            break
    os.rename("out", "out.real")
    os.symlink(TARGET, "out")
    os._exit(0)
os.close(ready_w)
said = os.read(ready_r, 1)
print("watcher", "ready" if said == b"R" else "failed")
sys.exit(0 if said == b"R" else 1)
"#;

struct Case {
    dir: tempfile::TempDir,
    /// The runner's HOME, outside the checkout: `.docker/config.json` holds the credential.
    home: tempfile::TempDir,
}

impl Case {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = tempfile::tempdir().expect("home");
        let docker = home.path().join(".docker");
        std::fs::create_dir(&docker).expect("mkdir");
        let credential = docker.join("config.json");
        std::fs::write(
            &credential,
            format!("{{\"auths\": {{\"ghcr.io\": {{\"auth\": \"{CREDENTIAL}\"}}}}}}\n"),
        )
        .expect("credential");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&credential, std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
        let scripts = dir.path().join("checkout/scripts");
        std::fs::create_dir_all(&scripts).expect("mkdir");
        let attack = ATTACK.replace("@TARGET@", &docker.to_string_lossy());
        std::fs::write(scripts.join("attack.py"), attack).expect("attack");
        std::fs::write(dir.path().join("review.kdl"), PIPELINE).expect("pipeline");
        Self { dir, home }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn command(&self) -> Command {
        let mut c = crate::support::command();
        c.arg("run")
            .arg(self.path("review.kdl"))
            .arg("--checkout")
            .arg(self.path("checkout"))
            .args(["--grace", "300ms"])
            .current_dir(self.path("checkout"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.home.path())
            .stdin(Stdio::null());
        c
    }
}

fn holds(path: &Path, text: &str) -> bool {
    std::fs::read(path)
        .unwrap_or_default()
        .windows(text.len())
        .any(|w| w == text.as_bytes())
}

#[test]
fn a_folder_swapped_for_a_link_after_the_check_is_never_followed() {
    let case = Case::new();
    let out = case.command().output().expect("the binary runs");
    let log = format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(log.contains("watcher ready"), "the attacker ran: {log}");
    let leaked: Vec<PathBuf> = files_under(&case.path("checkout/.reviewflow"))
        .into_iter()
        .filter(|p| holds(p, CREDENTIAL))
        .collect();
    assert!(
        leaked.is_empty(),
        "the credential was kept in {leaked:?}\n{log}"
    );
    assert!(
        !log.contains(CREDENTIAL),
        "a stage printed the credential\n{log}"
    );
    // Where each child has a cgroup, the watcher dies with the attacker's process (before
    // anything of the stage is read), so the swap never happens and the real output is kept.
    // Without that layer the swap happens (the watcher saw reviewflow open the folder) and the
    // reader refuses the output, naming why; the stage that would print it never runs.
    let cgroup_held = log
        .lines()
        .find(|l| l.starts_with("isolation held:"))
        .is_some_and(|l| l.split([' ', ',']).any(|w| w == "cgroup"));
    if cgroup_held {
        assert_eq!(out.status.code(), Some(0), "{log}");
        assert!(log.contains("decoy"), "the real output was kept: {log}");
    } else {
        assert_eq!(out.status.code(), Some(1), "{log}");
        assert!(
            log.contains("output `cfg`") && log.contains("symbolic link"),
            "the refusal says why: {log}"
        );
        assert!(!log.contains("decoy"), "{log}");
    }
    // The credential is untouched.
    assert!(holds(
        &case.home.path().join(".docker/config.json"),
        CREDENTIAL
    ));
    // What the run said, for the test's output (`--nocapture`).
    println!("{log}");
}
