//! Safe git access against throw-away repositories built with git in each test.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use reviewflow_stdlib::git::{
    self, Basis, EMPTY_TREE_SHA1, EMPTY_TREE_SHA256, GitError, Sha, change_id, change_range,
};

/// A repository in a temp folder. Its setup commands (and only those) get an identity and an
/// isolated configuration.
struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    fn new() -> Self {
        Self::with_init(&["init", "-q", "-b", "main"])
    }

    fn with_init(init: &[&str]) -> Self {
        let repo = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        repo.git(init);
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn git(&self, args: &[&str]) -> String {
        support::git::git(self.path(), args)
    }

    /// Writes `file` and commits everything; returns the new commit's SHA.
    fn commit(&self, file: &str, content: &str) -> String {
        let path = self.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", &format!("change {file}")]);
        self.rev("HEAD")
    }

    fn rev(&self, rev: &str) -> String {
        self.git(&["rev-parse", rev])
    }
}

fn sha(text: &str) -> Sha {
    Sha::parse(text).unwrap()
}

/// main: c1 ← c2 ← c3; feature (checked out) forks at c2: f1 ← f2.
fn topic_repo() -> (Repo, [String; 5]) {
    let repo = Repo::new();
    let c1 = repo.commit("README.md", "one\n");
    let c2 = repo.commit("src/lib.rs", "fn a() {}\n");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    let f1 = repo.commit("src/lib.rs", "fn a() {}\nfn b() {}\n");
    let f2 = repo.commit("docs/guide.md", "guide\n");
    repo.git(&["checkout", "-q", "main"]);
    let c3 = repo.commit("CHANGELOG.md", "c3\n");
    repo.git(&["checkout", "-q", "feature"]);
    (repo, [c1, c2, c3, f1, f2])
}

#[test]
fn resolve_gives_full_commit_shas() {
    let (repo, [c1, c2, ..]) = topic_repo();
    assert_eq!(git::resolve(repo.path(), "main~1").unwrap().as_str(), c2);
    assert_eq!(git::resolve(repo.path(), &c1[..7]).unwrap().as_str(), c1);
    repo.git(&["tag", "-a", "-m", "v1", "v1", &c1]);
    // An annotated tag is peeled to its commit.
    assert_eq!(git::resolve(repo.path(), "v1").unwrap().as_str(), c1);
    assert!(matches!(
        git::resolve(repo.path(), "no-such-branch"),
        Err(GitError::UnknownRevision { .. })
    ));
    assert!(matches!(
        git::resolve(repo.path(), "main^{tree}"),
        Err(GitError::UnknownRevision { .. })
    ));
    assert!(matches!(
        git::resolve(repo.path(), ""),
        Err(GitError::BadRevision { .. })
    ));
    assert!(matches!(
        git::resolve(repo.path(), "a\nb"),
        Err(GitError::BadRevision { .. })
    ));
    assert_eq!(git::try_resolve(repo.path(), "nope").unwrap(), None);
}

#[test]
fn a_ref_that_looks_like_an_option_is_a_ref() {
    let (repo, [c1, ..]) = topic_repo();
    repo.git(&["update-ref", "refs/heads/--output=out.txt", &c1]);
    assert_eq!(
        git::resolve(repo.path(), "--output=out.txt")
            .unwrap()
            .as_str(),
        c1
    );
    assert!(!repo.path().join("out.txt").exists());
    for option in ["--help", "-h", "--all", "--output=other.txt"] {
        let err = git::resolve(repo.path(), option).unwrap_err();
        assert!(
            matches!(err, GitError::UnknownRevision { .. }),
            "{option}: {err}"
        );
    }
    assert!(!repo.path().join("other.txt").exists());
    // As a head override it is resolved the same way and named as a branch.
    let range = change_range(repo.path(), Some("main"), Some("--output=out.txt")).unwrap();
    assert_eq!(range.head_sha.as_str(), c1);
    assert_eq!(range.head_branch.as_deref(), Some("--output=out.txt"));
}

