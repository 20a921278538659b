//! `shared-network`: what a stage that declares `network=` shares, shown where it matters. Such a
//! stage runs in the host's network, not a namespace of its own: Landlock filters the TCP ports it
//! connects to, not the hosts, and neither UDP (DNS included) nor what listens on the host's
//! loopback on those ports. When the stage holds a secret or reads untrusted data, that is where
//! the secret can go and where steered code can reach: a note, not an error (declaring network is
//! how a stage is given it).

use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::flow::runs_program;

pub struct SharedNetwork;

pub const ID: &str = "shared-network";

impl Check for SharedNetwork {
    fn id(&self) -> &'static str {
        ID
    }
    fn severity(&self) -> Severity {
        Severity::Info
    }
    fn summary(&self) -> &'static str {
        "a stage that declares network and holds a secret or reads untrusted data is shown what it shares with the host"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(flow) = cx.flow else { return };
        let p = cx.pipeline;
        for (i, stage) in p.stages.iter().enumerate() {
            let Some(first) = stage.network.first() else {
                continue;
            };
            if !cx.registry.get(&stage.uses.value).is_some_and(runs_program) {
                continue;
            }
            let secret = flow.held[i].first().map(|&k| &p.secrets[k]);
            let untrusted = flow.inputs[i].iter().find(|x| x.labels.untrusted);
            let (what, related) = match (secret, untrusted) {
                (Some(s), _) => (
                    format!("holds secret `{}`", s.name.value),
                    Label::new(
                        s.visible_to_span.unwrap_or(s.name.span),
                        format!("`{}` is in `{}`'s scope", s.name.value, stage.name.value),
                    ),
                ),
                (None, Some(x)) => (
                    format!("reads untrusted `{}`", x.reference),
                    Label::new(x.span, "untrusted data here"),
                ),
                (None, None) => continue,
            };
            let ports: Vec<String> = stage.network.iter().map(|n| n.value.to_string()).collect();
            let ports = ports.join(", ");
            let name = &stage.name.value;
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`{name}` declares network and {what}: it shares the host's network, TCP {ports} to any host (the host's loopback included) and UDP to any host and port (DNS included)"
                    ),
                    Label::new(first.span, format!("the host's network: TCP {ports} to any host")),
                )
                .related(related)
                .help(format!(
                    "this is what `network=` gives, not a mistake: declare only the ports `{name}` needs, and keep out of it the secrets and untrusted data it needs no network for; a stage without `network` gets a network of its own with only its loopback; `allow \"{ID}\" reason=\"…\"` records that it was judged"
                ))
                .confidence(Confidence::High)
                .stage(name),
            );
        }
    }
}
