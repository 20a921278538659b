//! Which conversation `std/restore` resumes, end to end on the local forge: the one the posted
//! review names by its blob id (not merely the newest of the posted head), and the same in a
//! clone of the repository under another folder name (`repo` is the `origin` remote, never a
//! credential in it).

use std::path::PathBuf;

use crate::support::{files_under, git_in as git, root};

const KEY: &str = "0123456789abcdef0123456789abcdef-identity-test";
const STORE: &str = ".reviewflow/store/review-branch-main";

struct Checkout {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

struct Out {
    code: i32,
    log: String,
}

impl Checkout {
    /// A repository named `name` (its folder) on `main` with two commits and the example
    /// pipeline.
    fn new(name: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.join("examples")).expect("mkdir");
        let c = Self { _dir: dir, path };
        git(&c.path, &["init", "-q", "-b", "main"]);
        std::fs::copy(
            root().join("examples/local.kdl"),
            c.path.join("examples/local.kdl"),
        )
        .expect("copy");
        c.commit("README.md", "hello\n", "first");
        c.commit("src/lib.rs", "pub fn f() {}\n", "second");
        c
    }

    /// A clone of `self` in a folder named `name`.
    fn clone_as(&self, name: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(name);
        git(
            dir.path(),
            &["clone", "-q", &self.path.to_string_lossy(), name],
        );
        Self { _dir: dir, path }
    }

    fn commit(&self, file: &str, text: &str, message: &str) {
        let path = self.path.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, text).expect("write");
        git(&self.path, &["add", "-A", "--", ".", ":!.reviewflow"]);
        git(&self.path, &["commit", "-q", "-m", message]);
    }

    fn set_origin(&self, url: &str) {
        if git(&self.path, &["remote"]).lines().any(|r| r == "origin") {
            git(&self.path, &["remote", "set-url", "origin", url]);
        } else {
            git(&self.path, &["remote", "add", "origin", url]);
        }
    }

    fn run(&self, extra: &[&str]) -> Out {
        let out = crate::support::command()
            .args(["run", "examples/local.kdl"])
            .args(extra)
            .current_dir(&self.path)
            .env("REVIEW_CONVERSATION_KEY", KEY)
            .output()
            .expect("the binary runs");
        Out {
            code: out.status.code().unwrap_or(-1),
            log: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    fn posted(&self) -> serde_json::Value {
        let text = std::fs::read(
            self.path
                .join(".reviewflow/forge/branch-main/local-review/posted.json"),
        )
        .expect("a posted review");
        serde_json::from_slice(&text).expect("json")
    }

    /// The store's metadata files, oldest first.
    fn entries(&self) -> Vec<serde_json::Value> {
        let mut out: Vec<serde_json::Value> = std::fs::read_dir(self.path.join(STORE))
            .expect("the store")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .map(|p| serde_json::from_slice(&std::fs::read(p).expect("read")).expect("json"))
            .collect();
        out.sort_by_key(|v| v["created_ns"].as_u64());
        out
    }
}

fn id_of(entry: &serde_json::Value) -> String {
    entry["id"].as_str().expect("an id").to_string()
}

/// Copies blob entry `entry` into the store again as its newest entry, metadata and all (what
/// anyone who can write the store folder can do).
fn plant_as_newest(c: &Checkout, entry: &serde_json::Value) -> String {
    let dir = c.path.join(STORE);
    let created = entry["created_ns"].as_u64().expect("created_ns") + 10_000_000_000;
    let id = format!("{created:020}-0000beef-00000000-0badcafe");
    std::fs::copy(
        dir.join(format!("{}.blob", id_of(entry))),
        dir.join(format!("{id}.blob")),
    )
    .expect("copy the blob");
    let mut meta = entry.clone();
    meta["id"] = id.clone().into();
    meta["created_ns"] = created.into();
    std::fs::write(
        dir.join(format!("{id}.json")),
        serde_json::to_vec_pretty(&meta).expect("json"),
    )
    .expect("write the metadata");
    id
}

/// Two reviews of the same head each keep a blob; the second is posted. The first's blob, planted
/// again as the newest entry, is genuine (it opens, its head is the posted head), yet it is not
/// the one the posted review names: it is skipped, and the posted one is restored.
#[test]
fn a_genuine_blob_planted_as_newest_is_skipped_for_the_posted_one() {
    let c = Checkout::new("app");
    let first = c.run(&[]);
    assert_eq!(first.code, 0, "{}", first.log);
    let second = c.run(&["--force"]);
    assert_eq!(second.code, 0, "{}", second.log);
    assert!(
        second.log.contains("restored conversation"),
        "{}",
        second.log
    );
    let entries = c.entries();
    assert_eq!(entries.len(), 2, "{entries:#?}");
    let (earlier, posted) = (&entries[0], &entries[1]);
    assert_eq!(earlier["producer"]["head"], posted["producer"]["head"]);

    // The posted review names the blob it kept by the SHA-256 of its bytes (which the store's
    // metadata records too).
    let digest = posted["sha256"].as_str().expect("a digest");
    assert_eq!(
        c.posted()["conversation_id"],
        format!("blob-{digest}").as_str()
    );

    let planted = plant_as_newest(&c, earlier);
    let third = c.run(&["--force"]);
    assert_eq!(third.code, 0, "{}", third.log);
    assert!(
        third.log.contains(&format!(
            "skipped {planted}: it is not the blob the posted review names"
        )),
        "{}",
        third.log
    );
    assert!(
        third.log.contains(&format!("from {}", id_of(posted))),
        "the posted blob is restored: {}",
        third.log
    );
}

/// `repo` is the `origin` remote's URL without its credential, scheme or `.git`: a second
/// clone, in a folder of another name, with the same store and posted review, resumes the
/// first's conversation; the credential is nowhere in what the runs print or record.
#[test]
fn a_clone_under_another_name_resumes_and_no_credential_is_recorded() {
    const TOKEN: &str = "s3cr3t-t0ken-in-the-url";
    let a = Checkout::new("widgets");
    a.set_origin(&format!(
        "https://reviewer:{TOKEN}@git.example.invalid/acme/widgets.git"
    ));
    let first = a.run(&[]);
    assert_eq!(first.code, 0, "{}", first.log);
    assert!(
        first.log.contains("sealed the conversation"),
        "{}",
        first.log
    );

    let b = a.clone_as("widgets-second-checkout");
    b.set_origin("ssh://git@git.example.invalid/acme/widgets");
    for part in ["store", "forge"] {
        let from = a.path.join(".reviewflow").join(part);
        let to = b.path.join(".reviewflow").join(part);
        for file in files_under(&from) {
            let dest = to.join(file.strip_prefix(&from).expect("under"));
            std::fs::create_dir_all(dest.parent().expect("a folder")).expect("mkdir");
            std::fs::copy(&file, &dest).expect("copy");
        }
    }
    b.commit("src/more.rs", "pub fn g() {}\n", "third");
    let second = b.run(&[]);
    assert_eq!(second.code, 0, "{}", second.log);
    assert!(
        second.log.contains("restored conversation"),
        "the second clone resumes: {}",
        second.log
    );

    for (c, out) in [(&a, &first), (&b, &second)] {
        assert!(!out.log.contains(TOKEN), "{}", out.log);
        for file in files_under(&c.path.join(".reviewflow")) {
            let bytes = std::fs::read(&file).expect("read");
            assert!(
                !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
                "the credential is in {}",
                file.display()
            );
        }
    }
}

/// Without `origin` and without `forge "local" repo=…`, `repo` is the folder's name, and the
/// run says that resuming is tied to it: once, in one short line that says what sets it, as a
/// run-level warning (in the events log, like the run's other warnings).
#[test]
fn without_a_remote_the_folder_name_is_used_with_a_warning() {
    const WARNING: &str = "warning: `repo` is the folder's name \"lonely\" (no `origin` remote): a clone in another folder will not resume its conversations; `forge \"local\" repo=\"…\"` sets it";
    let c = Checkout::new("lonely");
    let out = c.run(&[]);
    assert_eq!(out.code, 0, "{}", out.log);
    let said: Vec<&str> = out.log.lines().filter(|l| l.contains("`repo`")).collect();
    assert_eq!(said, [WARNING], "{}", out.log);
    assert!(WARNING.chars().count() < 170, "{}", WARNING.len());
    let runs = c.path.join(".reviewflow/runs");
    let run = std::fs::read_dir(&runs)
        .expect("runs")
        .next()
        .expect("a run")
        .expect("entry")
        .path();
    let events = std::fs::read_to_string(run.join("events.jsonl")).expect("events");
    let warnings: Vec<serde_json::Value> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| {
            e["event"] == "warning" && e["message"].as_str().is_some_and(|m| m.contains("`repo`"))
        })
        .collect();
    assert_eq!(warnings.len(), 1, "{events}");
    assert_eq!(
        warnings[0]["message"].as_str(),
        WARNING.strip_prefix("warning: "),
        "{events}"
    );
}