#[test]
fn range_on_a_topic_branch_starts_at_the_merge_base() {
    let (repo, [_, c2, _, _, f2]) = topic_repo();
    let range = change_range(repo.path(), None, None).unwrap();
    assert_eq!(range.basis, Basis::MergeBase);
    assert_eq!(range.base_sha.as_str(), c2);
    assert_eq!(range.head_sha.as_str(), f2);
    assert_eq!(range.base_ref, "main");
    assert_eq!(range.head_ref, "HEAD");
    assert_eq!(range.head_branch.as_deref(), Some("feature"));
    assert!(!range.on_default_branch);
    assert_eq!(change_id(&range), "branch-feature");
}

#[test]
fn change_id_survives_new_commits_and_rebases() {
    let (repo, _) = topic_repo();
    let first = change_id(&change_range(repo.path(), None, None).unwrap());
    repo.commit("src/more.rs", "more\n");
    let second = change_id(&change_range(repo.path(), None, None).unwrap());
    repo.git(&["rebase", "-q", "main"]);
    let third = change_id(&change_range(repo.path(), None, None).unwrap());
    assert_eq!(first, second);
    assert_eq!(first, third);
}

#[test]
fn range_on_the_default_branch_is_the_last_commit() {
    let repo = Repo::new();
    let c1 = repo.commit("a.txt", "a\n");
    let c2 = repo.commit("b.txt", "b\n");
    let range = change_range(repo.path(), None, None).unwrap();
    assert_eq!(range.basis, Basis::LastCommit);
    assert_eq!(
        (range.base_sha.as_str(), range.head_sha.as_str()),
        (c1.as_str(), c2.as_str())
    );
    assert_eq!(range.base_ref, "HEAD~1");
    assert!(range.on_default_branch);
    let id = change_id(&range);
    assert_eq!(id, "branch-main");

    // Amending the reviewed commit keeps the id.
    std::fs::write(repo.path().join("b.txt"), "b2\n").unwrap();
    repo.git(&["commit", "-q", "-a", "--amend", "--no-edit"]);
    assert_eq!(
        change_id(&change_range(repo.path(), None, None).unwrap()),
        id
    );
}

#[test]
fn a_merged_branch_reviews_its_last_commit() {
    let repo = Repo::new();
    let c1 = repo.commit("a.txt", "a\n");
    repo.git(&["checkout", "-q", "-b", "done"]);
    let d1 = repo.commit("b.txt", "b\n");
    repo.git(&["checkout", "-q", "main"]);
    repo.git(&["merge", "-q", "--ff-only", "done"]);
    repo.git(&["checkout", "-q", "done"]);
    // The merge base with main is the head itself: nothing of its own, so the last commit.
    let range = change_range(repo.path(), None, None).unwrap();
    assert_eq!(range.basis, Basis::LastCommit);
    assert_eq!(
        (range.base_sha.as_str(), range.head_sha.as_str()),
        (c1.as_str(), d1.as_str())
    );
}

#[test]
fn a_root_commit_is_diffed_against_the_empty_tree() {
    let repo = Repo::new();
    let root = repo.commit("hello.txt", "hello\n");
    let range = change_range(repo.path(), None, None).unwrap();
    assert_eq!(range.basis, Basis::Root);
    assert_eq!(range.base_sha.as_str(), EMPTY_TREE_SHA1);
    assert_eq!(range.head_sha.as_str(), root);
    assert_eq!(change_id(&range), "branch-main");
    let diff =
        String::from_utf8(git::diff(repo.path(), &range.base_sha, &range.head_sha, None).unwrap())
            .unwrap();
    assert!(diff.contains("new file mode 100644"), "{diff}");
    assert!(diff.contains("+hello"), "{diff}");
}

#[test]
fn sha256_repositories_use_their_own_empty_tree() {
    let repo = Repo::with_init(&["init", "-q", "-b", "main", "--object-format=sha256"]);
    repo.commit("hello.txt", "hello\n");
    let range = change_range(repo.path(), None, None).unwrap();
    assert_eq!(range.head_sha.as_str().len(), 64);
    assert_eq!(range.base_sha.as_str(), EMPTY_TREE_SHA256);
    let diff = git::diff(repo.path(), &range.base_sha, &range.head_sha, None).unwrap();
    assert!(String::from_utf8(diff).unwrap().contains("+hello"));
}

