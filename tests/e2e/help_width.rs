//! `--help` is wrapped to the terminal's width (`COLUMNS` when stdout is not a terminal, as
//! here), at most 100 columns (README.md, "The command line").

/// The widest line of `reviewflow <args>` with `COLUMNS=<columns>`, in characters.
fn widest(args: &[&str], columns: &str) -> usize {
    let out = crate::support::command()
        .args(args)
        .env("COLUMNS", columns)
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{args:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
}

#[test]
fn help_fits_the_terminal_up_to_100_columns() {
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["check", "--help"],
        &["prune", "--help"],
        &["export", "github", "--help"],
        &["export", "gitlab", "--help"],
    ] {
        assert!(widest(args, "60") <= 60, "{args:?}: {}", widest(args, "60"));
        let wide = widest(args, "300");
        assert!(wide > 60 && wide <= 100, "{args:?}: {wide}");
    }
}
