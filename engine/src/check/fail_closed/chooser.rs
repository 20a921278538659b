//! What a program chose after reading untrusted data: the values a verdict or an action must not
//! be gated by ([`super::steered`]), nor a review's subject be cut by ([`super::subject`]).

use crate::check::Context;
use crate::contract::Effect;
use crate::model::Reference;

/// The first of `refs` that a program chose after reading untrusted data: the reference, its
/// stage and what the program read ([`chooser_read`]).
pub(super) fn first_chosen<'a>(
    cx: &Context<'_>,
    flow: &crate::flow::Flow,
    refs: Vec<&'a Reference>,
) -> Option<(&'a Reference, usize, String)> {
    refs.into_iter().find_map(|r| {
        let g = cx.dag.stage_index(&r.stage)?;
        let read = chooser_read(cx, flow, g)?;
        Some((r, g, read))
    })
}

/// What stage `g`'s program read that is untrusted, in words, when it runs one (an opaque
/// stage, or a kind that executes a program): an untrusted input, the tree it works in, a
/// program of the checkout, or what it fetched at run time.
fn chooser_read(cx: &Context<'_>, flow: &crate::flow::Flow, g: usize) -> Option<String> {
    chooser_read_but(cx, flow, g, &|_| false)
}

/// [`chooser_read`], passing over the inputs `but` names (a filter's own findings).
pub(super) fn chooser_read_but(
    cx: &Context<'_>,
    flow: &crate::flow::Flow,
    g: usize,
    but: &dyn Fn(&crate::flow::Input) -> bool,
) -> Option<String> {
    let guard = cx.registry.get(&cx.pipeline.stages[g].uses.value)?;
    if !(guard.opaque || guard.has_effect(Effect::Executes)) {
        return None;
    }
    flow.inputs[g]
        .iter()
        .find(|x| x.labels.untrusted && !but(x))
        .map(|x| format!("untrusted `{}`", x.reference))
        .or_else(|| {
            flow.untrusted_world(g)
                .map(|_| "the files of the tree it works in".to_owned())
        })
        .or_else(|| {
            flow.runs_untrusted_checkout(g)
                .then(|| "a program of the checkout".to_owned())
        })
        .or_else(|| {
            // What a program fetched is from outside the file (a comment, a page).
            (flow.fetches[g] || !flow.fetched[g].is_empty())
                .then(|| "what it fetched at run time".to_owned())
        })
}
