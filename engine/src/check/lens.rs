//! What the lens and aggregate checks share, found through contracts: the engine names no lens
//! and no stage kind. A *review* is a stage whose kind runs reviewers
//! (`StageContract::reviewer_kinds`); its *lens* is the first argument of its `lens` child
//! (`builtin:NAME` or a path). An *aggregate* is a stage whose kind reads findings through a
//! `from` child. docs/lenses.md.

use std::path::{Path, PathBuf};

use super::Context;
use crate::contract::{OutputType, StageContract};
use crate::model::{Reference, Stage, Value};
use crate::span::Span;

/// The child of a review that names its lens.
pub const LENS: &str = "lens";
/// The prefix of a built-in lens.
pub const BUILTIN: &str = "builtin:";
/// The child of an aggregate that names a review's findings.
pub const FROM: &str = "from";
/// The property of `from` that names the same review's lens output.
pub const FROM_LENS: &str = "lens";

/// One lens of the pipeline.
pub struct StageLens<'a> {
    pub stage: &'a Stage,
    /// As written: `builtin:adversarial`, `lenses/security.md`.
    pub spec: &'a str,
    pub span: Span,
}

impl StageLens<'_> {
    /// The lens's name: the built-in's, else the file's stem.
    pub fn name(&self) -> Option<&str> {
        match self.spec.strip_prefix(BUILTIN) {
            Some(name) => Some(name),
            None => Path::new(self.spec).file_stem()?.to_str(),
        }
    }

    /// The path of a lens file (`None` for a built-in).
    pub fn path(&self) -> Option<&str> {
        (!self.spec.starts_with(BUILTIN)).then_some(self.spec)
    }
}

/// Whether `contract` runs reviewers.
pub fn is_review(contract: &StageContract) -> bool {
    !contract.reviewers().is_empty()
}

/// Whether `contract` aggregates findings through `from`.
pub fn is_aggregate(contract: &StageContract) -> bool {
    contract
        .child_spec(FROM)
        .is_some_and(|c| c.accepts.contains(&OutputType::Findings))
}

/// The contract of the stage named `name`.
pub fn contract_of<'a>(cx: &Context<'a>, name: &str) -> Option<&'a StageContract> {
    let stage = cx.pipeline.stage(name)?;
    cx.registry.get(&stage.uses.value)
}

/// Every lens of every review, in file order.
pub fn lenses<'a>(cx: &Context<'a>) -> Vec<StageLens<'a>> {
    let mut out = Vec::new();
    for stage in &cx.pipeline.stages {
        if !cx.registry.get(&stage.uses.value).is_some_and(is_review) {
            continue;
        }
        for child in stage.children_named(LENS) {
            let Some(arg) = child.args.first() else {
                continue;
            };
            if let Value::String(spec) = &arg.value {
                out.push(StageLens {
                    stage,
                    spec,
                    span: arg.span,
                });
            }
        }
    }
    out
}

/// The most severe finding `findings` (a reference to a stage's findings) can carry, as a rank
/// in [`crate::contract::REVIEW_SEVERITIES`]: an aggregate clamps each lens's findings to its
/// ceiling, and the ceiling of a built-in lens is known (`Registry::lens_ceiling`). Anything
/// else, a lens file (the checkout's to set) or findings read without their lens included, may
/// carry the most severe (principle 1: unknown is untrusted).
pub fn most_severe(cx: &Context<'_>, findings: &Reference) -> usize {
    let top = crate::contract::REVIEW_SEVERITIES.len() - 1;
    let Some(stage) = cx.pipeline.stage(&findings.stage) else {
        return top;
    };
    if !cx.registry.get(&stage.uses.value).is_some_and(is_aggregate) {
        return top;
    }
    let mut most = 0;
    for from in stage.children_named(FROM) {
        let ceiling = from
            .prop(FROM_LENS)
            .and_then(|v| reference(&v.value))
            .and_then(|r| cx.pipeline.stage(&r.stage))
            .and_then(|review| review.children_named(LENS).next())
            .and_then(|lens| match lens.args.first().map(|a| &a.value) {
                Some(Value::String(spec)) => match spec.strip_prefix(BUILTIN) {
                    Some(name) => cx.registry.lens_ceiling(name),
                    None => file_ceiling(cx, spec),
                },
                _ => None,
            })
            .and_then(crate::contract::review_severity_rank);
        most = most.max(ceiling.unwrap_or(top));
    }
    most
}

/// The top of the repository holding the pipeline file, when it is a file on disk.
pub(super) fn repository_of(pipeline: &Path) -> Option<PathBuf> {
    if !pipeline.is_file() {
        return None;
    }
    let folder = std::path::absolute(pipeline).ok()?.parent()?.to_path_buf();
    let top = folder
        .ancestors()
        .find(|a| a.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf);
    Some(top.unwrap_or(folder))
}

