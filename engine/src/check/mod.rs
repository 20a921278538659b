//! Checks: each a file with one [`Check`] implementation, registered in [`ALL`].
//!
//! Structural checks turn the compiler's [`Fact`]s into findings; the others read the model and
//! the DAG. A new check is one new file and one line in [`ALL`], plus its section in
//! `docs/checks.md` (a test keeps the two in step).

mod aggregate_input;
mod binding;
mod cycle;
mod duplicate_lens;
mod duplicate_name;
mod duplicate_publisher;
mod fail_closed;
pub mod folder;
mod held;
mod key_length;
mod lens;
mod lens_missing;
mod limit;
mod literal_reference;
mod missing_required;
mod permissions;
mod principle;
mod private_egress;
mod reviewer;
mod reviewer_access;
mod reviewer_credential;
mod reviewer_vendor;
mod run_folder_path;
mod run_refusal;
mod secret_alias;
mod secret_as_input;
mod secret_flow;
mod secret_on_argv;
mod secret_scope;
mod shared_job;
mod shared_network;
mod suppression;
mod syntax;
pub(crate) mod trigger;
mod trust;
mod type_mismatch;
mod unbudgeted_reviewer;
pub(crate) mod unknown_input;
mod unknown_node;
mod unknown_property;
mod unknown_reference;
mod unknown_stage_kind;
mod unreachable_stage;
mod untrusted_input;
mod unvalidated_findings;
mod write_token_injection;

use crate::finding::{Finding, Severity};
use crate::flow::Flow;
use crate::graph::Dag;
use crate::lower::Fact;
use crate::model::Pipeline;
use crate::registry::Registry;
use crate::source::Source;

/// What every check may read.
pub struct Context<'a> {
    pub source: &'a Source,
    pub pipeline: &'a Pipeline,
    pub registry: &'a Registry,
    pub dag: &'a Dag,
    pub facts: &'a [Fact],
    /// The label analysis; `None` when the stages form a cycle.
    pub flow: Option<&'a Flow>,
    /// Each stage's outputs (`graph::outputs_of`), computed once.
    pub outputs: &'a [Vec<(String, crate::contract::OutputType)>],
}

impl<'a> Context<'a> {
    /// What the contract of the stage a reference names says of the output it names.
    pub fn output_spec(
        &self,
        r: &crate::model::Reference,
    ) -> Option<&'a crate::contract::OutputSpec> {
        let producer = self.pipeline.stage(&r.stage)?;
        self.registry
            .get(&producer.uses.value)?
            .output_spec(&r.output)
    }

    /// Every value that narrows what a run reviews (a child its contract marks `narrows`:
    /// `std/gather`'s `path`), with the stage that holds it, in file order.
    pub fn narrowings(
        &self,
    ) -> impl Iterator<
        Item = (
            &'a crate::model::Stage,
            &'a crate::span::Spanned<crate::model::Value>,
        ),
    > {
        let registry = self.registry;
        self.pipeline.stages.iter().flat_map(move |stage| {
            let contract = registry.get(&stage.uses.value);
            stage
                .children
                .iter()
                .filter(move |c| {
                    contract
                        .and_then(|k| k.child_spec(&c.name.value))
                        .is_some_and(|s| s.narrows)
                })
                .flat_map(|c| c.args.iter())
                .map(move |arg| (stage, arg))
        })
    }

    /// The outputs of the stage named `stage` (empty for an unknown stage).
    pub fn outputs_of(&self, stage: &str) -> &[(String, crate::contract::OutputType)] {
        self.dag
            .stage_index(stage)
            .and_then(|i| self.outputs.get(i))
            .map_or(&[], Vec::as_slice)
    }
}

/// Every check on one pipeline, unsorted and unsuppressed.
pub(crate) fn run_all(
    source: &Source,
    pipeline: &Pipeline,
    dag: &Dag,
    facts: &[Fact],
    registry: &Registry,
) -> Vec<Finding> {
    let outputs: Vec<_> = pipeline
        .stages
        .iter()
        .map(|s| crate::graph::outputs_of(s, registry))
        .collect();
    let flow = Flow::compute_with(pipeline, registry, dag, &outputs);
    let cx = Context {
        source,
        pipeline,
        registry,
        dag,
        facts,
        flow: flow.as_ref(),
        outputs: &outputs,
    };
    let mut findings = Vec::new();
    for c in ALL {
        c.run(&cx, &mut findings);
    }
    findings
}

pub use principle::Principle;

pub trait Check: Sync {
    /// A stable id, used in output, SARIF rule ids and `allow`.
    fn id(&self) -> &'static str;
    /// The severity of its findings.
    fn severity(&self) -> Severity;
    /// The principle it applies (docs/checks.md, "Principles").
    fn principle(&self) -> Principle;
    /// One line: what the check proves.
    fn summary(&self) -> &'static str;
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>);
}

/// Every check, in the order they run.
pub static ALL: &[&dyn Check] = &[
    &syntax::Syntax,
    &unknown_node::UnknownNode,
    &unknown_property::UnknownProperty,
    &unknown_stage_kind::UnknownStageKind,
    &duplicate_name::DuplicateName,
    &missing_required::MissingRequired,
    &type_mismatch::TypeMismatch,
    &unknown_reference::UnknownReference,
    &unknown_input::UnknownInput,
    &literal_reference::LiteralReference,
    &cycle::Cycle,
    &unreachable_stage::UnreachableStage,
    &secret_scope::SecretScope,
    &secret_alias::SecretAlias,
    &key_length::KeyLength,
    &limit::Limit,
    &run_refusal::RunRefusal,
    &secret_as_input::SecretAsInput,
    &secret_flow::SecretFlow,
    &private_egress::PrivateEgress,
    &untrusted_input::UntrustedInput,
    &write_token_injection::WriteTokenInjection,
    &run_folder_path::RunFolderPath,
    &secret_on_argv::SecretOnArgv,
    &shared_network::SharedNetwork,
    &fail_closed::FailClosed,
    &permissions::Permissions,
    &trust::Trust,
    &trigger::Trigger,
    &binding::Binding,
    &duplicate_publisher::DuplicatePublisher,
    &reviewer_vendor::ReviewerVendor,
    &reviewer_access::ReviewerAccess,
    &reviewer_credential::ReviewerCredential,
    &unbudgeted_reviewer::UnbudgetedReviewer,
    &lens_missing::LensMissing,
    &duplicate_lens::DuplicateLens,
    &aggregate_input::AggregateInput,
    &unvalidated_findings::UnvalidatedFindings,
    // Reads the findings of the checks above it: keep it after them.
    &shared_job::SharedJob,
    &suppression::Suppression,
];

pub fn by_id(id: &str) -> Option<&'static dyn Check> {
    ALL.iter().copied().find(|c| c.id() == id)
}

pub use suppression::apply as apply_allows;
pub use syntax::ID as SYNTAX;
