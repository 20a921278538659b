//! `shared-network`: what a stage that declares `network=` shares, shown where it matters. Such a
//! stage runs in the host's network, not a namespace of its own: Landlock filters the TCP ports it
//! connects to, not the hosts, and neither UDP (DNS included) nor what listens on the host's
//! loopback on those ports. When the stage holds a secret or reads untrusted data, that is where
//! the secret can go and where steered code can reach: a note (declaring network is how a stage
//! is given it), and a warning where a secret's holder is given ports without hosts: a port
//! admits every host, and hosts can be named (principle 3).

use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::flow::runs_program;

pub struct SharedNetwork;

pub const ID: &str = "shared-network";

impl Check for SharedNetwork {
    fn principle(&self) -> super::Principle {
        super::Principle::Labels
    }
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
            // A reviewer that reads untrusted text with the host's network is an error of
            // `reviewer-access`: one cause, one finding.
            let reviews = cx
                .registry
                .get(&stage.uses.value)
                .is_some_and(|c| !c.reviewers().is_empty());
            if reviews && (untrusted.is_some() || flow.untrusted_world(i).is_some()) {
                continue;
            }
            let (what, related) = match (secret, untrusted) {
                (Some(s), _) => (
                    format!("holds secret `{}`", s.name.value),
                    Label::new(
                        s.visible_to_span.unwrap_or(s.name.span),
                        format!("`{}` is in `{}`'s scope", s.name.value, stage.name.value),
                    ),
                ),
                (None, Some(x)) => (
                    match &x.folder {
                        Some(f) => format!(
                            "reads the folder `{{{}}}` names, which `{}` may write",
                            f.input, p.stages[f.writer].name.value
                        ),
                        None => format!("reads untrusted `{}`", x.reference),
                    },
                    Label::new(x.span, "untrusted data here"),
                ),
                (None, None) => continue,
            };
            let ports: Vec<String> = stage.network.iter().map(|n| n.value.to_string()).collect();
            let ports = ports.join(", ");
            let name = &stage.name.value;
            if !stage.host_network() {
                // Hosts named: the stage reaches them alone, through reviewflow's proxy.
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "`{name}` declares network and {what}: it reaches {ports} and nothing else, through reviewflow's proxy on its own loopback (no other host, no UDP, not the host's loopback); what it sends there is its to send"
                        ),
                        Label::new(first.span, format!("only {ports}")),
                    )
                    .related(related)
                    .help(format!(
                        "this is what `network=` gives, not a mistake: declare only the hosts `{name}` needs, and keep out of it the secrets and untrusted data it needs no network for; `allow \"{ID}\" reason=\"…\"` records that it was judged"
                    ))
                    .confidence(Confidence::High)
                    .stage(name),
                );
                continue;
            }
            // Principle 3: now that a stage can name its hosts, a bare port given to a secret's
            // holder admits every host on it, where the secret can go: a warning. Untrusted data
            // alone stays a note (what it steers reaches the network, but holds nothing).
            let (severity, admits) = if secret.is_some() {
                (
                    Severity::Warning,
                    " (principle 3: a port admits every host; name the ones it needs)",
                )
            } else {
                (self.severity(), "")
            };
            out.push(
                Finding::new(
                    self.id(),
                    severity,
                    format!(
                        "`{name}` declares network and {what}: it shares the host's network, TCP {ports} to any host (the host's loopback included) and UDP to any host and port (DNS included){admits}"
                    ),
                    Label::new(first.span, format!("the host's network: TCP {ports} to any host")),
                )
                .related(related)
                .help(format!(
                    "name the hosts `{name}` needs with their ports (`network=\"api.example.com:443\"`): it then reaches them alone, through reviewflow's proxy; keep out of it the secrets and untrusted data it needs no network for; a stage without `network` gets a network of its own with only its loopback; `allow \"{ID}\" reason=\"…\"` records that it was judged"
                ))
                .confidence(Confidence::High)
                .stage(name),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::finding::Severity;
    use crate::registry::Registry;
    use crate::{CheckOptions, Source, compile, run_checks};

    fn notes(body: &str) -> Vec<(Severity, String, String)> {
        let registry = Registry::with_builtins();
        let text =
            format!("pipeline \"p\"\nsecret \"k\" env=\"K\" {{\n    visible-to \"a\"\n}}\n{body}");
        let compiled =
            compile(Source::new("t.kdl", text), &registry, &Default::default()).expect("compiles");
        run_checks(&compiled, &registry, CheckOptions::default())
            .into_iter()
            .filter(|f| f.check == super::ID)
            .map(|f| (f.severity, f.stage.unwrap_or_default(), f.message))
            .collect()
    }

    #[test]
    fn a_stage_with_network_and_a_secret_is_told_what_it_shares() {
        let found = notes(
            "stage \"a\" uses=\"run\" network=\"443 8443\" {\n    command \"deploy\"\n    secret-env \"K\" \"k\"\n}\n",
        );
        assert_eq!(found.len(), 1, "{found:?}");
        let (severity, stage, message) = &found[0];
        // Ports without hosts, given to a secret's holder: every host on them (principle 3).
        assert_eq!((*severity, stage.as_str()), (Severity::Warning, "a"));
        for part in [
            "holds secret `k`",
            "TCP 443, 8443 to any host (the host's loopback included)",
            "UDP to any host and port (DNS included)",
            "a port admits every host",
        ] {
            assert!(message.contains(part), "{message}");
        }
    }

    /// Hosts named: a note of what it reaches, not a warning.
    #[test]
    fn a_secret_holder_that_names_its_hosts_is_only_told() {
        let found = notes(
            "stage \"a\" uses=\"run\" network=\"api.example.com:443\" {\n    command \"deploy\"\n    secret-env \"K\" \"k\"\n}\n",
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, Severity::Info, "{found:?}");
    }

    /// Untrusted data is what makes a stage worth steering: here a folder another stage may
    /// write.
    #[test]
    fn a_stage_with_network_that_reads_untrusted_data_is_told_too() {
        let found = notes(
            "input \"dir\" env=\"DIR\"\nstage \"w\" uses=\"run\" {\n    command \"make\" \"-C\" \"{dir}\"\n}\nstage \"b\" uses=\"run\" network=\"443\" {\n    command \"upload\"\n    stdin \"{dir}\"\n}\n",
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0]
                .2
                .contains("reads the folder `{dir}` names, which `w` may write"),
            "{found:?}"
        );
    }

    #[test]
    fn network_alone_or_a_secret_alone_is_not_a_note() {
        assert!(
            notes("stage \"b\" uses=\"run\" network=\"443\" {\n    command \"fetch\"\n}\n")
                .is_empty()
        );
        assert!(
            notes("stage \"a\" uses=\"run\" {\n    command \"deploy\"\n    secret-env \"K\" \"k\"\n}\n")
                .is_empty()
        );
    }
}
