//! Findings that follow from another. A misspelt name is one mistake however many checks
//! stumble over it: `{chnage}` in a `bind` is an unknown input, and because of it the binding
//! "does not name the change" and no longer matches the other side's; `key "conversation-kee"`
//! is an unknown secret, and because of it the declared `conversation-key` is "visible to a
//! stage that never uses it". Such consequences are folded into the finding about the name's
//! first use, which says how many it stands for.
//!
//! A finding follows from an unknown name when it disappears once the name is put right: every
//! check runs again on the pipeline with that one name renamed to its closest candidate (or, for
//! an input, declared when nothing is close), and the live findings absent from that run,
//! compared by check, place and message, are its consequences (the name's other uses among
//! them). Only a live root folds: the consequences of an allowed one stay, each to be fixed or
//! allowed on its own.

use std::collections::{BTreeMap, HashSet};

use crate::check::{self, unknown_input};
use crate::finding::Finding;
use crate::graph::Dag;
use crate::lower::Fact;
use crate::model::Pipeline;
use crate::registry::Registry;
use crate::source::Source;
use crate::span::Span;

/// At most this many names are put right, one more pass of every check each.
const MAX_ROOTS: usize = 8;

fn key(f: &Finding) -> (&str, Span, &str) {
    (f.check, f.primary.span, f.message.as_str())
}

/// An unknown name, as the finding about it places it, with the pipeline it meant.
struct Root {
    check: &'static str,
    first_use: Span,
    fixed: Option<Pipeline>,
}

/// Every unknown name of `p` that can be put right: unknown inputs, and secrets named where none
/// of that name is declared but one is close (a misspelt secret).
fn roots(p: &Pipeline) -> Vec<Root> {
    let mut out: Vec<Root> = unknown_input::unknowns(p)
        .iter()
        .take(MAX_ROOTS)
        .map(|u| Root {
            check: unknown_input::ID,
            first_use: u.uses[0],
            fixed: unknown_input::counterfactual(p, u),
        })
        .collect();
    let mut secrets: BTreeMap<&str, Span> = BTreeMap::new();
    for stage in &p.stages {
        for v in stage.children.iter().flat_map(|c| c.values()) {
            if let crate::model::Value::Secret(name) = &v.value
                && p.secret(name).is_none()
            {
                let first = secrets.entry(name).or_insert(v.span);
                *first = (*first).min(v.span);
            }
        }
    }
    for (name, first_use) in secrets.into_iter().take(MAX_ROOTS) {
        let meant =
            crate::suggest::did_you_mean(name, p.secrets.iter().map(|s| s.name.value.as_str()));
        let fixed = meant.first().map(|meant| {
            let mut fixed = p.clone();
            for stage in &mut fixed.stages {
                for child in &mut stage.children {
                    let values = child
                        .args
                        .iter_mut()
                        .chain(child.props.iter_mut().map(|p| &mut p.value));
                    for v in values {
                        if let crate::model::Value::Secret(n) = &mut v.value
                            && n == name
                        {
                            n.clone_from(meant);
                        }
                    }
                }
            }
            fixed
        });
        out.push(Root {
            check: "unknown-reference",
            first_use,
            fixed,
        });
    }
    out
}

/// Folds the findings that follow from an unknown name into the finding about its first use.
pub(crate) fn fold(
    source: &Source,
    pipeline: &Pipeline,
    facts: &[Fact],
    registry: &Registry,
    findings: &mut Vec<Finding>,
) {
    for root in roots(pipeline).into_iter().take(MAX_ROOTS) {
        let is_root = |f: &Finding| f.check == root.check && f.primary.span == root.first_use;
        if !findings
            .iter()
            .any(|f| is_root(f) && f.suppressed.is_none())
        {
            continue;
        }
        let Some(fixed) = root.fixed else {
            continue;
        };
        let dag = Dag::build(&fixed);
        let after = check::run_all(source, &fixed, &dag, facts, registry);
        let remains: HashSet<_> = after.iter().map(key).collect();
        // The other uses of the same name are consequences too: put right, they go as well.
        let follows =
            |f: &Finding| !is_root(f) && f.suppressed.is_none() && !remains.contains(&key(f));
        let mut folded: BTreeMap<&'static str, usize> = BTreeMap::new();
        for f in findings.iter().filter(|f| follows(f)) {
            *folded.entry(f.check).or_default() += 1;
        }
        if folded.is_empty() {
            continue;
        }
        findings.retain(|f| !follows(f));
        if let Some(root) = findings.iter_mut().find(|f| is_root(f)) {
            let note = note(&folded);
            root.help = Some(match root.help.take() {
                Some(help) => format!("{help}\n{note}"),
                None => note,
            });
        }
    }
}

/// `it also causes 2 `binding` findings and 1 `secret-scope` finding, not reported separately`.
fn note(folded: &BTreeMap<&str, usize>) -> String {
    let parts: Vec<String> = folded
        .iter()
        .map(|(check, n)| {
            let s = if *n == 1 { "" } else { "s" };
            format!("{n} `{check}` finding{s}")
        })
        .collect();
    let list = match parts.as_slice() {
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        [] => String::new(),
    };
    format!("it also causes {list}, not reported separately")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_counts_by_check() {
        let one = BTreeMap::from([("binding", 1)]);
        assert_eq!(
            note(&one),
            "it also causes 1 `binding` finding, not reported separately"
        );
        let many = BTreeMap::from([("binding", 2), ("fail-closed", 1), ("secret-scope", 3)]);
        assert_eq!(
            note(&many),
            "it also causes 2 `binding` findings, 1 `fail-closed` finding and 3 `secret-scope` \
             findings, not reported separately"
        );
    }
}