#[test]
fn overrides_replace_base_and_head() {
    let (repo, [c1, c2, c3, f1, _]) = topic_repo();
    let range = change_range(repo.path(), Some("main~2"), Some("main")).unwrap();
    assert_eq!(range.basis, Basis::Explicit);
    assert_eq!(
        (range.base_sha.as_str(), range.head_sha.as_str()),
        (c1.as_str(), c3.as_str())
    );
    assert_eq!(
        (range.base_ref.as_str(), range.head_ref.as_str()),
        ("main~2", "main")
    );
    assert!(range.on_default_branch);
    assert_eq!(
        change_id(&range),
        "branch-main",
        "a head naming a branch keeps its id"
    );

    // Only the head given: the base still comes from the default branch.
    let range = change_range(repo.path(), None, Some(&f1)).unwrap();
    assert_eq!(range.basis, Basis::MergeBase);
    assert_eq!(range.base_sha.as_str(), c2);
    assert_eq!(range.head_branch, None);

    // A head naming a topic branch keeps the branch's id.
    let range = change_range(repo.path(), Some(&c1), Some("refs/heads/feature")).unwrap();
    assert_eq!(change_id(&range), "branch-feature");

    assert!(matches!(
        change_range(repo.path(), Some("nope"), None),
        Err(GitError::UnknownRevision { .. })
    ));
}

#[test]
fn a_detached_head_off_the_default_branch() {
    let (repo, [_, c2, ..]) = topic_repo();
    repo.git(&["checkout", "-q", "--detach", "feature"]);
    assert_eq!(git::head_branch(repo.path()).unwrap(), None);
    let range = change_range(repo.path(), None, None).unwrap();
    assert_eq!(range.basis, Basis::MergeBase);
    assert_eq!(range.base_sha.as_str(), c2);
    assert_eq!(change_id(&range), format!("range-{}", &c2[..12]));
}

#[test]
fn default_branch_prefers_origin_head_then_main_or_master_then_current() {
    let (repo, [c1, ..]) = topic_repo();
    assert_eq!(
        git::default_branch(repo.path()).unwrap().unwrap().name,
        "main"
    );
    repo.git(&["update-ref", "refs/remotes/origin/trunk", &c1]);
    repo.git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/trunk",
    ]);
    let default = git::default_branch(repo.path()).unwrap().unwrap();
    assert_eq!(
        (default.name.as_str(), default.reference.as_str()),
        ("trunk", "refs/remotes/origin/trunk")
    );

    let master = Repo::with_init(&["init", "-q", "-b", "master"]);
    master.commit("a", "a");
    master.git(&["checkout", "-q", "-b", "topic"]);
    assert_eq!(
        git::default_branch(master.path()).unwrap().unwrap().name,
        "master"
    );

    let other = Repo::with_init(&["init", "-q", "-b", "develop"]);
    other.commit("a", "a");
    assert_eq!(
        git::default_branch(other.path()).unwrap().unwrap().name,
        "develop"
    );
    other.git(&["checkout", "-q", "--detach"]);
    assert_eq!(git::default_branch(other.path()).unwrap(), None);
}

#[test]
fn diff_is_cut_to_a_path() {
    let (repo, [_, c2, _, _, f2]) = topic_repo();
    let (base, head) = (sha(&c2), sha(&f2));
    let all = String::from_utf8(git::diff(repo.path(), &base, &head, None).unwrap()).unwrap();
    assert!(
        all.contains("b/src/lib.rs") && all.contains("b/docs/guide.md"),
        "{all}"
    );
    let src =
        String::from_utf8(git::diff(repo.path(), &base, &head, Some("src/")).unwrap()).unwrap();
    assert!(
        src.contains("diff --git a/src/lib.rs b/src/lib.rs"),
        "{src}"
    );
    assert!(!src.contains("guide.md"), "{src}");
    let docs =
        String::from_utf8(git::diff(repo.path(), &base, &head, Some("./docs")).unwrap()).unwrap();
    assert!(
        docs.contains("docs/guide.md") && !docs.contains("lib.rs"),
        "{docs}"
    );
    // The path is literal: no glob, no pathspec magic.
    assert!(
        git::diff(repo.path(), &base, &head, Some("*.rs"))
            .unwrap()
            .is_empty()
    );
    assert!(
        git::diff(repo.path(), &base, &head, Some(":(glob)**"))
            .unwrap()
            .is_empty()
    );
    // Relative to the top even when `repo` is a subfolder.
    let from_sub = git::diff(&repo.path().join("src"), &base, &head, Some("src")).unwrap();
    assert_eq!(String::from_utf8(from_sub).unwrap(), src);
    for bad in ["../outside", "/etc", "src/../../x"] {
        assert!(
            matches!(
                git::diff(repo.path(), &base, &head, Some(bad)),
                Err(GitError::BadPath { .. })
            ),
            "{bad}"
        );
    }
}