/// The ceiling a lens file of the repository declares, read as `run` reads it (the registry's
/// parser). `run` reads it from the base revision; `check` reads the working tree's copy, the
/// base's own where the pipeline's owners check it. `None` (taken as `error`) when it cannot be
/// read or is no lens.
fn file_ceiling(cx: &Context<'_>, spec: &str) -> Option<&'static str> {
    use std::io::Read as _;
    /// More than any lens header needs; a larger file's head is read.
    const HEAD: u64 = 64 * 1024;
    let path = std::path::Path::new(spec);
    if !crate::nofollow::stays_beneath(spec) {
        return None;
    }
    let top = repository_of(Path::new(cx.source.name()))?;
    let file = crate::nofollow::open_regular_beneath(&top, path).ok()?;
    let mut text = String::new();
    file.take(HEAD).read_to_string(&mut text).ok()?;
    cx.registry.lens_file_ceiling(&text)
}

/// A whole reference argument or property value.
pub fn reference(value: &Value) -> Option<&Reference> {
    match value {
        Value::Reference(r) => Some(r),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    //! The four lens checks against made-up stage kinds: nothing in them may depend on the
    //! standard library's kind names.

    use crate::contract::{ChildSpec, LabelRule, OutputType, ReviewerKind, Role};
    use crate::contract::{StageContract, ValueType};
    use crate::registry::Registry;
    use crate::{CheckOptions, Source, compile, run_checks};

    const KINDS: &[ReviewerKind] = &[ReviewerKind {
        name: "plain",
        vendor: None,
        credentials: &[],
        api_url: None,
        settings: None,
    }];

    fn registry() -> Registry {
        let mut r = Registry::with_builtins();
        r.register(
            StageContract::new("x/review", "reviews")
                .child(
                    ChildSpec::new("reviewer", Role::Config, "which")
                        .arg(ValueType::String)
                        .required(),
                )
                .child(ChildSpec::new("lens", Role::Config, "a lens").arg(ValueType::String))
                .output("found", OutputType::Findings, "findings", LabelRule::all())
                .output("lens", OutputType::Json, "its lens", LabelRule::none())
                .reviewer_kinds(KINDS),
        );
        r.register(StageContract::new("x/lint", "lints").output(
            "found",
            OutputType::Findings,
            "findings",
            LabelRule::all(),
        ));
        r.register(
            StageContract::new("x/merge", "merges")
                .child(
                    ChildSpec::new("from", Role::Data, "findings")
                        .arg(ValueType::Reference)
                        .accepts(&[OutputType::Findings])
                        .prop("lens", ValueType::Reference, false, "its lens")
                        .repeatable(),
                )
                .output("found", OutputType::Findings, "findings", LabelRule::all()),
        );
        r.register(
            StageContract::new("x/publish", "publishes").child(
                ChildSpec::new("findings", Role::Publish, "findings")
                    .arg(ValueType::Reference)
                    .accepts(&[OutputType::Findings]),
            ),
        );
        r
    }

    /// The ids of the lens checks' findings in `text`.
    fn ids(text: &str) -> Vec<&'static str> {
        let registry = registry();
        let compiled = compile(
            Source::new("no-such-file.kdl", text),
            &registry,
            &Default::default(),
        )
        .expect("compiles");
        run_checks(&compiled, &registry, CheckOptions::default())
            .into_iter()
            .map(|f| f.check)
            .collect()
    }

    const HEAD: &str = "pipeline \"p\"\nstage \"lint\" uses=\"x/lint\"\n";

    fn review(name: &str, lens: &str) -> String {
        format!(
            "stage \"{name}\" uses=\"x/review\" {{\n    reviewer \"plain\"\n    lens \"{lens}\"\n}}\n"
        )
    }

    #[test]
    fn the_lens_checks_read_contracts_only() {
        let merged = format!(
            "{HEAD}{}{}stage \"m\" uses=\"x/merge\" {{\n    from \"a.found\" lens=\"a.lens\"\n    from \"b.found\" lens=\"b.lens\"\n}}\nstage \"p\" uses=\"x/publish\" {{\n    findings \"m.found\"\n}}\n",
            review("a", "builtin:one"),
            review("b", "team/two.md"),
        );
        // Not a file on disk: the lens file is not looked up.
        assert_eq!(ids(&merged), Vec::<&str>::new());
        let leaves = merged.replace("team/two.md", "../two.md");
        assert_eq!(ids(&leaves), ["lens-missing"]);
        let twice = merged.replace("team/two.md", "builtin:one");
        assert_eq!(ids(&twice), ["duplicate-lens"]);
        let crossed = merged.replace(
            "from \"b.found\" lens=\"b.lens\"",
            "from \"b.found\" lens=\"a.lens\"",
        );
        assert_eq!(ids(&crossed), ["aggregate-input"]);
        // `lint` is no review, and `b`, a lens, is then read by no aggregate.
        let lint = merged.replace("from \"b.found\" lens=\"b.lens\"", "from \"lint.found\"");
        assert_eq!(ids(&lint), ["aggregate-input", "aggregate-input"]);
        let left_out = merged.replace("    from \"b.found\" lens=\"b.lens\"\n", "");
        assert_eq!(ids(&left_out), ["aggregate-input"]);
        let unlensed = merged.replace("from \"b.found\" lens=\"b.lens\"", "from \"b.found\"");
        assert_eq!(ids(&unlensed), ["aggregate-input"]);
        let direct = merged.replace("findings \"m.found\"", "findings \"a.found\"");
        assert_eq!(ids(&direct), ["unvalidated-findings"]);
        // Without a lens, publishing a review's findings directly is not this check's business.
        let plain = format!(
            "{HEAD}stage \"a\" uses=\"x/review\" {{\n    reviewer \"plain\"\n}}\nstage \"p\" uses=\"x/publish\" {{\n    findings \"a.found\"\n}}\n"
        );
        assert_eq!(ids(&plain), Vec::<&str>::new());
    }
}
