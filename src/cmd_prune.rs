//! `reviewflow prune`: removes the run folders older than the newest N (docs/executor.md, "Run
//! folders"), as every `run` does at its start. Nothing else of `.reviewflow/` is touched: the
//! local forge's reviews and the stores are kept by their own rules.

use reviewflow_engine::nofollow;
use reviewflow_engine::run::prune_runs;

use crate::cli::PruneArgs;
use crate::output::{EXIT_FINDINGS, EXIT_OK, EXIT_UNUSABLE, errln};

pub fn run(args: PruneArgs) -> u8 {
    let checkout = match args.checkout.map_or_else(std::env::current_dir, Ok) {
        Ok(c) => c,
        Err(e) => {
            errln!("error: cannot find the current folder: {e}");
            return EXIT_UNUSABLE;
        }
    };
    // The same folder `run` uses, whichever subfolder this starts from.
    let checkout = match reviewflow_stdlib::git::top_level(&checkout) {
        Ok(Some(top)) => top,
        Ok(None) | Err(reviewflow_stdlib::git::GitError::Spawn { .. }) => checkout,
        Err(e) => {
            errln!("error: cannot find the top level of the checkout: {e}");
            return EXIT_UNUSABLE;
        }
    };
    let runs_dir = args
        .run_dir
        .unwrap_or_else(|| checkout.join(".reviewflow").join("runs"));
    // Below the checkout, no link is followed on the way: a committed `.reviewflow` link must
    // not point the removal elsewhere.
    let runs_dir = match nofollow::ensure_dir_in_checkout(&checkout, &runs_dir, 0o700) {
        Ok(dir) => dir,
        Err(e) => {
            errln!(
                "error: cannot open the runs folder {}: {e}",
                runs_dir.display()
            );
            return EXIT_UNUSABLE;
        }
    };
    let pruned = prune_runs(&runs_dir, args.keep, &[], &std::env::temp_dir());
    for id in &pruned.removed {
        errln!("removed run {id}");
    }
    for id in &pruned.spared {
        errln!("kept run {id}: it is still going or being created");
    }
    for (path, e) in &pruned.failures {
        errln!(
            "error: could not remove {} ({e}): plaintext may remain at {}",
            path.display(),
            path.display()
        );
    }
    errln!(
        "{} run folder(s) removed from {}; the newest {} kept",
        pruned.removed.len(),
        runs_dir.display(),
        args.keep
    );
    if pruned.failures.is_empty() {
        EXIT_OK
    } else {
        EXIT_FINDINGS
    }
}
