//! Mermaid flowchart. Node ids are `s<index>` (stage names such as `end` are mermaid keywords);
//! labels are quoted with `#quot;` for quotes, as mermaid expects.

use std::fmt::Write;

use super::Drawing;

fn quote(s: &str) -> String {
    s.replace('"', "#quot;")
        .replace('<', "#lt;")
        .replace('>', "#gt;")
}

pub fn render(d: &Drawing<'_>) -> String {
    let mut out = String::from("flowchart TD\n");
    let node = |out: &mut String, i: usize, indent: &str| {
        let s = &d.pipeline.stages[i];
        let net = d
            .network_of(i)
            .map(|n| format!("<br/>{}", quote(&n)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{indent}s{i}[\"{}<br/><i>{}</i>{net}\"]",
            quote(&s.name.value),
            quote(&s.uses.value)
        );
    };
    for (g, (secrets, members)) in d.scope_groups().into_iter().enumerate() {
        if secrets.is_empty() {
            for i in members {
                node(&mut out, i, "    ");
            }
            continue;
        }
        let _ = writeln!(
            out,
            "    subgraph scope{g}[\"secrets: {}\"]",
            quote(&secrets.join(", "))
        );
        for i in members {
            node(&mut out, i, "        ");
        }
        out.push_str("    end\n");
    }
    for (from, to, info) in d.dag.edges() {
        let label = info.label();
        if info.data.is_empty() && info.guard.is_empty() {
            let _ = writeln!(out, "    s{from} -.->|\"{}\"| s{to}", quote(&label));
        } else {
            let _ = writeln!(out, "    s{from} -->|\"{}\"| s{to}", quote(&label));
        }
    }
    out
}
