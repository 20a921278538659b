//! Pipelines drawn from the language, seeded: each a small DAG of holders of the canary, spies,
//! the std stages a local review uses and a stage that fails, with secrets, scopes, inputs, file
//! outputs, `needs`, `when`, `on-error` and a store. Most are meant to pass `check`; a few
//! changes, each drawn rarely, make flows `check` must see, or refusals `run` makes.

use std::fmt::Write as _;

/// xorshift64*: small, deterministic, enough to spread choices.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // Never zero, and two close seeds start far apart.
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True once in `n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// `n` lower-case hex digits.
    pub fn hex(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(b"0123456789abcdef"[self.below(16)]))
            .collect()
    }
}

/// What the spies search for: the start of every canary, assembled at run time by the spy so
/// that no script or pipeline holds it. Twelve bytes: its base64 is exactly 16 characters.
pub const CANARY_PREFIX: &str = "zqk7canaryx9";

/// One generated pipeline and what the tester needs to judge its run.
pub struct Generated {
    pub text: String,
    pub canary: String,
    pub aux: String,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Holder,
    Spy,
    Fail,
    Gather,
    Review,
    Scan,
    Restore,
    Seal,
    Post,
}

/// A stage's readable outputs: (name, type).
type Outputs = Vec<(String, &'static str)>;

struct Stage {
    name: String,
    kind: Kind,
    /// The node's properties after `uses=`.
    props: String,
    /// The node's children, one per line.
    children: Vec<String>,
    /// Outputs another stage may read: (name, type).
    outputs: Vec<(String, &'static str)>,
    /// Holds the canary (in its scope).
    holds_canary: bool,
    holds_aux: bool,
    /// Expected to fail (so its failure is no refusal).
    may_fail: bool,
}

impl Stage {
    fn new(name: String, kind: Kind) -> Self {
        Self {
            name,
            kind,
            props: String::new(),
            children: Vec::new(),
            outputs: Vec::new(),
            holds_canary: false,
            holds_aux: false,
            may_fail: false,
        }
    }
}

/// Draws the pipeline of `seed`.
pub fn generate(seed: u64) -> Generated {
    let mut rng = Rng::new(seed);
    let canary = format!("{CANARY_PREFIX}{}", rng.hex(28));
    let aux = format!("aux-{}", rng.hex(40));
    let mut stages: Vec<Stage> = Vec::new();
    let mut head = String::new();
    let _ = writeln!(head, "pipeline \"agreement-{seed}\"");
    // The stages run the tester's own scripts from the checkout (principle 1 reports each holder
    // that runs one): on the local forge the checkout is the change and no `trusted "checkout"`
    // holds, so the pipeline allows that check's findings by id (`judge` names them); the
    // tester judges where secrets go, not what steers a command.
    head.push_str("allow \"untrusted-input\" reason=\"the tester writes every program in scripts/ itself, before the run\"\n");
    if rng.one_in(2) {
        head.push_str("forge \"local\"\n");
    }
    // Inputs: a folder two stages may both name, and a plain value.
    let share = rng.one_in(3);
    if share {
        let pattern = if rng.one_in(2) {
            " pattern=\"^/[A-Za-z0-9/._-]+$\""
        } else {
            ""
        };
        let _ = writeln!(head, "input \"share\" env=\"AGR_SHARE\"{pattern}");
    }
    let label = rng.one_in(2);
    if label {
        // Rarely, a default its own pattern or type refuses: decidable from the file.
        match rng.below(12) {
            0 => head.push_str("input \"label\" default=\"Not-A-Label\" pattern=\"^[a-z]+$\"\n"),
            1 => head.push_str("input \"label\" type=\"int\" default=\"seven\"\n"),
            _ => head.push_str("input \"label\" env=\"AGR_LABEL\" default=\"plain\"\n"),
        }
    }
    let use_std = rng.below(3) != 0;
    let n_holders = 1 + rng.below(2);
    let n_spies = 1 + rng.below(3);

    if use_std {
        let mut g = Stage::new("gather".into(), Kind::Gather);
        if rng.one_in(3) {
            g.children.push("since-last-review".into());
        }
        g.outputs = vec![
            ("diff".into(), "diff"),
            ("title".into(), "text"),
            ("head".into(), "sha"),
            ("changed".into(), "bool"),
        ];
        stages.push(g);
    }
    for i in 0..n_holders {
        let mut h = Stage::new(format!("holder{i}"), Kind::Holder);
        let mut cmd = format!("command \"sh\" \"scripts/holder.sh\" \"holder{i}\"");
        if share && rng.one_in(4) {
            cmd.push_str(" \"{share}\"");
        }
        h.children.push(cmd);
        h.children
            .push("secret-env \"CANARY\" \"canary\"".to_string());
        h.holds_canary = true;
        for (name, line, ty) in [
            ("o", "output \"o\" file=\"o.txt\"", "text"),
            ("f", "output \"f\" file=\"f.txt\" type=\"file\"", "file"),
            ("b", "output \"b\" file=\"b.txt\" type=\"bool\"", "bool"),
            ("t", "output \"t\"", "text"),
        ] {
            if rng.one_in(2) {
                h.children.push(line.into());
                h.outputs.push((name.into(), ty));
            }
        }
        if use_std && rng.one_in(5) {
            // In scope, and reading the change: what `check` weighs.
            h.children.push("stdin \"{gather.diff}\"".into());
        }
        stages.push(h);
    }
    if rng.one_in(3) {
        let mut f = Stage::new("flaky".into(), Kind::Fail);
        f.children.push(
            "command \"sh\" \"-c\" \"echo partial > \\\"$REVIEWFLOW_WORK_DIR/o.txt\\\"; exit 3\""
                .into(),
        );
        f.children.push("output \"o\" file=\"o.txt\"".into());
        f.outputs.push(("o".into(), "text"));
        let on_error = *rng.pick(&["fail", "fallback", "skip"]);
        let _ = write!(f.props, " on-error=\"{on_error}\"");
        f.may_fail = true;
        stages.push(f);
    }
    let mut review_kind = None;
    if use_std {
        let reviewer = *rng.pick(&["rules", "rules", "command", "claude"]);
        review_kind = Some(reviewer);
        let mut r = Stage::new("review".into(), Kind::Review);
        let _ = write!(r.props, " timeout=\"5m\"");
        r.children.push(format!("reviewer \"{reviewer}\""));
        r.children.push("untrusted \"gather.diff\"".into());
        match reviewer {
            "command" => {
                let mut cmd = "command \"sh\" \"scripts/reviewer.sh\" \"review\"".to_string();
                if rng.one_in(8) {
                    // A variable reviewflow sets itself.
                    r.children.push("env \"REVIEWFLOW_SPY\" \"1\"".into());
                }
                if rng.one_in(3) {
                    r.children.push("secret-env \"CANARY\" \"canary\"".into());
                    r.holds_canary = true;
                }
                if rng.one_in(2) {
                    cmd.push_str(" \"{gather.head}\"");
                }
                r.children.push(cmd);
            }
            "claude" => {
                // The canary is the model's key: the proxy must keep it from the CLI.
                r.children
                    .push("secret-env \"ANTHROPIC_API_KEY\" \"canary\"".into());
                r.holds_canary = true;
                r.children.push(format!(
                    "env \"FAKE_MODE\" \"{}\"",
                    rng.pick(&["ok", "leak-credential", "leak-token"])
                ));
                r.children
                    .push("env \"FAKE_SPY_FILE\" \"stderr:AGR-FAKE\"".into());
                if rng.one_in(8) {
                    let var = *rng.pick(&["HOME", "TMPDIR", "CODEX_HOME"]);
                    r.children.push(format!("env \"{var}\" \"/tmp\""));
                }
            }
            _ => {}
        }
        r.outputs = vec![
            ("comment".into(), "text"),
            ("findings".into(), "findings"),
            ("conversation".into(), "conversation"),
            ("commented".into(), "bool"),
            ("clean".into(), "bool"),
        ];
        stages.push(r);
    }
    for i in 0..n_spies {
        stages.push(Stage::new(format!("spy{i}"), Kind::Spy));
    }
    let mut sealing = false;
    let mut scan_comment = false;
    let mut key = "canary";
    if use_std && rng.one_in(2) {
        sealing = true;
        key = if rng.one_in(2) { "canary" } else { "aux" };
        let mut scan = Stage::new("scan".into(), Kind::Scan);
        let _ = write!(scan.props, " on-error=\"fallback\"");
        // Scanning the comment too makes `post` wait for the scan (fail-closed).
        scan_comment = rng.one_in(3);
        scan.children.push(if scan_comment {
            "target \"review.conversation\" \"review.comment\"".into()
        } else {
            "target \"review.conversation\"".into()
        });
        scan.outputs = vec![("clean".into(), "bool")];
        stages.push(scan);
        let bind = if rng.one_in(10) {
            "bind repo=\"{repo}\""
        } else {
            "bind repo=\"{repo}\" change=\"{change}\""
        };
        if rng.one_in(2) {
            let mut restore = Stage::new("restore".into(), Kind::Restore);
            let _ = write!(restore.props, " on-error=\"fallback\"");
            restore.children.push("from \"conversations\"".into());
            restore.children.push(format!("key \"{key}\""));
            restore.children.push(bind.into());
            if rng.below(4) != 0 {
                restore.children.push("require-posted-head".into());
            }
            restore.may_fail = true;
            if key == "canary" {
                restore.holds_canary = true;
            } else {
                restore.holds_aux = true;
            }
            stages.push(restore);
        }
        let mut seal = Stage::new("seal".into(), Kind::Seal);
        let guard = if rng.one_in(8) {
            "review.commented"
        } else {
            "scan.clean && review.commented"
        };
        let _ = write!(seal.props, " when=\"{guard}\" on-error=\"fallback\"");
        seal.children.push(format!("key \"{key}\""));
        seal.children.push("input \"review.conversation\"".into());
        seal.children.push(bind.into());
        seal.outputs = vec![("blob".into(), "blob"), ("sealed".into(), "bool")];
        if key == "canary" {
            seal.holds_canary = true;
        } else {
            seal.holds_aux = true;
        }
        stages.push(seal);
    }
    if use_std && rng.below(3) != 0 {
        let mut post = Stage::new("post".into(), Kind::Post);
        if scan_comment && !rng.one_in(8) {
            let _ = write!(post.props, " when=\"scan.clean\"");
        }
        let comment = if rng.one_in(10) {
            // A holder's text published as the comment.
            stages
                .iter()
                .filter(|s| s.kind == Kind::Holder)
                .find_map(|s| {
                    s.outputs
                        .iter()
                        .find(|(_, t)| *t == "text")
                        .map(|(o, _)| format!("{}.{o}", s.name))
                })
                .unwrap_or_else(|| "review.comment".into())
        } else {
            "review.comment".into()
        };
        post.children.push(format!("comment \"{comment}\""));
        post.children.push("findings \"review.findings\"".into());
        post.children.push("require-head \"gather.head\"".into());
        if sealing {
            post.children
                .push("upload \"seal.blob\" to=\"conversations\"".into());
        }
        stages.push(post);
    }
    if rng.one_in(10) {
        // Seal's binding drawn wrong, or a review that resumes what restore opened.
        if let Some(r) = stages.iter_mut().find(|s| s.kind == Kind::Review)
            && sealing
        {
            r.children.push("resume \"restore.conversation\"".into());
        }
    }

    // The spies: what each reads from the stages before it, and how.
    let names: Vec<(String, Outputs, bool)> = stages
        .iter()
        .map(|s| (s.name.clone(), s.outputs.clone(), s.kind == Kind::Holder))
        .collect();
    let mut spy_outputs: Vec<(String, Outputs)> = Vec::new();
    #[allow(clippy::needless_range_loop)] // the stages before `idx` are read while it is drawn
    for idx in 0..stages.len() {
        if stages[idx].kind != Kind::Spy {
            continue;
        }
        let name = stages[idx].name.clone();
        let mut args = vec![format!("\"{name}\"")];
        let mut children = Vec::new();
        // Readable values: of stages before it (no cycle), holders' only rarely.
        let mut readable: Vec<(String, &'static str, bool)> = Vec::new();
        for (stage, outs, holder) in names.iter().take(idx) {
            for (o, t) in outs {
                readable.push((format!("{stage}.{o}"), t, *holder));
            }
        }
        for (stage, outs) in &spy_outputs {
            for (o, t) in outs {
                readable.push((format!("{stage}.{o}"), t, false));
            }
        }
        let reads = rng.below(3);
        let mut stdin_used = false;
        for _ in 0..reads {
            if readable.is_empty() {
                break;
            }
            let (r, t, holder) = readable[rng.below(readable.len())].clone();
            if holder && !rng.one_in(4) {
                continue;
            }
            if t == "bool" || t == "findings" || t == "conversation" || t == "blob" {
                continue;
            }
            match rng.below(3) {
                0 if !stdin_used => {
                    stdin_used = true;
                    children.push(format!("stdin \"{{{r}}}\""));
                }
                1 => children.push(format!("env \"GIVEN_{}\" \"{{{r}}}\"", children.len())),
                _ => args.push(format!("\"{{{r}}}\"")),
            }
        }
        if share && rng.one_in(2) {
            args.push("\"{share}\"".into());
        }
        if label && rng.one_in(3) {
            args.push("\"{label}\"".into());
        }
        let holders: Vec<&String> = names
            .iter()
            .filter(|(_, _, h)| *h)
            .map(|(n, _, _)| n)
            .collect();
        if !holders.is_empty() && rng.one_in(2) {
            // Runs after (or beside) a holder, to look where it left things.
            let h = holders[rng.below(holders.len())];
            if idx
                > names
                    .iter()
                    .position(|(n, _, _)| n == h)
                    .unwrap_or(usize::MAX)
            {
                children.push(format!("needs \"{h}\""));
            }
        }
        let mut props = String::new();
        // A `when` on what came before: bits, not data.
        let bools: Vec<String> = readable
            .iter()
            .filter(|(_, t, _)| *t == "bool")
            .map(|(r, _, _)| r.clone())
            .collect();
        if !bools.is_empty() && rng.one_in(3) {
            let a = &bools[rng.below(bools.len())];
            let expr = match rng.below(3) {
                0 => a.clone(),
                1 => format!("!{a}"),
                _ => {
                    let b = &bools[rng.below(bools.len())];
                    format!("{a} || {b}")
                }
            };
            let _ = write!(props, " when=\"{expr}\"");
        }
        if rng.one_in(4) {
            let _ = write!(props, " on-error=\"{}\"", rng.pick(&["fallback", "skip"]));
        }
        let mut lines = vec![format!(
            "command \"sh\" \"scripts/spy.sh\" {}",
            args.join(" ")
        )];
        lines.extend(children);
        let mut outs = Vec::new();
        if rng.one_in(2) {
            lines.push("output \"out\" file=\"out.txt\"".into());
            outs.push(("out".to_string(), "text"));
        }
        let s = &mut stages[idx];
        s.props = props;
        s.children = lines;
        s.outputs = outs.clone();
        spy_outputs.push((name, outs));
    }

    // Rarely, a stage in the canary's scope that never uses it.
    let mut scope: Vec<String> = stages
        .iter()
        .filter(|s| s.holds_canary)
        .map(|s| s.name.clone())
        .collect();
    if rng.one_in(12)
        && let Some(s) = stages.iter().find(|s| s.kind == Kind::Spy)
    {
        scope.push(s.name.clone());
    }
    let min_bytes = if key == "canary" && sealing {
        " min-bytes=32"
    } else {
        ""
    };
    // A secret of no known kind is taken to write on the forge (principle 2): most pipelines
    // say the canary does nothing there, so that `write-token-injection` leaves enough of them
    // to run.
    let can = if rng.below(3) == 0 { "" } else { " can=\"\"" };
    let _ = writeln!(
        head,
        "secret \"canary\" env=\"AGR_CANARY\"{min_bytes}{can} {{\n    visible-to {}\n}}",
        quoted(&scope)
    );
    let aux_scope: Vec<String> = stages
        .iter()
        .filter(|s| s.holds_aux)
        .map(|s| s.name.clone())
        .collect();
    if !aux_scope.is_empty() {
        let _ = writeln!(
            head,
            "secret \"aux\" env=\"AGR_AUX\" min-bytes=32 on-missing=\"disable\" {{\n    visible-to {}\n}}",
            quoted(&aux_scope)
        );
    }
    if sealing {
        let name = if rng.one_in(12) {
            // Not a store name once filled in: checked when the store is used.
            "review/{change}"
        } else {
            "review-{change}"
        };
        let _ = writeln!(
            head,
            "store \"conversations\" kind=\"local\" name=\"{name}\" {{\n    trust local=#true\n    max-tries 5\n}}"
        );
    }
    let _ = review_kind;

    let mut text = String::new();
    let in_scope: Vec<&str> = scope.iter().map(String::as_str).collect();
    let may_fail: Vec<&str> = stages
        .iter()
        .filter(|s| s.may_fail)
        .map(|s| s.name.as_str())
        .collect();
    let _ = writeln!(
        text,
        "// agreement: scope={} may-fail={}",
        in_scope.join(","),
        may_fail.join(",")
    );
    text.push_str(&head);
    for s in &stages {
        let uses = match s.kind {
            Kind::Holder | Kind::Spy | Kind::Fail => "run",
            Kind::Gather => "std/gather",
            Kind::Review => "std/review",
            Kind::Scan => "std/scan",
            Kind::Restore => "std/restore",
            Kind::Seal => "std/seal",
            Kind::Post => "std/post",
        };
        let _ = write!(text, "stage \"{}\" uses=\"{uses}\"{}", s.name, s.props);
        if s.children.is_empty() {
            text.push('\n');
        } else {
            text.push_str(" {\n");
            for c in &s.children {
                let _ = writeln!(text, "    {c}");
            }
            text.push_str("}\n");
        }
    }
    Generated { text, canary, aux }
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The header line the generator writes (and a found fixture keeps): the canary's scope and the
/// stages whose failure is expected.
pub struct Header {
    pub scope: Vec<String>,
    pub may_fail: Vec<String>,
}

pub fn header(text: &str) -> Header {
    let mut h = Header {
        scope: Vec::new(),
        may_fail: Vec::new(),
    };
    let Some(line) = text.lines().find_map(|l| l.strip_prefix("// agreement:")) else {
        return h;
    };
    for word in line.split_whitespace() {
        let list = |v: &str| {
            v.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        };
        if let Some(v) = word.strip_prefix("scope=") {
            h.scope = list(v);
        } else if let Some(v) = word.strip_prefix("may-fail=") {
            h.may_fail = list(v);
        }
    }
    h
}
