//! Files a person names on the command line, read (a pipeline) and written (`--out`), by one
//! rule: below the working folder no component is followed, the file's own included; outside
//! it the folders are taken as named. A written file replaces only a regular file.
//! README.md, "The command line".

use std::os::unix::fs::{FileTypeExt as _, symlink};
use std::path::Path;

use crate::support::{Run, reviewflow_in, root};

const CLEAN: &str = "pipeline \"clean\"\nstage \"a\" uses=\"run\" {\n    command \"true\"\n}\n";

/// A working folder holding `examples/review.kdl`, and a folder outside it.
fn folders() -> (tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("examples")).expect("mkdir");
    std::fs::copy(
        root().join("examples/review.kdl"),
        dir.path().join("examples/review.kdl"),
    )
    .expect("copy");
    (dir, tempfile::tempdir().expect("tempdir"))
}

fn export_to(dir: &Path, out: &str) -> Run {
    reviewflow_in(
        dir,
        &["export", "github", "examples/review.kdl", "--out", out],
    )
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
}

/// A pipeline named as a link to a regular file is refused: the name says which file runs.
#[test]
fn a_pipeline_named_as_a_link_is_refused_even_to_a_regular_file() {
    let (dir, _outside) = folders();
    std::fs::write(dir.path().join("real.kdl"), CLEAN).expect("write");
    symlink("real.kdl", dir.path().join("review.kdl")).expect("symlink");
    for args in [
        &["check", "review.kdl"][..],
        &["graph", "review.kdl"],
        &["run", "review.kdl"],
    ] {
        let run = reviewflow_in(dir.path(), args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.transcript());
        assert!(
            run.stderr.contains(
                "review.kdl: cannot read the file: it is a symbolic link: reviewflow follows no \
                 link below the working folder (name the file it points to)"
            ),
            "{args:?}: {}",
            run.stderr
        );
    }
    // The file it points to is read.
    let run = reviewflow_in(dir.path(), &["check", "real.kdl"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
}

/// A linked folder on the way below the working folder is refused and named.
#[test]
fn a_linked_folder_below_the_working_folder_is_refused() {
    let (dir, outside) = folders();
    std::fs::write(outside.path().join("review.kdl"), CLEAN).expect("write");
    symlink(outside.path(), dir.path().join("sub")).expect("symlink");
    let run = reviewflow_in(dir.path(), &["check", "sub/review.kdl"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("sub/review.kdl: cannot read the file: sub is a symbolic link"),
        "{}",
        run.stderr
    );
    // The same file by an absolute path below the working folder: the same rule.
    let named = dir.path().join("sub/review.kdl");
    let run = reviewflow_in(dir.path(), &["check", named.to_str().expect("utf-8")]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(run.stderr.contains("is a symbolic link"), "{}", run.stderr);
}

/// Outside the working folder, the folders are taken as named (the person chose them); the file
/// itself still must not be a link.
#[test]
fn outside_the_working_folder_the_folders_are_taken_as_named() {
    let (dir, outside) = folders();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("review.kdl"), CLEAN).expect("write");
    symlink(outside.path(), elsewhere.path().join("linked")).expect("symlink");
    let through = elsewhere.path().join("linked/review.kdl");
    let run = reviewflow_in(dir.path(), &["check", through.to_str().expect("utf-8")]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    symlink("review.kdl", outside.path().join("link.kdl")).expect("symlink");
    let link = elsewhere.path().join("linked/link.kdl");
    let run = reviewflow_in(dir.path(), &["check", link.to_str().expect("utf-8")]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains("it is a symbolic link"),
        "{}",
        run.stderr
    );
}

/// `export --out` through a linked folder (`.github/workflows` → anywhere) is refused; nothing
/// is written where the link points.
#[test]
fn export_out_refuses_a_linked_folder_on_the_way() {
    let (dir, outside) = folders();
    std::fs::create_dir(dir.path().join(".github")).expect("mkdir");
    symlink(outside.path(), dir.path().join(".github/workflows")).expect("symlink");
    let run = export_to(dir.path(), ".github/workflows/review.yml");
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains(
            "error: cannot write .github/workflows/review.yml: .github/workflows is a symbolic link"
        ),
        "{}",
        run.stderr
    );
    let written: Vec<_> = std::fs::read_dir(outside.path()).expect("list").collect();
    assert!(written.is_empty(), "written through the link: {written:?}");
}

/// A FIFO or a device at the target of `--out` is refused, and left as it was: never written
/// into, never replaced by a regular file.
#[test]
fn export_out_refuses_a_target_that_is_not_a_regular_file() {
    let (dir, _outside) = folders();
    mkfifo(&dir.path().join("fifo.yml"));
    let mut targets = vec!["fifo.yml"];
    // A device only root can make (CAP_MKNOD): `/dev/full`'s numbers.
    match rustix::fs::mknodat(
        rustix::fs::CWD,
        dir.path().join("full.yml"),
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o600),
        rustix::fs::makedev(1, 7),
    ) {
        Ok(()) => targets.push("full.yml"),
        Err(e) => crate::support::not_tried(&format!("a device node (mknod: {e}; needs root)")),
    }
    std::fs::create_dir(dir.path().join("folder.yml")).expect("mkdir");
    targets.push("folder.yml");
    for target in targets {
        let before = std::fs::symlink_metadata(dir.path().join(target))
            .expect("stat")
            .file_type();
        let run = export_to(dir.path(), target);
        assert_eq!(run.code, 2, "{target}: {}", run.transcript());
        assert!(
            run.stderr.contains(&format!(
                "error: cannot check the destination of {target}: {target} is not a regular file"
            )),
            "{target}: {}",
            run.stderr
        );
        let after = std::fs::symlink_metadata(dir.path().join(target))
            .expect("stat")
            .file_type();
        assert_eq!(
            (before.is_fifo(), before.is_char_device(), before.is_dir()),
            (after.is_fifo(), after.is_char_device(), after.is_dir()),
            "{target} was replaced"
        );
    }
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp-"))
        .collect();
    assert!(names.is_empty(), "temp files left: {names:?}");
}

/// `schema --out` creates its folder without following a link, and writes no schema through a
/// link or into a FIFO.
#[test]
fn schema_out_refuses_links_and_what_is_not_a_regular_file() {
    let (dir, outside) = folders();
    symlink(outside.path(), dir.path().join("linked")).expect("symlink");
    for out in ["linked", "linked/new"] {
        let run = reviewflow_in(dir.path(), &["schema", "--out", out]);
        assert_eq!(run.code, 2, "{out}: {}", run.transcript());
        assert!(
            run.stderr.contains("linked is a symbolic link"),
            "{out}: {}",
            run.stderr
        );
    }
    assert_eq!(
        std::fs::read_dir(outside.path()).expect("list").count(),
        0,
        "written through the link"
    );
    std::fs::create_dir(dir.path().join("s")).expect("mkdir");
    mkfifo(&dir.path().join("s/model.schema.json"));
    let run = reviewflow_in(dir.path(), &["schema", "--out", "s"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("s/model.schema.json is not a regular file"),
        "{}",
        run.stderr
    );
    assert!(
        std::fs::symlink_metadata(dir.path().join("s/model.schema.json"))
            .expect("stat")
            .file_type()
            .is_fifo()
    );
    // A new folder, several levels deep, is made.
    let run = reviewflow_in(dir.path(), &["schema", "--out", "a/b/c"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(dir.path().join("a/b/c/model.schema.json").is_file());
}
