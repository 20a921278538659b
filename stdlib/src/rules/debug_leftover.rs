//! `debug-leftover`: debugging statements that are almost never meant to be committed.
//!
//! Only clear cases, by file extension; a line that starts with a comment is skipped.

use super::text::{contains_token, extension};
use super::{Context, Finding, Rule, RuleId, Severity};
use crate::diff::FileDiff;

pub struct DebugLeftover;

struct Lang {
    extensions: &'static [&'static str],
    comments: &'static [&'static str],
    /// Found anywhere in the line, as a token.
    tokens: &'static [&'static str],
    /// The whole (trimmed) line.
    lines: &'static [&'static str],
}

const C_COMMENTS: &[&str] = &["//", "/*", "*"];

const LANGS: &[Lang] = &[
    Lang {
        extensions: &["rs"],
        comments: C_COMMENTS,
        tokens: &["dbg!("],
        lines: &[],
    },
    Lang {
        extensions: &[
            "js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "vue", "svelte",
        ],
        comments: C_COMMENTS,
        tokens: &["console.log(", "debugger;"],
        lines: &["debugger"],
    },
    Lang {
        extensions: &["rb", "erb", "rake"],
        comments: &["#"],
        tokens: &["binding.pry", "binding.irb", "byebug"],
        lines: &[],
    },
    Lang {
        extensions: &["py"],
        comments: &["#"],
        tokens: &[
            "import pdb",
            "import ipdb",
            "pdb.set_trace(",
            "ipdb.set_trace(",
            "breakpoint()",
        ],
        lines: &[],
    },
];

fn leftover(lang: &Lang, content: &[u8]) -> Option<&'static str> {
    let trimmed = content.trim_ascii();
    if lang
        .comments
        .iter()
        .any(|c| trimmed.starts_with(c.as_bytes()))
    {
        return None;
    }
    lang.tokens
        .iter()
        .find(|t| contains_token(content, t.as_bytes()))
        .or_else(|| lang.lines.iter().find(|l| trimmed == l.as_bytes()))
        .copied()
}

impl Rule for DebugLeftover {
    fn id(&self) -> RuleId {
        RuleId::DebugLeftover
    }

    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn description(&self) -> &'static str {
        "a debugging statement was added (dbg!, console.log, debugger, pdb, binding.pry, …)"
    }

    fn check(&self, file: &FileDiff, _: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(ext) = extension(file.path()) else {
            return;
        };
        let Some(lang) = LANGS.iter().find(|l| l.extensions.contains(&ext.as_str())) else {
            return;
        };
        for (n, l) in file.added() {
            if let Some(what) = leftover(lang, &l.content) {
                out.push(self.finding(file, Some(n), format!("debugging leftover `{what}`")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lang(ext: &str) -> &'static Lang {
        LANGS.iter().find(|l| l.extensions.contains(&ext)).unwrap()
    }

    #[test]
    fn table() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("rs", "    dbg!(x);", Some("dbg!(")),
            ("rs", "    // dbg!(x);", None),
            ("rs", "    mydbg!(x);", None),
            ("js", "  console.log('x');", Some("console.log(")),
            ("js", "  logger.console.log('x');", None),
            ("js", "  debugger;", Some("debugger;")),
            ("js", "  debugger", Some("debugger")),
            ("js", "  const debuggerEnabled = true;", None),
            ("rb", "  binding.pry", Some("binding.pry")),
            ("rb", "  # binding.pry", None),
            ("py", "import pdb", Some("import pdb")),
            ("py", "import pdbx", None),
            ("py", "    pdb.set_trace()", Some("pdb.set_trace(")),
            ("py", "    ipdb.set_trace()", Some("ipdb.set_trace(")),
            ("py", "    breakpoint()", Some("breakpoint()")),
            ("py", "    set_breakpoint()", None),
            ("py", "    print('x')", None),
        ];
        for (ext, line, want) in cases {
            assert_eq!(leftover(lang(ext), line.as_bytes()), *want, "{ext}: {line}");
        }
    }
}
