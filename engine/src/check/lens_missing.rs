//! `lens-missing`: every lens file a review names exists in the repository, as a regular file
//! reached without a symbolic link, and its path stays in the repository. At run time such a
//! lens fails the review (nothing reviewed); `check` says so before.
//!
//! The repository is the nearest folder holding `.git` above the pipeline file, else the
//! pipeline's own folder; a pipeline that is not a file on disk is not looked up (the path is
//! still checked).

use std::path::Path;

use super::lens::{StageLens, lenses, repository_of};
use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};

pub struct LensMissing;

impl LensMissing {
    fn finding(&self, lens: &StageLens<'_>, message: String, label: &str, help: &str) -> Finding {
        Finding::new(
            self.id(),
            self.severity(),
            message,
            Label::new(lens.span, label),
        )
        .help(help)
        .confidence(Confidence::High)
        .stage(&lens.stage.name.value)
    }
}

impl Check for LensMissing {
    fn principle(&self) -> super::Principle {
        super::Principle::Coverage
    }
    fn id(&self) -> &'static str {
        "lens-missing"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "every lens file exists in the repository, reached without a link"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let all = lenses(cx);
        if all.iter().all(|l| l.path().is_none()) {
            return;
        }
        let top = repository_of(Path::new(cx.source.name()));
        for lens in &all {
            let Some(path) = lens.path() else { continue };
            let stage = &lens.stage.name.value;
            if !crate::nofollow::stays_beneath(path) {
                out.push(self.finding(
                    lens,
                    format!("the lens {path:?} of `{stage}` leaves the repository"),
                    "an absolute path or a `..` component",
                    "name the lens by a path relative to the top of the repository, without `..`, or a built-in (`builtin:adversarial`)",
                ));
                continue;
            }
            let Some(top) = &top else { continue };
            let problem = match crate::nofollow::open_regular_beneath(top, Path::new(path)) {
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    "there is no such file".to_owned()
                }
                Err(e) => e.to_string(),
            };
            out.push(self.finding(
                lens,
                // The repository's own path is the machine's, not the pipeline's: not said.
                format!("the lens {path:?} of `{stage}` cannot be read in the repository: {problem}"),
                "this lens file",
                "add the lens file at this path (a regular file, not a link), or name a built-in lens (`builtin:adversarial`, `builtin:engineering`)",
            ));
        }
    }
}