#[test]
fn diff_ignores_repository_settings_and_drivers() {
    let (repo, [_, c2, _, _, f2]) = topic_repo();
    // Settings a checkout could carry that would change the bytes or run programs.
    repo.git(&["config", "diff.noprefix", "true"]);
    repo.git(&["config", "diff.mnemonicPrefix", "true"]);
    repo.git(&["config", "core.abbrev", "7"]);
    repo.git(&["config", "diff.external", "sh -c 'touch ext-ran'"]);
    repo.git(&[
        "config",
        "diff.evil.textconv",
        "sh -c 'touch textconv-ran; cat'",
    ]);
    repo.git(&["config", "diff.evil.command", "sh -c 'touch command-ran'"]);
    std::fs::write(repo.path().join(".git/info/attributes"), "* diff=evil\n").unwrap();
    let out =
        String::from_utf8(git::diff(repo.path(), &sha(&c2), &sha(&f2), None).unwrap()).unwrap();
    assert!(
        out.contains("diff --git a/src/lib.rs b/src/lib.rs"),
        "{out}"
    );
    assert!(out.contains("+fn b() {}"), "{out}");
    // Full blob ids whatever core.abbrev says.
    for index in out.lines().filter_map(|l| l.strip_prefix("index ")) {
        let ids = index.split(' ').next().unwrap();
        assert!(ids.split("..").all(|id| id.len() == 40), "{index}");
    }
    for marker in ["ext-ran", "textconv-ran", "command-ran"] {
        assert!(!repo.path().join(marker).exists(), "{marker}");
    }
}

#[test]
fn diff_of_a_rename_is_detected() {
    let repo = Repo::new();
    let base = repo.commit("old/name.txt", "same content\nacross lines\n");
    std::fs::create_dir(repo.path().join("new")).unwrap();
    repo.git(&["mv", "old/name.txt", "new/name.txt"]);
    repo.git(&["commit", "-q", "-m", "move"]);
    let out = git::diff(repo.path(), &sha(&base), &sha(&repo.rev("HEAD")), None).unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains("rename from old/name.txt") && out.contains("rename to new/name.txt"),
        "{out}"
    );
}

#[test]
fn is_ancestor_is_false_after_a_rebase() {
    let (repo, [c1, _, c3, f1, _]) = topic_repo();
    let head_before = git::resolve(repo.path(), "HEAD").unwrap();
    assert!(git::is_ancestor(repo.path(), &sha(&f1), &head_before).unwrap());
    repo.git(&["rebase", "-q", "main"]);
    let head_after = git::resolve(repo.path(), "HEAD").unwrap();
    assert!(!git::is_ancestor(repo.path(), &sha(&f1), &head_after).unwrap());
    assert!(!git::is_ancestor(repo.path(), &head_before, &head_after).unwrap());
    assert!(git::is_ancestor(repo.path(), &sha(&c1), &head_after).unwrap());
    assert!(git::is_ancestor(repo.path(), &sha(&c3), &head_after).unwrap());
}

#[test]
fn merge_base_of_unrelated_histories_is_none() {
    let (repo, [c1, ..]) = topic_repo();
    repo.git(&["checkout", "-q", "--orphan", "other"]);
    let orphan = repo.commit("z.txt", "z\n");
    assert_eq!(
        git::merge_base(repo.path(), &sha(&c1), &sha(&orphan)).unwrap(),
        None
    );
    // Falls back to the last commit, here a root.
    let range = change_range(repo.path(), None, None).unwrap();
    assert_eq!(range.basis, Basis::Root);
    assert_eq!(change_id(&range), "branch-other");
}