/// `forge "local" repo="…"` is the name, whatever the folder or the remote; a name outside the
/// rule is refused before any stage runs.
#[test]
fn a_configured_repo_is_the_name_and_is_checked() {
    let c = Checkout::new("somewhere");
    c.set_origin("https://git.example.invalid/acme/other.git");
    let pipeline = c.path.join("examples/local.kdl");
    let text = std::fs::read_to_string(&pipeline).expect("read");
    std::fs::write(
        &pipeline,
        text.replace(
            "forge \"local\"\n",
            "forge \"local\" repo=\"acme/widgets\"\n",
        ),
    )
    .expect("write");
    let out = c.run(&[]);
    assert_eq!(out.code, 0, "{}", out.log);
    assert!(
        !out.log.contains("`repo` is the checkout folder's name"),
        "{}",
        out.log
    );
    let runs = c.path.join(".reviewflow/runs");
    let run = std::fs::read_dir(&runs)
        .expect("runs")
        .next()
        .expect("a run")
        .expect("entry")
        .path();
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("manifest.json")).expect("manifest"))
            .expect("json");
    assert_eq!(manifest["inputs"]["repo"], "acme/widgets", "{manifest:#}");

    std::fs::write(
        &pipeline,
        text.replace(
            "forge \"local\"\n",
            "forge \"local\" repo=\"acme widgets\"\n",
        ),
    )
    .expect("write");
    let out = c.run(&[]);
    assert_eq!(out.code, 2, "{}", out.log);
    assert!(
        out.log.contains(
            "forge \"local\": repo=\"acme widgets\" holds a character outside [A-Za-z0-9._~/:+-]"
        ),
        "{}",
        out.log
    );
}
