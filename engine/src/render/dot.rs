//! Graphviz dot. petgraph's dot writer has no clusters, so this is written by hand.

use std::fmt::Write;

use super::Drawing;

fn quote(s: &str) -> String {
    let escaped = s
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    format!("\"{escaped}\"")
}

pub fn render(d: &Drawing<'_>) -> String {
    let name = d
        .pipeline
        .name
        .as_ref()
        .map_or("pipeline", |n| n.value.as_str());
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", quote(name));
    out.push_str("    rankdir=TB;\n    node [shape=box, style=rounded, fontname=\"Helvetica\"];\n    edge [fontname=\"Helvetica\", fontsize=10];\n");
    let node = |out: &mut String, i: usize, indent: &str| {
        let s = &d.pipeline.stages[i];
        let _ = writeln!(
            out,
            "{indent}s{i} [label={}];",
            quote(&match d.network_of(i) {
                Some(net) => format!("{}\n{}\n{net}", s.name.value, s.uses.value),
                None => format!("{}\n{}", s.name.value, s.uses.value),
            })
        );
    };
    for (g, (secrets, members)) in d.scope_groups().into_iter().enumerate() {
        if secrets.is_empty() {
            for i in members {
                node(&mut out, i, "    ");
            }
            continue;
        }
        let _ = writeln!(out, "    subgraph cluster_{g} {{");
        let _ = writeln!(
            out,
            "        label={};",
            quote(&format!("secrets: {}", secrets.join(", ")))
        );
        out.push_str("        style=dashed;\n");
        for i in members {
            node(&mut out, i, "        ");
        }
        out.push_str("    }\n");
    }
    for (from, to, info) in d.dag.edges() {
        let style = if info.data.is_empty() && info.guard.is_empty() {
            ", style=dashed"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "    s{from} -> s{to} [label={}{style}];",
            quote(&info.label())
        );
    }
    out.push_str("}\n");
    out
}