#[test]
fn errors_carry_the_subcommand_and_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let err = git::resolve(dir.path(), "HEAD").unwrap_err();
    match &err {
        GitError::Failed {
            subcommand, stderr, ..
        } => {
            assert_eq!(subcommand, "rev-parse");
            assert!(stderr.contains("not a git repository"), "{stderr}");
        }
        other => panic!("{other}"),
    }
    assert!(
        err.to_string()
            .starts_with("`git rev-parse` failed (exit 128): fatal:"),
        "{err}"
    );
}

#[test]
fn every_command_is_hardened() {
    let cmd = git::git_command(Path::new("/repo"), "diff-tree");
    let args: Vec<_> = cmd.get_args().map(|a| a.to_str().unwrap()).collect();
    let sub = args.iter().position(|a| *a == "diff-tree").unwrap();
    for global in [
        "--no-pager",
        "--no-optional-locks",
        "--no-replace-objects",
        "core.quotepath=off",
    ] {
        assert!(args[..sub].contains(&global), "{global}");
    }
    for diff_flag in ["--no-ext-diff", "--no-textconv", "--no-color"] {
        assert!(args[sub..].contains(&diff_flag), "{diff_flag}");
    }
    let envs: Vec<_> = cmd
        .get_envs()
        .map(|(k, v)| (k.to_str().unwrap(), v.and_then(|v| v.to_str())))
        .collect();
    for (key, value) in [
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_PAGER", "cat"),
        ("LC_ALL", "C"),
    ] {
        assert!(envs.contains(&(key, Some(value))), "{key}");
    }
    // Whatever GIT_* the parent has is removed, and none is set but the prompt and pager ones.
    assert!(envs.iter().all(|(k, v)| !k.starts_with("GIT_")
        || v.is_none()
        || ["GIT_TERMINAL_PROMPT", "GIT_PAGER"].contains(k)));
}

