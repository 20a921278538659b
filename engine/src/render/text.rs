//! Plain text: stages in the order they can run, each with its inputs, guard and secrets.

use std::fmt::Write;

use super::Drawing;

pub fn render(d: &Drawing<'_>) -> String {
    let p = d.pipeline;
    let mut out = String::new();
    let name = p.name.as_ref().map_or("(unnamed)", |n| n.value.as_str());
    let _ = writeln!(out, "pipeline {name}: {} stages", p.stages.len());
    for i in d.order() {
        let s = &p.stages[i];
        let _ = writeln!(out, "{} ({})", s.name.value, s.uses.value);
        let mut producers: Vec<_> = d.dag.producers(i).collect();
        producers.sort_by_key(|(j, _)| *j);
        for (j, info) in producers {
            let _ = writeln!(out, "  <- {}: {}", p.stages[j].name.value, info.label());
        }
        if let Some(when) = &s.when {
            let _ = writeln!(out, "  when {}", when.value);
        }
        let secrets = d.secrets_of(i);
        if !secrets.is_empty() {
            let _ = writeln!(out, "  secrets: {}", secrets.join(", "));
        }
        if let Some(net) = d.network_of(i) {
            let _ = writeln!(out, "  {net}");
        }
    }
    out
}