/// A shallow clone of `source` (over `file://`, where `--depth` is honoured), made with `args`
/// (`--depth N`, …).
fn shallow_clone(source: &Repo, args: &[&str]) -> Repo {
    let clone = Repo::with_init(&["--version"]);
    let url = format!("file://{}", source.path().display());
    let mut all = vec!["clone", "-q"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--", url.as_str(), "."]);
    clone.git(&all);
    clone
}

fn assert_shallow_refusal(err: &GitError, missing: &str) {
    let text = err.to_string();
    assert!(
        matches!(err, GitError::Shallow { .. }),
        "not a shallow refusal: {text}"
    );
    for part in [
        "the checkout is a shallow clone",
        missing,
        "`fetch-depth: 0`",
        "actions/checkout",
        "`git fetch --unshallow`",
    ] {
        assert!(text.contains(part), "{part:?} not in {text:?}");
    }
}

#[test]
fn a_shallow_clone_is_detected() {
    let repo = Repo::new();
    repo.commit("a.txt", "a\n");
    repo.commit("b.txt", "b\n");
    assert!(!git::is_shallow(repo.path()).unwrap());
    let clone = shallow_clone(&repo, &["--depth", "1"]);
    assert!(git::is_shallow(clone.path()).unwrap());
    // `--unshallow` makes it whole again.
    clone.git(&["fetch", "-q", "--unshallow"]);
    assert!(!git::is_shallow(clone.path()).unwrap());
}

#[test]
fn a_depth_one_clone_is_refused_rather_than_reviewed_as_the_whole_tree() {
    let repo = Repo::new();
    repo.commit("a.txt", "a\n");
    let c2 = repo.commit("b.txt", "b\n");
    let clone = shallow_clone(&repo, &["--depth", "1"]);
    assert_eq!(clone.rev("HEAD"), c2);
    let err = change_range(clone.path(), None, None).unwrap_err();
    assert_shallow_refusal(
        &err,
        &format!("the parent of the head commit {} is not in it", &c2[..12]),
    );
    // The same checkout with its history is the last commit, as before.
    clone.git(&["fetch", "-q", "--unshallow"]);
    let range = change_range(clone.path(), None, None).unwrap();
    assert_eq!(range.basis, Basis::LastCommit);
}

#[test]
fn a_shallow_clone_that_holds_the_base_proceeds() {
    let repo = Repo::new();
    let c1 = repo.commit("a.txt", "a\n");
    let c2 = repo.commit("b.txt", "b\n");
    let c3 = repo.commit("c.txt", "c\n");
    let clone = shallow_clone(&repo, &["--depth", "2"]);
    assert!(git::is_shallow(clone.path()).unwrap());
    // On the default branch: the head's parent is in the clone.
    let range = change_range(clone.path(), None, None).unwrap();
    assert_eq!(range.basis, Basis::LastCommit);
    assert_eq!(
        (range.base_sha.as_str(), range.head_sha.as_str()),
        (c2.as_str(), c3.as_str())
    );
    let diff =
        String::from_utf8(git::diff(clone.path(), &range.base_sha, &range.head_sha, None).unwrap())
            .unwrap();
    assert!(
        diff.contains("b/c.txt") && !diff.contains("a.txt"),
        "{diff}"
    );
    // A base given and present.
    let range = change_range(clone.path(), Some(&c2), None).unwrap();
    assert_eq!(range.basis, Basis::Explicit);
    // A base given and beyond the boundary: refused, naming it.
    let err = change_range(clone.path(), Some(&c1), None).unwrap_err();
    assert_shallow_refusal(&err, &format!("the base {c1:?} is not a commit of it"));
    // A name that is nowhere is refused the same way in a shallow clone …
    let err = change_range(clone.path(), Some("nope"), None).unwrap_err();
    assert_shallow_refusal(&err, "the base \"nope\" is not a commit of it");
    // … and is an unknown revision in a whole one.
    assert!(matches!(
        change_range(repo.path(), Some(&"0".repeat(40)), None),
        Err(GitError::UnknownRevision { .. })
    ));
}

#[test]
fn a_topic_branch_whose_fork_is_beyond_the_boundary_is_refused() {
    let (repo, [_, c2, _, _, f2]) = topic_repo();
    // Clones follow the source's HEAD for `origin/HEAD`: make it main.
    repo.git(&["checkout", "-q", "main"]);

    let clone = shallow_clone(&repo, &["--depth", "1", "--no-single-branch"]);
    clone.git(&["checkout", "-q", "feature"]);
    assert_eq!(clone.rev("HEAD"), f2);
    let err = change_range(clone.path(), None, None).unwrap_err();
    assert_shallow_refusal(&err, "the head has no common history with `main` in it");

    // Deep enough to reach the fork (f2 ← f1 ← c2): the merge base, as in a whole clone.
    let clone = shallow_clone(&repo, &["--depth", "3", "--no-single-branch"]);
    clone.git(&["checkout", "-q", "feature"]);
    assert!(git::is_shallow(clone.path()).unwrap());
    let range = change_range(clone.path(), None, None).unwrap();
    assert_eq!(range.basis, Basis::MergeBase);
    assert_eq!(range.base_sha.as_str(), c2);
    assert_eq!(change_id(&range), "branch-feature");
}

#[test]
fn a_real_root_commit_in_a_shallow_clone_is_still_diffed_against_the_empty_tree() {
    let repo = Repo::new();
    repo.commit("a.txt", "a\n");
    let c2 = repo.commit("b.txt", "b\n");
    repo.git(&["checkout", "-q", "--orphan", "pages"]);
    let root = repo.commit("index.html", "hi\n");
    // The clone's default branch is `pages` (the source's HEAD); main is cut to one commit.
    let clone = shallow_clone(&repo, &["--depth", "1", "--no-single-branch"]);
    assert!(git::is_shallow(clone.path()).unwrap());
    let range = change_range(clone.path(), None, None).unwrap();
    assert_eq!(range.basis, Basis::Root);
    assert_eq!(range.head_sha.as_str(), root);
    assert_eq!(range.base_sha.as_str(), EMPTY_TREE_SHA1);

    // Off the default branch, a shallow clone cannot tell unrelated histories from a fork beyond
    // its boundary: refused, where a whole clone reviews the last commit.
    clone.git(&["checkout", "-q", "main"]);
    let err = change_range(clone.path(), None, None).unwrap_err();
    assert_shallow_refusal(&err, "the head has no common history with `pages` in it");
    // A base given settles it.
    let range = change_range(clone.path(), Some(&root), None).unwrap();
    assert_eq!(range.basis, Basis::Explicit);
    assert_eq!(range.head_sha.as_str(), c2);
}
