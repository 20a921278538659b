//! What a command line runs as code. Principle 1 holds for code as for data: the program a stage
//! starts, the script an interpreter is given, the code on an interpreter's command line and the
//! package a package runner installs are inputs of the stage, and each comes from somewhere: the
//! file (a literal), the runner (an installed program), another stage (a `file` output), the
//! checkout (`flow::checkout_programs`), or a registry or server at run time ([`fetched`]).
//!
//! Which word a program runs is the program's business; the tables below say it for the programs
//! that run a word they are given (interpreters, wrappers, package runners). A word of any other
//! program is its data.

/// A commit of the change, as [`crate::flow`] writes a reference to one on a command line
/// (`{gather.head}`): a full commit id, so nothing reads it as a floating version, and one no
/// file would write.
pub const CHANGE_COMMIT: &str = "c0dec0dec0dec0dec0dec0dec0dec0dec0dec0de";
/// Another commit a built-in kind resolved (`{gather.base}`), written the same way.
pub const OTHER_COMMIT: &str = "0000000000000000000000000000000000000000";

/// How a word of a command line is run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodeHow {
    /// It is the program (or the program a wrapper such as `timeout` runs).
    Program,
    /// This interpreter runs it as its script, or loads it as a module (`node --require`).
    Script(String),
    /// This interpreter runs it as code written on its command line (`sh -c`, `node -e`).
    Inline(String),
    /// This package runner installs it and runs it (`npx`, `uvx`, `docker run`).
    Package(String),
}

/// A word of a command line that is run as code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeWord {
    /// Its index in the command line.
    pub index: usize,
    pub how: CodeHow,
}

/// Code a stage runs that a registry or a server chooses when it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// The word that names it.
    pub index: usize,
    /// What the file writes there (a package, a URL, the code that downloads it).
    pub text: String,
    pub how: FetchHow,
}

/// How fetched code is named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchHow {
    /// A package or image this runner installs, at a version the registry may still change.
    Package(String),
    /// A package this runner installs at an exact version, whose dependencies the registry
    /// resolves by their ranges when the stage runs (nothing locks them).
    Dependencies(String),
    /// A script this interpreter loads from a URL.
    Url(String),
    /// Code on this interpreter's command line that runs what it downloads.
    Download(String),
    /// The change's own code, fetched or checked out at the change's commit (`{gather.head}`)
    /// by this runner or interpreter.
    Change(String),
    /// What the stage fetches or sends goes over a channel it does not verify (this, in words:
    /// [`crate::transport`]).
    Unverified(&'static str),
    /// A program or script in a folder every user and process of the machine may write (`/tmp`,
    /// `/var/tmp`, `/dev/shm`): whatever ran there before the stage chose it.
    SharedFolder,
    /// A program or script by a path outside the system's folders (a home, a runner's work
    /// folder): what the job's own steps wrote there before the run (a restored cache, a setup
    /// step) chose it, and the file does not show what that was.
    UnknownFolder,
}

impl Fetched {
    /// "runs `some-reporter@latest` with `npx`, a package the registry chooses when it runs".
    pub fn describe(&self) -> String {
        match &self.how {
            FetchHow::Package(runner) => format!(
                "runs `{}` with `{runner}`, code a registry chooses when the stage runs (no exact version or digest pins it)",
                self.text
            ),
            FetchHow::Dependencies(runner) => format!(
                "runs `{}` with `{runner}`, pinned, but not what it depends on, which a registry resolves when the stage runs",
                self.text
            ),
            FetchHow::Url(interpreter) => format!(
                "runs `{}` with `{interpreter}`, a script a server chooses when the stage runs",
                self.text
            ),
            FetchHow::Download(interpreter) => format!(
                "runs code that `{interpreter}` downloads when the stage runs (`{}`)",
                shorten(&self.text)
            ),
            FetchHow::Unverified(does) => format!("writes `{}`, which {does}", shorten(&self.text)),
            FetchHow::SharedFolder => format!(
                "runs `{}`, from a folder every user and process of the machine may write (what ran there before the stage chose what it is)",
                shorten(&self.text)
            ),
            FetchHow::UnknownFolder => format!(
                "runs `{}`, from a folder outside the system's, which a step before the run (a restored cache, a setup step) filled",
                shorten(&self.text)
            ),
            FetchHow::Change(by) => format!(
                "runs the change's own code: `{by}` fetches or checks out the tree at the change's commit (`{}`)",
                shorten(&self.text.replace(CHANGE_COMMIT, "<the change's commit>"))
            ),
        }
    }

    /// The way out, for a help.
    pub fn fix(&self) -> &'static str {
        match &self.how {
            FetchHow::Package(_) => {
                "pin it to what a registry cannot change (an exact version such as `tool@1.4.2` or `tool==1.4.2`, an image's `@sha256:` digest), or install it before the run and run it by its path; or run it in a stage that holds nothing, handing on what it makes as a declared output"
            }
            FetchHow::Dependencies(_) => {
                "lock what it depends on: install it before the run from a lockfile (`npm ci`, `pip install --require-hashes -r …`, `cargo install --locked`) and run it by its path, or run an image by its `@sha256:` digest; or run it in a stage that holds nothing, handing on what it makes as a declared output"
            }
            FetchHow::Url(_) | FetchHow::Download(_) => {
                "install the tool before the run (a pinned step of the job) and run it by its path; or run it in a stage that holds nothing, handing on what it makes as a declared output"
            }
            FetchHow::Unverified(_) => {
                "verify the server instead: trust its certificate authority (`--cacert`, `NODE_EXTRA_CA_CERTS`, `PIP_CERT`, `GIT_SSL_CAINFO`), use `https`, and install from one index that holds every name you use"
            }
            FetchHow::Change(_) => {
                "build or run the change's code in a stage that holds no secret and no write permission, and hand on what it makes as a declared output; a tool of the base revision (`{gather.base}`) may run with more"
            }
            FetchHow::SharedFolder => {
                "install the tool where only the job's own user writes (the runner's image, a pinned step of the job into a folder of its own) and run it by that path; or run it in a stage that holds nothing"
            }
            FetchHow::UnknownFolder => {
                "run the tool from the system's folders (`/usr`, `/opt`: the runner's image), installed by a pinned step, not restored from a cache; or run it in a stage that holds nothing"
            }
        }
    }

    /// Where the code comes from, for a label: "the change's code", "code from outside the file".
    pub fn source(&self) -> &'static str {
        match &self.how {
            FetchHow::Change(_) => "the change's code",
            FetchHow::Unverified(_) => "an unverified channel",
            _ => "code from outside the file",
        }
    }

    /// Who then runs code with what the stage holds.
    pub fn consequence(&self) -> &'static str {
        match &self.how {
            FetchHow::Package(_) => {
                "whoever can publish that name (its maintainers, or whoever takes over their account) runs code with it"
            }
            FetchHow::Dependencies(_) => {
                "whoever can publish a release of any of its dependencies runs code with it"
            }
            FetchHow::Url(_) | FetchHow::Download(_) => {
                "whoever controls that server (or what it serves) runs code with it"
            }
            FetchHow::Change(_) => "the change's author runs code with it",
            FetchHow::Unverified(does) if does.contains("index") => {
                "whoever can publish that name on the other index chooses the code that runs with it"
            }
            FetchHow::Unverified(_) => {
                "anyone on the network path reads what the stage sends and chooses what it receives"
            }
            FetchHow::SharedFolder => {
                "any process of the machine that wrote there first (another job of a shared runner, a step before the run) runs code with it"
            }
            FetchHow::UnknownFolder => {
                "whoever chose what is there (a cache entry another workflow saved) runs code with it"
            }
        }
    }
}

fn shorten(text: &str) -> String {
    const MAX: usize = 60;
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= MAX && !text.contains('\n') {
        return line.to_owned();
    }
    let cut: String = line.chars().take(MAX).collect();
    format!("{cut}…")
}

/// Programs that run the file they are given (a script, a module) as code.
pub const INTERPRETERS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "mksh",
    "ash",
    "fish",
    "csh",
    "tcsh",
    "yash",
    "posh",
    "node",
    "nodejs",
    "deno",
    "bun",
    "ts-node",
    "tsx",
    "perl",
    "ruby",
    "php",
    "lua",
    "luajit",
    "Rscript",
    "pwsh",
    "powershell",
    "tclsh",
    "osascript",
];

/// Programs that run the program named by a later word, and how many words they take before it
/// that are not options, with the options of theirs that take a word.
const WRAPPERS: &[(&str, usize, &[&str])] = &[
    (
        "env",
        0,
        &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
    ),
    // `busybox sh -c …`: its first word names the applet it runs.
    ("busybox", 0, &[]),
    ("timeout", 1, &["-s", "--signal", "-k", "--kill-after"]),
    ("nice", 0, &["-n", "--adjustment"]),
    ("nohup", 0, &[]),
    ("setsid", 0, &[]),
    ("stdbuf", 0, &["-i", "-o", "-e"]),
    (
        "sudo",
        0,
        &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"],
    ),
    ("doas", 0, &["-u", "-C"]),
    (
        "xargs",
        0,
        &["-n", "-I", "-L", "-P", "-d", "-E", "-s", "-a"],
    ),
    ("time", 0, &["-f", "-o"]),
    ("exec", 0, &["-a"]),
    ("command", 0, &[]),
    ("chrt", 1, &[]),
    ("ionice", 0, &["-c", "-n", "-p"]),
    ("taskset", 1, &[]),
    (
        "flock",
        1,
        &["-w", "--timeout", "-E", "--conflict-exit-code"],
    ),
    ("unbuffer", 0, &[]),
    ("strace", 0, &["-o", "-e", "-p", "-s", "-u"]),
    ("ltrace", 0, &["-o", "-e", "-p", "-s", "-u"]),
    ("valgrind", 0, &[]),
    ("watch", 0, &["-n", "--interval", "-d"]),
    ("retry", 0, &["-t", "--times", "-d", "--delay"]),
];

/// The shells: given `-c` (alone or in a cluster, `-ec`), their first word that is not an option
/// is a script written on the command line.
pub const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "posh",
];

/// Options of an interpreter that take the next word as code (`-c`) or as a module it loads.
fn interpreter_options(name: &str) -> (&'static [&'static str], &'static [&'static str]) {
    match name {
        "node" | "nodejs" | "ts-node" | "tsx" | "bun" => (
            &["-e", "--eval", "-p", "--print"],
            &[
                "-r",
                "--require",
                "--import",
                "--loader",
                "--experimental-loader",
            ],
        ),
        "deno" => (&["eval"], &[]),
        "perl" => (&["-e", "-E"], &["-M", "-m"]),
        "ruby" => (&["-e"], &["-r"]),
        "php" => (&["-r"], &[]),
        "lua" | "luajit" => (&["-e"], &["-l"]),
        "Rscript" => (&["-e"], &[]),
        "pwsh" | "powershell" => (&["-Command", "-c", "-command"], &["-File", "-f", "-file"]),
        _ if is_python(name) => (&["-c"], &["-m"]),
        // The shells.
        _ => (&["-c"], &[]),
    }
}

/// Options of an interpreter that take a word which is neither code nor a script.
fn interpreter_arguments(name: &str) -> &'static [&'static str] {
    match name {
        "node" | "nodejs" | "ts-node" | "tsx" | "bun" => &["--conditions", "-C", "--title"],
        _ if is_python(name) => &["-W", "-X"],
        "deno" | "perl" | "ruby" | "php" | "lua" | "luajit" | "Rscript" | "pwsh" | "powershell" => {
            &[]
        }
        // The shells.
        _ => &["-o", "+o", "-O", "+O", "--rcfile", "--init-file"],
    }
}

/// A package runner: a program (and the subcommand of it) that installs a package and runs it.
struct Runner {
    program: &'static str,
    subcommand: Option<&'static str>,
    /// Options whose word is the package.
    package_options: &'static [&'static str],
    /// Options that take a word which is not the package.
    with_word: &'static [&'static str],
}

const fn runner(
    program: &'static str,
    subcommand: Option<&'static str>,
    package_options: &'static [&'static str],
    with_word: &'static [&'static str],
) -> Runner {
    Runner {
        program,
        subcommand,
        package_options,
        with_word,
    }
}

/// `docker run`'s and `podman run`'s options that take a word.
const CONTAINER_WITH_WORD: &[&str] = &[
    "-e",
    "--env",
    "-v",
    "--volume",
    "--name",
    "-w",
    "--workdir",
    "--network",
    "--net",
    "-u",
    "--user",
    "--entrypoint",
    "--platform",
    "--mount",
    "-p",
    "--publish",
    "--env-file",
    "-l",
    "--label",
    "--cap-add",
    "--cap-drop",
    "-m",
    "--memory",
    "--cpus",
    "--pull",
    "--tmpfs",
    "--add-host",
    "--hostname",
    "-h",
];

const RUNNERS: &[Runner] = &[
    runner("npx", None, &["-p", "--package"], &["-c", "--call"]),
    runner("pnpx", None, &[], &[]),
    runner("bunx", None, &["-p", "--package"], &[]),
    runner(
        "uvx",
        None,
        &["--from", "--with"],
        &["--python", "-p", "--index", "--index-url"],
    ),
    runner(
        "pipx",
        Some("run"),
        &["--spec"],
        &["--python", "--index-url", "-i"],
    ),
    runner("npm", Some("exec"), &["-p", "--package"], &["-c", "--call"]),
    runner("npm", Some("x"), &["-p", "--package"], &["-c", "--call"]),
    runner("pnpm", Some("dlx"), &["--package"], &[]),
    runner("yarn", Some("dlx"), &["-p", "--package"], &[]),
    runner("bun", Some("x"), &["-p", "--package"], &[]),
    runner(
        "go",
        Some("run"),
        &[],
        &["-C", "-o", "-tags", "-ldflags", "-gcflags", "-mod"],
    ),
    runner("nix", Some("run"), &[], &[]),
    runner("docker", Some("run"), &[], CONTAINER_WITH_WORD),
    runner("podman", Some("run"), &[], CONTAINER_WITH_WORD),
    // Installers run code of what they install while they install it (a `setup.py`, an
    // `install` script, a `build.rs`, a `Dockerfile`'s `RUN`), and put programs on `PATH`.
    runner("pip", Some("install"), &["-e", "--editable"], PIP_WITH_WORD),
    runner(
        "pip3",
        Some("install"),
        &["-e", "--editable"],
        PIP_WITH_WORD,
    ),
    runner("npm", Some("install"), &[], NPM_WITH_WORD),
    runner("npm", Some("i"), &[], NPM_WITH_WORD),
    runner("npm", Some("add"), &[], NPM_WITH_WORD),
    runner("pnpm", Some("add"), &[], NPM_WITH_WORD),
    runner("yarn", Some("add"), &[], NPM_WITH_WORD),
    runner("bun", Some("add"), &[], NPM_WITH_WORD),
    runner(
        "go",
        Some("install"),
        &[],
        &["-C", "-tags", "-ldflags", "-gcflags", "-mod"],
    ),
    runner(
        "cargo",
        Some("install"),
        &["--git"],
        &[
            "--rev",
            "--branch",
            "--tag",
            "--version",
            "--root",
            "--path",
            "--features",
            "-F",
            "--target",
            "--index",
            "--registry",
            "-j",
            "--jobs",
            "--profile",
            "--bin",
            "--example",
            "--config",
        ],
    ),
    runner(
        "gem",
        Some("install"),
        &[],
        &["-v", "--version", "-i", "--install-dir", "--source"],
    ),
    runner("docker", Some("build"), &[], BUILD_WITH_WORD),
    runner("podman", Some("build"), &[], BUILD_WITH_WORD),
];

/// `pip install`'s options that take a word.
const PIP_WITH_WORD: &[&str] = &[
    "-r",
    "--requirement",
    "-c",
    "--constraint",
    "-i",
    "--index-url",
    "--extra-index-url",
    "-t",
    "--target",
    "--prefix",
    "--root",
    "-f",
    "--find-links",
    "--python-version",
    "--platform",
    "--src",
    "--trusted-host",
    "--cache-dir",
];

/// `npm install`'s (and its kin's) options that take a word.
const NPM_WITH_WORD: &[&str] = &["--registry", "--prefix", "-w", "--workspace", "--cwd"];

/// `docker build`'s options that take a word.
const BUILD_WITH_WORD: &[&str] = &[
    "-t",
    "--tag",
    "-f",
    "--file",
    "--build-arg",
    "--secret",
    "--ssh",
    "--target",
    "--platform",
    "--label",
    "--network",
    "--cache-from",
    "--cache-to",
    "-o",
    "--output",
    "--build-context",
    "--progress",
];

/// The last component of a program's path.
pub fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// `python`, `python3`, `python3.12`, `pypy3`.
pub fn is_python(name: &str) -> bool {
    name.strip_prefix("python")
        .or_else(|| name.strip_prefix("pypy"))
        .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// The words of `words` that are run as code. `words` are a command line's words as the file
/// writes them up to their first interpolation (a word that starts with a reference or an input
/// is empty: its value is not known, but where it stands is).
pub fn code_words(words: &[&str]) -> Vec<CodeWord> {
    let mut out = Vec::new();
    let mut at = 0;
    // Each round is one program: a wrapper hands on to the next.
    while let Some(program) = words.get(at) {
        out.push(CodeWord {
            index: at,
            how: CodeHow::Program,
        });
        let name = base_name(program);
        if let Some(&(_, before, with_word)) = WRAPPERS.iter().find(|w| w.0 == name) {
            match after_wrapper(words, at + 1, before, with_word, name == "env") {
                Some(next) => {
                    at = next;
                    continue;
                }
                None => break,
            }
        }
        if INTERPRETERS.contains(&name) || is_python(name) {
            out.extend(interpreted(name, words, at + 1));
        } else if let Some(word) = package(name, words, at + 1) {
            out.push(word);
        }
        break;
    }
    out
}

/// The index of the program a wrapper runs: past its options (and their words), its assignments
/// (`env NAME=value`) and its `before` positional words.
fn after_wrapper(
    words: &[&str],
    mut at: usize,
    mut before: usize,
    with_word: &[&str],
    assignments: bool,
) -> Option<usize> {
    while let Some(word) = words.get(at) {
        if *word == "--" {
            return (at + 1 < words.len()).then_some(at + 1);
        }
        if word.starts_with('-') && word.len() > 1 {
            at += if with_word.contains(word) { 2 } else { 1 };
            continue;
        }
        if assignments && word.contains('=') && !word.starts_with('=') {
            at += 1;
            continue;
        }
        if before > 0 {
            before -= 1;
            at += 1;
            continue;
        }
        return Some(at);
    }
    None
}

/// What an interpreter started at `words[at - 1]` runs: code on its command line, a module it
/// loads, and its script (the first word that is not an option; the rest are the script's).
fn interpreted(name: &str, words: &[&str], mut at: usize) -> Vec<CodeWord> {
    let (inline, modules) = interpreter_options(name);
    let arguments = interpreter_arguments(name);
    let mut out = Vec::new();
    // `deno run …` and `bun run …` name their script after a subcommand.
    if matches!(name, "deno" | "bun") && words.get(at).is_some_and(|w| *w == "run") {
        at += 1;
    }
    let shell = SHELLS.contains(&name);
    let mut command_string = false;
    let mut reads_input = false;
    while let Some(word) = words.get(at) {
        // A shell's cluster of one-letter options: `c` makes the script a command string, and
        // one that ends in `o` takes the next word (`-euo pipefail`).
        if shell
            && (word.starts_with('-') || word.starts_with('+'))
            && !word.starts_with("--")
            && word.len() > 1
        {
            command_string |= word.starts_with('-') && word[1..].contains('c');
            // `-s` (alone or in a cluster): it reads its code from its input.
            reads_input |= word.starts_with('-') && word[1..].contains('s');
            at += if word.ends_with('o') || word.ends_with('O') {
                2
            } else {
                1
            };
            continue;
        }
        if inline.contains(word) {
            if let Some(_code) = words.get(at + 1) {
                out.push(CodeWord {
                    index: at + 1,
                    how: CodeHow::Inline(name.to_owned()),
                });
            }
            return out;
        }
        if modules.contains(word) {
            if words.get(at + 1).is_some() {
                out.push(CodeWord {
                    index: at + 1,
                    how: CodeHow::Script(name.to_owned()),
                });
            }
            // `python -m pip install …` installs as `pip install` does.
            if is_python(name)
                && words.get(at + 1).is_some_and(|m| *m == "pip")
                && let Some(word) = package("pip", words, at + 2)
            {
                out.push(word);
            }
            // Python's `-m` ends its options; a loader of Node's does not.
            if is_python(name) || name == "pwsh" || name == "powershell" {
                return out;
            }
            at += 2;
            continue;
        }
        if *word == "--" {
            at += 1;
            break;
        }
        if (word.starts_with('-') || word.starts_with('+')) && word.len() > 1 {
            at += if arguments.contains(word) { 2 } else { 1 };
            continue;
        }
        break;
    }
    if reads_input && !command_string {
        return out;
    }
    if let Some(word) = words.get(at)
        && *word != "-"
    {
        out.push(CodeWord {
            index: at,
            how: if command_string {
                CodeHow::Inline(name.to_owned())
            } else {
                CodeHow::Script(name.to_owned())
            },
        });
    }
    out
}

/// The package a package runner started at `words[at - 1]` installs and runs.
fn package(name: &str, words: &[&str], mut at: usize) -> Option<CodeWord> {
    for r in RUNNERS.iter().filter(|r| r.program == name) {
        let (runner, subcommand) = (r.program, r.subcommand);
        let (package_options, with_word) = (r.package_options, r.with_word);
        let mut i = at;
        if let Some(sub) = subcommand {
            // The subcommand is the first word that is not an option.
            while words.get(i).is_some_and(|w| w.starts_with('-')) {
                i += 1;
            }
            if words.get(i) != Some(&sub) {
                continue;
            }
            i += 1;
        }
        at = i;
        let label = match subcommand {
            Some(sub) => format!("{runner} {sub}"),
            None => runner.to_owned(),
        };
        while let Some(word) = words.get(at) {
            if package_options.contains(word) {
                return words.get(at + 1).map(|_| CodeWord {
                    index: at + 1,
                    how: CodeHow::Package(label),
                });
            }
            if let Some((option, _)) = word.split_once('=')
                && package_options.contains(&option)
            {
                return Some(CodeWord {
                    index: at,
                    how: CodeHow::Package(label),
                });
            }
            if *word == "--" {
                at += 1;
                break;
            }
            if word.starts_with('-') && word.len() > 1 {
                at += if with_word.contains(word) { 2 } else { 1 };
                continue;
            }
            break;
        }
        return words.get(at).map(|_| CodeWord {
            index: at,
            how: CodeHow::Package(label),
        });
    }
    None
}

/// The code of a command line that a registry or a server chooses when the stage runs.
pub fn fetched(words: &[&str]) -> Vec<Fetched> {
    let mut out = Vec::new();
    for code in code_words(words) {
        let Some(word) = words.get(code.index) else {
            continue;
        };
        // A word the file does not write (a reference, an input) is judged by its labels.
        if word.is_empty() {
            continue;
        }
        // The change's commit anywhere in code the line runs, or beside a package it installs
        // (`cargo install --git … --rev {gather.head}`): the change's own code.
        let at_change = |w: &str| w.contains(CHANGE_COMMIT);
        // Who runs the change's code here, and the text that names the commit: the shell's
        // `git` command, the word that holds it, or (`cargo install --git URL --rev
        // {gather.head}`) the package, then the commit.
        let change: Option<(&String, String)> = match &code.how {
            CodeHow::Program => None,
            // A runner's words after its package are the package's arguments (`--sha
            // {gather.head}`); an installer's are all its own.
            CodeHow::Package(runner)
                if words[..installer_words(runner, code.index, words.len())]
                    .iter()
                    .any(|w| at_change(w)) =>
            {
                let text = if at_change(word) {
                    (*word).to_owned()
                } else {
                    format!("{word} at {CHANGE_COMMIT}")
                };
                Some((runner, text))
            }
            CodeHow::Script(by) if at_change(word) => Some((by, (*word).to_owned())),
            CodeHow::Inline(by) => {
                checks_out_the_change_and_runs(word).map(|git| (by, git.trim().to_owned()))
            }
            _ => None,
        };
        if let Some((by, text)) = change {
            out.push(Fetched {
                index: code.index,
                text,
                how: FetchHow::Change(by.clone()),
            });
            continue;
        }
        let how = match &code.how {
            CodeHow::Program | CodeHow::Script(_) if in_shared_folder(word) => {
                FetchHow::SharedFolder
            }
            CodeHow::Program | CodeHow::Script(_) if outside_the_system(word) => {
                FetchHow::UnknownFolder
            }
            CodeHow::Package(runner) => {
                let spec = word.split_once('=').map_or(*word, |(option, value)| {
                    if option.starts_with('-') { value } else { word }
                });
                if !(pinned_by_option(runner, words) || pinned(runner, spec)) {
                    FetchHow::Package(runner.clone())
                } else if local(spec) || locks_dependencies(runner, words) {
                    continue;
                } else {
                    FetchHow::Dependencies(runner.clone())
                }
            }
            CodeHow::Script(interpreter) if is_url(word) => FetchHow::Url(interpreter.clone()),
            CodeHow::Inline(interpreter)
                if downloads_and_runs(word)
                    || fetches_a_tree_and_runs(word)
                    || runs_what_it_downloaded(word) =>
            {
                FetchHow::Download(interpreter.clone())
            }
            // A shell's code is command lines: each of its simple commands is judged as the
            // stage's own line would be (`sh -c "npx tool@latest && …"`).
            CodeHow::Inline(interpreter) if SHELLS.contains(&interpreter.as_str()) => {
                for command in shell_commands(word) {
                    let inner = command_words_of(command);
                    out.extend(fetched(&inner).into_iter().map(|f| Fetched {
                        index: code.index,
                        ..f
                    }));
                }
                continue;
            }
            _ => continue,
        };
        out.push(Fetched {
            index: code.index,
            text: (*word).to_owned(),
            how,
        });
    }
    out
}

/// The folders a runner's image installs programs in, which only its administrator writes
/// (Linux's, Nix's store, macOS's). Default deny: a program by any other absolute path, or in
/// a home (`~/`, `$HOME/`), was put there by something the file does not show.
const SYSTEM_FOLDERS: &[&str] = &[
    "/usr/",
    "/bin/",
    "/sbin/",
    "/lib/",
    "/lib32/",
    "/lib64/",
    "/libx32/",
    "/opt/",
    "/etc/",
    "/nix/store/",
    "/snap/",
    "/System/",
    "/Library/",
    "/Applications/",
];

/// Whether `path` names a program or script outside [`SYSTEM_FOLDERS`]: an absolute path
/// elsewhere, or one in the user's home. A relative path is the checkout's (judged as such), a
/// word with a reference or an input is judged by its labels.
fn outside_the_system(path: &str) -> bool {
    // Code read from a descriptor (`sh /dev/stdin`) is judged as what feeds it.
    if path.contains('{') || path.starts_with("/dev/") || path.starts_with("/proc/") {
        return false;
    }
    let home = ["~/", "$HOME/", "${HOME}/"]
        .iter()
        .any(|h| path.starts_with(h));
    home || (path.starts_with('/')
        && path.len() > 1
        && !SYSTEM_FOLDERS.iter().any(|dir| path.starts_with(dir)))
}

/// Whether `path` lies in a folder every user and process of the machine may write: the
/// system's temporary folders, whose sticky bit keeps a file from being replaced by another user
/// but not from being placed there first.
fn in_shared_folder(path: &str) -> bool {
    ["/tmp/", "/var/tmp/", "/dev/shm/"]
        .iter()
        .any(|dir| path.starts_with(dir))
}

/// How many words of a command line belong to the runner whose package is at `index`: all of
/// an installer's (`cargo install --git … --rev …`), a runner's up to its package.
fn installer_words(runner: &str, index: usize, len: usize) -> usize {
    let installs = runner
        .rsplit(' ')
        .next()
        .is_some_and(|sub| matches!(sub, "install" | "i" | "add" | "build"));
    if installs { len } else { (index + 1).min(len) }
}

/// Whether an installer that takes its version in an option of its own is given one no one can
/// move: `cargo install --git … --rev <full commit>`, `cargo install x --version 1.2.3`, `gem
/// install x -v 1.2.3`.
fn pinned_by_option(runner: &str, words: &[&str]) -> bool {
    let option = |names: &[&str], ok: &dyn Fn(&str) -> bool| {
        words.windows(2).any(|w| names.contains(&w[0]) && ok(w[1]))
            || words.iter().any(|w| {
                w.split_once('=')
                    .is_some_and(|(o, v)| names.contains(&o) && ok(v))
            })
    };
    match runner {
        "cargo install" => {
            option(&["--rev"], &full_commit)
                || option(&["--version"], &|v| {
                    exact_version(v.trim_start_matches('='), 3)
                })
        }
        "gem install" => option(&["-v", "--version"], &|v| exact_version(v, 3)),
        _ => false,
    }
}

/// The `git` command by which shell code checks out the change's commit (`git checkout`, `git
/// switch`, `git worktree add`, `git reset`, a clone or fetch of it), where it then runs a
/// program after it: that program works in the change's tree, and runs what it finds there.
fn checks_out_the_change_and_runs(code: &str) -> Option<&str> {
    if !code.contains(CHANGE_COMMIT) {
        return None;
    }
    let mut checked_out = None;
    for command in shell_commands(code) {
        let words = command_words_of(command);
        let Some(program) = words.first() else {
            continue;
        };
        if checked_out.is_some() && !RUN_NOTHING.contains(&base_name(program)) {
            return checked_out;
        }
        if command.contains(CHANGE_COMMIT) && moves_the_tree(&words) {
            checked_out = Some(command);
        }
    }
    None
}

/// A shell's simple commands, roughly: split at newlines, `;`, `|` and `&&`.
fn shell_commands(code: &str) -> impl Iterator<Item = &str> {
    code.split(['\n', ';', '|']).flat_map(|c| c.split("&&"))
}

/// A simple command's words, unquoted, past its leading assignments.
fn command_words_of(command: &str) -> Vec<&str> {
    command
        .split_whitespace()
        .map(|w| w.trim_matches(['"', '\'', '(', ')']))
        .skip_while(|w| w.contains('=') && !w.starts_with('-'))
        .collect()
}

/// Whether a `git` command fetches a tree or sets the working tree to a revision.
fn moves_the_tree(words: &[&str]) -> bool {
    words.first().is_some_and(|p| base_name(p) == "git")
        && git_subcommand(words).is_some_and(|s| {
            matches!(
                s,
                "checkout"
                    | "switch"
                    | "worktree"
                    | "reset"
                    | "clone"
                    | "fetch"
                    | "pull"
                    | "restore"
            )
        })
}

/// `git`'s subcommand: the first word past its own options (`-C dir`, `-c name=value`).
fn git_subcommand<'a>(words: &[&'a str]) -> Option<&'a str> {
    let mut at = 1;
    while let Some(word) = words.get(at) {
        if matches!(
            *word,
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace"
        ) {
            at += 2;
        } else if word.starts_with('-') {
            at += 1;
        } else {
            return Some(word);
        }
    }
    None
}

fn is_url(word: &str) -> bool {
    word.starts_with("https://") || word.starts_with("http://")
}

/// Whether a package that is pinned also has what it depends on pinned: a Go module (its
/// `go.sum`, checked against the checksum database), an image by digest, a flake at a revision
/// (its lock); `cargo install --locked` (the lockfile the package was published with); `pip
/// install --no-deps` and `gem install --ignore-dependencies` (nothing else is installed). A
/// package of npm, PyPI or RubyGems names its dependencies by ranges (npm publishes no
/// lockfile), and a registry resolves them when the stage runs: default deny.
fn locks_dependencies(runner: &str, words: &[&str]) -> bool {
    let has = |option: &str| words.contains(&option);
    match runner.split(' ').next().unwrap_or(runner) {
        "docker" | "podman" | "nix" | "go" => true,
        "cargo" => has("--locked") || has("--frozen"),
        // `python -m pip install` is judged as `pip install`.
        "pip" | "pip3" => has("--no-deps"),
        "gem" => has("--ignore-dependencies"),
        _ => false,
    }
}

/// A path rather than a package name: the checkout's or the machine's, judged as such.
fn local(spec: &str) -> bool {
    spec == "." || spec.starts_with('/') || spec.starts_with("./") || spec.starts_with("../")
}

/// Whether `spec`, a package `runner` installs, names what its registry cannot change: an
/// exact version where versions are immutable (npm, PyPI, Go's checksum database), a digest
/// where tags move (images), a revision for a flake. A path (`./x`, `/opt/x`) is no fetch.
fn pinned(runner: &str, spec: &str) -> bool {
    if local(spec) {
        return true;
    }
    let runner = runner.split(' ').next().unwrap_or(runner);
    match runner {
        "docker" | "podman" => {
            spec.contains("@sha256:")
                || spec
                    .rsplit_once('#')
                    .is_some_and(|(_, rev)| full_commit(rev.split(':').next().unwrap_or(rev)))
        }
        "nix" => spec.contains("?rev=") || spec.rsplit('/').next().is_some_and(full_commit),
        "go" => match spec.rsplit_once('@') {
            Some((_, version)) => version
                .strip_prefix('v')
                .is_some_and(|v| exact_version(v, 3)),
            // `go run ./cmd`, `go run main.go`: the checkout's, judged there.
            None => true,
        },
        "uvx" | "pipx" | "pip" | "pip3" => {
            // A VCS requirement at a full commit (`git+https://…@<40 hex>`).
            if let Some((_, rev)) = spec.strip_prefix("git+").and_then(|u| u.rsplit_once('@')) {
                return full_commit(rev.split('#').next().unwrap_or(rev));
            }
            let version = spec
                .split_once("===")
                .or_else(|| spec.split_once("=="))
                .or_else(|| spec.split_once('@'))
                .map(|(_, v)| v);
            version.is_some_and(|v| exact_version(v, 2))
        }
        // npm's registry: `name@1.2.3`, `@scope/name@1.2.3`; a git spec at a full commit
        // (`git+https://host/owner/repo.git#<40 hex>`), which no one can move.
        _ => {
            let unscoped = spec.strip_prefix('@').unwrap_or(spec);
            unscoped
                .split_once('@')
                .is_some_and(|(_, version)| exact_version(version, 3))
                || spec
                    .rsplit_once('#')
                    .is_some_and(|(_, rev)| full_commit(rev))
        }
    }
}

/// A full commit id: 40 (SHA-1) or 64 (SHA-256) hexadecimal digits.
fn full_commit(rev: &str) -> bool {
    matches!(rev.len(), 40 | 64) && rev.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `1.2.3`, `1.2.3-rc.1`, `1.2.3+build`, and for PyPI `2.0`: at least `parts` groups of
/// digits, then a pre-release or build suffix.
fn exact_version(version: &str, parts: usize) -> bool {
    let core = version.split(['-', '+']).next().unwrap_or(version);
    let groups: Vec<&str> = core.split('.').collect();
    groups.len() >= parts
        && groups
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Downloaders a shell's code may pipe into an interpreter.
const DOWNLOADERS: &[&str] = &["curl", "wget", "fetch", "iwr", "Invoke-WebRequest", "irm"];

/// Whether code written on an interpreter's command line runs what it downloads: a download
/// piped into an interpreter (`curl … | sh`), or read by one through a substitution
/// (`bash <(curl …)`, `eval "$(wget -qO- …)"`, `. <(curl …)`).
fn downloads_and_runs(code: &str) -> bool {
    let downloads = |text: &str| {
        text.split(|c: char| c.is_whitespace() || matches!(c, '(' | '"' | '\'' | '`'))
            .any(|w| DOWNLOADERS.contains(&base_name(w)))
    };
    if !downloads(code) {
        return false;
    }
    for command in code.split(['\n', ';']).flat_map(|c| c.split("&&")) {
        let stages: Vec<&str> = command.split('|').filter(|s| !s.is_empty()).collect();
        for pair in stages.windows(2) {
            if downloads(pair[0]) && runs_its_input(pair[1]) {
                return true;
            }
        }
        // A substitution read as code.
        let words: Vec<&str> = command.split_whitespace().collect();
        for (k, w) in words.iter().enumerate() {
            let substituted = (w.starts_with("<(") || w.starts_with("\"$(") || w.starts_with("$("))
                && downloads(w);
            if !substituted {
                continue;
            }
            let runs = words[..k]
                .iter()
                .rev()
                .find(|p| !p.starts_with('-'))
                .is_some_and(|p| {
                    let p = base_name(p.trim_matches(|c| c == '"' || c == '\''));
                    matches!(p, "eval" | "source" | ".")
                        || INTERPRETERS.contains(&p)
                        || is_python(p)
                });
            if runs {
                return true;
            }
        }
    }
    false
}

/// Whether a command fetches a repository's tree (`git clone`, `git fetch`, `git pull`,
/// `gh pr checkout`, `gh repo clone`): the code in it is whoever pushed it.
fn fetches_a_tree(words: &[&str]) -> bool {
    match words.first().map(|w| base_name(w)) {
        Some("git") => {
            git_subcommand(words).is_some_and(|s| matches!(s, "clone" | "fetch" | "pull"))
        }
        Some("gh") => words
            .windows(2)
            .any(|w| matches!((w[0], w[1]), ("pr", "checkout") | ("repo", "clone"))),
        _ => false,
    }
}

/// Commands that run nothing of a tree they work in: git itself, moving about, and the shell's
/// builtins that start nothing.
const RUN_NOTHING: &[&str] = &[
    "git", "cd", "pushd", "popd", "echo", "printf", "test", "[", "true", "false", ":", "set",
    "export", "unset", "local", "read", "pwd",
];

/// Whether code written on a shell's command line fetches a repository's tree and then runs a
/// program after it (`git clone … && cd src && npm ci`): a build tool, a test runner or a
/// script works in what was fetched, and runs what it finds there.
fn fetches_a_tree_and_runs(code: &str) -> bool {
    let mut fetched = false;
    for command in shell_commands(code) {
        let words = command_words_of(command);
        let Some(program) = words.first() else {
            continue;
        };
        if fetched && !RUN_NOTHING.contains(&base_name(program)) {
            return true;
        }
        // A tree set to a full commit id afterwards (`git checkout <40 hex>`) is that commit's,
        // which no one can move: pinned, as a package at an exact version is.
        if fetched && moves_the_tree(&words) && words.iter().any(|w| full_commit(w)) {
            fetched = false;
            continue;
        }
        fetched |= fetches_a_tree(&words);
    }
    false
}

/// A download command: (program, subcommand, options naming the place, where it goes when none
/// is given).
type DownloadTo = (
    &'static str,
    Option<&'static str>,
    &'static [&'static str],
    Option<&'static str>,
);

/// Where a download command puts what it fetches.
const DOWNLOADS_TO: &[DownloadTo] = &[
    // Another run's artifacts: a `pull_request` run executes the change and uploads what it
    // likes.
    ("gh", Some("run"), &["-D", "--dir"], Some(".")),
    (
        "gh",
        Some("release"),
        &["-D", "--dir", "-O", "--output"],
        Some("."),
    ),
    ("curl", None, &["-o", "--output"], None),
    (
        "wget",
        None,
        &["-O", "--output-document", "-P", "--directory-prefix"],
        Some("."),
    ),
];

/// Whether shell code downloads files (another run's artifacts, a release's assets, a URL) and
/// then runs one of them as code: the program, an interpreter's script, or a package an
/// installer installs, at a path beneath where the download went.
fn runs_what_it_downloaded(code: &str) -> bool {
    let mut places: Vec<String> = Vec::new();
    for command in shell_commands(code) {
        let words = command_words_of(command);
        let Some(program) = words.first().map(|p| base_name(p)) else {
            continue;
        };
        if !places.is_empty() {
            for cw in code_words(&words) {
                let Some(word) = words.get(cw.index) else {
                    continue;
                };
                let path = word.strip_prefix("./").unwrap_or(word);
                let beneath = |place: &String| {
                    let place = place
                        .strip_prefix("./")
                        .unwrap_or(place)
                        .trim_end_matches('/');
                    if place == "." || place.is_empty() {
                        // Into the working folder: any relative path run as code.
                        return cw.how != CodeHow::Program || word.contains('/');
                    }
                    path == place || path.starts_with(&format!("{place}/"))
                };
                if !path.starts_with('/') && !path.starts_with('$') && places.iter().any(beneath) {
                    return true;
                }
            }
        }
        for (p, sub, options, default) in DOWNLOADS_TO {
            if program != *p {
                continue;
            }
            if let Some(sub) = sub {
                let mut rest = words.iter().skip(1).filter(|w| !w.starts_with('-'));
                if rest.next() != Some(sub) || rest.next() != Some(&"download") && *p == "gh" {
                    continue;
                }
            }
            let named = words
                .windows(2)
                .find(|w| options.contains(&w[0]))
                .map(|w| w[1].to_owned());
            if let Some(place) = named.or(default.map(str::to_owned)) {
                places.push(place);
            }
        }
    }
    false
}

/// Whether a pipeline's stage is an interpreter reading its code from its input.
fn runs_its_input(stage: &str) -> bool {
    let words: Vec<&str> = stage
        .split_whitespace()
        .map(|w| w.trim_matches(['"', '\'', '(', ')']))
        .collect();
    reads_code_from_input(&words).is_some()
}

/// The interpreter a command line ends in when it reads its code from its standard input: the
/// last program (past `sudo`, `env`, `timeout`) is an interpreter given no script and no code
/// (or `-` for its script).
pub fn reads_code_from_input<'a>(words: &[&'a str]) -> Option<&'a str> {
    let codes = code_words(words);
    let program = codes.iter().rev().find(|c| c.how == CodeHow::Program)?;
    let name = base_name(words[program.index]);
    let given = codes
        .iter()
        .any(|c| matches!(c.how, CodeHow::Script(_) | CodeHow::Inline(_)) && words[c.index] != "-");
    ((INTERPRETERS.contains(&name) || is_python(name)) && !given).then_some(name)
}

/// Programs that read their arguments, options or program from standard input, given these
/// words: (program, the words that make it so, what it reads there). No words: always.
const STDIN_SETTINGS: &[(&str, &[&str], &str)] = &[
    ("xargs", &[], "the arguments of the program it starts"),
    ("parallel", &[], "the arguments of the programs it starts"),
    (
        "curl",
        &["-K -", "--config -", "--config=-", "-K-"],
        "its options (`--config -`)",
    ),
    (
        "wget",
        &["-i -", "--input-file -", "--input-file=-", "-i-"],
        "the URLs it fetches",
    ),
    ("awk", &["-f -", "-f /dev/stdin"], "its program"),
    ("sed", &["-f -", "-f /dev/stdin"], "its program"),
    (
        "jq",
        &["-f /dev/stdin", "--from-file /dev/stdin"],
        "its program",
    ),
];

/// The program of a command line that reads its arguments, options or program from standard
/// input (`xargs gh issue comment`, `curl --config -`), and what it reads there: untrusted text
/// there is not data (principle 3: standard input is data only for a program that reads data).
pub fn reads_settings_from_input(words: &[&str]) -> Option<(&'static str, &'static str)> {
    let line = words.join(" ");
    code_words(words)
        .iter()
        .filter(|c| c.how == CodeHow::Program)
        .find_map(|c| {
            let name = base_name(words.get(c.index)?);
            STDIN_SETTINGS.iter().find_map(|(program, when, what)| {
                (*program == name && (when.is_empty() || when.iter().any(|w| line.contains(w))))
                    .then_some((*program, *what))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_that_reads_its_settings_from_its_input_is_found() {
        let found = |line: &str| {
            let words: Vec<&str> = line.split(' ').collect();
            reads_settings_from_input(&words).map(|(p, _)| p)
        };
        assert_eq!(found("xargs -n1 gh issue comment 1 --body"), Some("xargs"));
        assert_eq!(found("timeout 60 xargs echo"), Some("xargs"));
        assert_eq!(found("curl -fsS --config -"), Some("curl"));
        assert_eq!(found("curl -fsS -d @- https://x.test"), None);
        assert_eq!(found("wget -i -"), Some("wget"));
        assert_eq!(found("awk -f - data.txt"), Some("awk"));
        assert_eq!(found("jq ."), None);
        assert_eq!(found("cat"), None);
    }

    fn code(line: &str) -> Vec<(String, CodeHow)> {
        let words: Vec<&str> = line.split(' ').collect();
        code_words(&words)
            .into_iter()
            .map(|c| (words[c.index].to_owned(), c.how))
            .collect()
    }

    fn fetch(words: &[&str]) -> Vec<String> {
        fetched(words).into_iter().map(|f| f.text).collect()
    }

    /// The packages pinned at an exact version whose dependencies still float.
    fn loose(words: &[&str]) -> Vec<String> {
        fetched(words)
            .into_iter()
            .filter(|f| matches!(f.how, FetchHow::Dependencies(_)))
            .map(|f| f.text)
            .collect()
    }

    #[test]
    fn the_program_the_script_and_code_on_the_command_line_are_code() {
        assert_eq!(
            code("jq -r .x report.json"),
            [("jq".into(), CodeHow::Program)]
        );
        assert_eq!(
            code("sh -eu -o pipefail deploy.sh report.json"),
            [
                ("sh".into(), CodeHow::Program),
                ("deploy.sh".into(), CodeHow::Script("sh".into()))
            ]
        );
        assert_eq!(
            code("bash -c X"),
            [
                ("bash".into(), CodeHow::Program),
                ("X".into(), CodeHow::Inline("bash".into()))
            ]
        );
        assert_eq!(
            code("python3 -I -m ci.upload"),
            [
                ("python3".into(), CodeHow::Program),
                ("ci.upload".into(), CodeHow::Script("python3".into()))
            ]
        );
        assert_eq!(
            code("node --require ./hook.js app.js"),
            [
                ("node".into(), CodeHow::Program),
                ("./hook.js".into(), CodeHow::Script("node".into())),
                ("app.js".into(), CodeHow::Script("node".into()))
            ]
        );
        assert_eq!(
            code("deno run https://x/y.ts"),
            [
                ("deno".into(), CodeHow::Program),
                ("https://x/y.ts".into(), CodeHow::Script("deno".into()))
            ]
        );
    }

    #[test]
    fn a_shells_option_clusters_are_read_as_it_reads_them() {
        assert_eq!(
            code("bash -euo pipefail -c X"),
            [
                ("bash".into(), CodeHow::Program),
                ("X".into(), CodeHow::Inline("bash".into()))
            ]
        );
        assert_eq!(
            code("sh -ec X"),
            [
                ("sh".into(), CodeHow::Program),
                ("X".into(), CodeHow::Inline("sh".into()))
            ]
        );
        assert_eq!(
            code("busybox sh -c X"),
            [
                ("busybox".into(), CodeHow::Program),
                ("sh".into(), CodeHow::Program),
                ("X".into(), CodeHow::Inline("sh".into()))
            ]
        );
    }

    #[test]
    fn a_wrapper_hands_on_to_the_program_it_runs() {
        assert_eq!(
            code("env -i A=1 timeout -s KILL 60 nice -n 5 tool x"),
            [
                ("env".into(), CodeHow::Program),
                ("timeout".into(), CodeHow::Program),
                ("nice".into(), CodeHow::Program),
                ("tool".into(), CodeHow::Program)
            ]
        );
        assert_eq!(
            code("sudo -u ci sh run.sh"),
            [
                ("sudo".into(), CodeHow::Program),
                ("sh".into(), CodeHow::Program),
                ("run.sh".into(), CodeHow::Script("sh".into()))
            ]
        );
        // A word that starts with a reference stands where it stands.
        assert_eq!(
            code("timeout 60 "),
            [
                ("timeout".into(), CodeHow::Program),
                ("".into(), CodeHow::Program)
            ]
        );
    }

    #[test]
    fn a_package_runner_runs_its_package() {
        assert_eq!(
            code("npx --yes some-reporter@latest --flag"),
            [
                ("npx".into(), CodeHow::Program),
                (
                    "some-reporter@latest".into(),
                    CodeHow::Package("npx".into())
                )
            ]
        );
        assert_eq!(
            code("npm exec --package=@x/y@2 -- y"),
            [
                ("npm".into(), CodeHow::Program),
                (
                    "--package=@x/y@2".into(),
                    CodeHow::Package("npm exec".into())
                )
            ]
        );
        assert_eq!(
            code("docker run --rm -e TOKEN -v /a:/b alpine:3 sh"),
            [
                ("docker".into(), CodeHow::Program),
                ("alpine:3".into(), CodeHow::Package("docker run".into()))
            ]
        );
        assert_eq!(code("npm ci"), [("npm".into(), CodeHow::Program)]);
        assert_eq!(code("go build ./..."), [("go".into(), CodeHow::Program)]);
    }

    #[test]
    fn a_floating_package_is_fetched_and_an_exact_version_or_digest_is_not() {
        for floating in [
            &["npx", "some-reporter@latest"][..],
            &["npx", "--yes", "some-reporter"],
            &["npx", "@scope/tool@^2"],
            &["npx", "-p", "tool@next", "tool"],
            &["uvx", "ruff"],
            &["uvx", "--from", "ruff>=0.5", "ruff"],
            &["pipx", "run", "black"],
            &["pnpm", "dlx", "create-x"],
            &["yarn", "dlx", "tool@1"],
            &["bunx", "tool"],
            &["go", "run", "example.com/tool@latest"],
            &["docker", "run", "--rm", "ghcr.io/x/y:1.2.3"],
            &["nix", "run", "git+https://x.test/y"],
            &["npx", "git+https://x.test/acme/tool.git#main"],
            &["timeout", "60", "npx", "tool"],
        ] {
            assert_eq!(fetch(floating).len(), 1, "{floating:?}");
        }
        // The package is pinned, what it depends on is resolved by ranges when it runs.
        for top in [
            &["npx", "some-reporter@1.4.2"][..],
            &["npx", "@scope/tool@2.0.1-rc.1"],
            &["uvx", "ruff==0.5.1"],
            &["uvx", "ruff@0.5.1"],
            &["pipx", "run", "--spec", "black==24.1.0", "black"],
            &[
                "npx",
                "git+https://x.test/acme/tool.git#3f9c0d1e2a4b5c6d7e8f90a1b2c3d4e5f6a7b8c9",
            ],
        ] {
            assert_eq!(loose(top).len(), 1, "{top:?}");
            assert_eq!(fetch(top), loose(top), "{top:?}");
        }
        // Everything that runs is pinned (a module's go.sum, an image's digest), or local.
        for pinned in [
            &["go", "run", "example.com/tool@v1.2.3"][..],
            &["go", "run", "./cmd/tool"],
            &["docker", "run", "alpine@sha256:0123abcd"],
            &["npx", "./packages/tool"],
            &["npm", "ci"],
            &["jq", ".", "x@latest"],
        ] {
            assert_eq!(fetch(pinned), Vec::<String>::new(), "{pinned:?}");
        }
        assert_eq!(fetch(&["deno", "run", "https://x.test/y.ts"]).len(), 1);
    }

    #[test]
    fn an_installer_runs_what_it_installs_and_an_option_may_pin_it() {
        for floating in [
            &["pip", "install", "requests"][..],
            &[
                "pip3",
                "install",
                "--upgrade",
                "-i",
                "https://x.test/simple",
                "tool>=1",
            ],
            &["python3", "-m", "pip", "install", "tool"],
            &["npm", "install", "-g", "some-cli"],
            &["pnpm", "add", "tool@^1"],
            &["go", "install", "example.com/tool@latest"],
            &["cargo", "install", "ripgrep"],
            &[
                "cargo",
                "install",
                "--git",
                "https://x.test/r",
                "--branch",
                "main",
            ],
            &["gem", "install", "rubocop"],
            &["docker", "build", "https://x.test/r.git#main"],
            &["pip", "install", "git+https://x.test/r@main"],
        ] {
            assert_eq!(fetch(floating).len(), 1, "{floating:?}");
        }
        let commit = "3f9c0d1e2a4b5c6d7e8f90a1b2c3d4e5f6a7b8c9";
        let at = |prefix: &str| format!("{prefix}{commit}");
        let git = at("git+https://x.test/r@");
        let context = at("https://x.test/r.git#");
        // The package is pinned, what it depends on is not: nothing locks it.
        for top in [
            vec!["pip", "install", "requests==2.31.0"],
            vec!["npm", "install", "tool@1.2.3"],
            vec!["cargo", "install", "ripgrep@14.1.0"],
            vec!["cargo", "install", "ripgrep", "--version", "=14.1.0"],
            vec!["gem", "install", "rubocop", "-v", "1.60.2"],
            vec![
                "cargo",
                "install",
                "--git",
                "https://x.test/r",
                "--rev",
                commit,
            ],
            vec!["pip", "install", git.as_str()],
        ] {
            assert_eq!(loose(&top).len(), 1, "{top:?}");
            assert_eq!(fetch(&top), loose(&top), "{top:?}");
        }
        for pinned in [
            vec!["pip", "install", "-r", "requirements.txt"],
            vec!["pip", "install", "-e", "."],
            vec!["python", "-m", "pip", "install", "."],
            vec!["npm", "install"],
            vec!["cargo", "install", "--path", "."],
            vec!["docker", "build", "-t", "x", "."],
            vec!["docker", "build", context.as_str()],
            // A lockfile, or no dependency installed at all.
            vec!["cargo", "install", "ripgrep@14.1.0", "--locked"],
            vec![
                "cargo",
                "install",
                "ripgrep",
                "--version",
                "14.1.0",
                "--locked",
            ],
            vec![
                "cargo",
                "install",
                "--locked",
                "--git",
                "https://x.test/r",
                "--rev",
                commit,
            ],
            vec!["pip", "install", "--no-deps", "requests==2.31.0"],
            vec![
                "gem",
                "install",
                "rubocop",
                "-v",
                "1.60.2",
                "--ignore-dependencies",
            ],
        ] {
            assert_eq!(fetch(&pinned), Vec::<String>::new(), "{pinned:?}");
        }
    }

    #[test]
    fn a_program_outside_the_systems_folders_is_code_the_file_does_not_show() {
        let how = |words: &[&str]| -> Vec<FetchHow> {
            fetched(words).into_iter().map(|f| f.how).collect()
        };
        for shared in [
            &["/tmp/tools/fossa"][..],
            &["sh", "/var/tmp/x.sh"],
            &["/dev/shm/x"],
        ] {
            assert_eq!(how(shared), [FetchHow::SharedFolder], "{shared:?}");
        }
        for unknown in [
            &["/home/runner/.cache/acme-tools/bin/fossa", "analyze"][..],
            &["/root/.local/bin/tool"],
            &["/__w/_tool/x/bin/x"],
            &["python3", "/srv/ci/scripts/x.py"],
            &["sh", "-c", "~/.cache/tools/fossa analyze"],
            &["sh", "-c", "set -e; $HOME/bin/tool --x"],
        ] {
            assert_eq!(how(unknown), [FetchHow::UnknownFolder], "{unknown:?}");
        }
        for system in [
            &["/usr/bin/jq", "."][..],
            &["/opt/acme-tools/fossa-3.9.4/bin/fossa"],
            &["/nix/store/abc-tool/bin/tool"],
            &["sh", "/dev/stdin"],
            &["{work}/bin/tool"],
            &["./scripts/x.sh"],
            &["jq"],
        ] {
            assert_eq!(how(system), Vec::<FetchHow>::new(), "{system:?}");
        }
    }

    #[test]
    fn a_shells_commands_are_judged_as_command_lines() {
        let locked = "cargo install tool --version =3.2.1 --locked --root t && t/bin/tool";
        let unlocked = "cargo install tool --version =3.2.1 --root t && t/bin/tool";
        assert_eq!(fetch(&["sh", "-c", locked]), Vec::<String>::new());
        assert_eq!(loose(&["sh", "-c", unlocked]), ["tool"]);
        assert_eq!(
            fetch(&["bash", "-c", "set -e; npx --yes tool@latest --out r.json"]),
            ["tool@latest"]
        );
        let change = format!("cargo install --git https://x.test/r --rev {CHANGE_COMMIT}");
        assert!(
            fetched(&["sh", "-c", change.as_str()])
                .iter()
                .any(|f| matches!(f.how, FetchHow::Change(_)))
        );
        // Python's code is no shell's.
        assert_eq!(
            fetch(&["python3", "-c", "import os; os.system('true')"]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_downloaded_file_run_as_code_is_fetched() {
        for code in [
            "gh run download \"$id\" --name bench --dir bench && python3 bench/compare.py --upload",
            "gh run download 42 -n tools && ./tools/run.sh",
            "curl -fsSL -o install.sh https://x.test/i.sh && sh install.sh",
            "gh release download v1 --dir dl && pip install dl/tool.whl",
        ] {
            assert_eq!(fetch(&["sh", "-c", code]).len(), 1, "{code}");
        }
        for code in [
            "gh run download \"$id\" --name bench --dir bench && bench-compare --results bench/results.json",
            "curl -fsSL -o data.json https://x.test/d && jq . data.json",
            "gh run download 42 -n report && cat report/summary.md",
        ] {
            assert_eq!(fetch(&["sh", "-c", code]), Vec::<String>::new(), "{code}");
        }
    }

    #[test]
    fn code_at_the_changes_commit_is_the_changes() {
        let change = |prefix: &str| format!("{prefix}{CHANGE_COMMIT}");
        let npx = change("git+https://x.test/acme/tool.git#");
        let pip = change("git+https://x.test/r@");
        let script = format!(
            "git fetch origin {CHANGE_COMMIT} && git checkout {CHANGE_COMMIT} && make test"
        );
        let worktree = format!("git worktree add ../pr {CHANGE_COMMIT}; cd ../pr; ./ci.sh");
        for line in [
            vec!["npx", npx.as_str()],
            vec!["pip", "install", pip.as_str()],
            vec![
                "cargo",
                "install",
                "--git",
                "https://x.test/r",
                "--rev",
                CHANGE_COMMIT,
            ],
            vec!["sh", "-c", script.as_str()],
            vec!["bash", "-euo", "pipefail", "-c", worktree.as_str()],
        ] {
            let found = fetched(&line);
            assert_eq!(found.len(), 1, "{line:?}");
            assert!(matches!(found[0].how, FetchHow::Change(_)), "{line:?}");
            assert!(
                found[0].describe().contains("<the change's commit>"),
                "{line:?}"
            );
        }
        // Naming the commit is not running its code; nor is another commit's tree the change's.
        let diff = format!("git diff {OTHER_COMMIT} {CHANGE_COMMIT} | wc -l");
        let base = format!("git checkout {OTHER_COMMIT} && make lint");
        let base_npx = format!("git+https://x.test/acme/tool.git#{OTHER_COMMIT}");
        let clone_base = format!(
            "git clone https://x.test/r src && cd src && git checkout {OTHER_COMMIT} && make"
        );
        for line in [
            vec!["git", "log", CHANGE_COMMIT],
            vec!["npx", "some-reporter@1.4.2", "--sha", CHANGE_COMMIT],
            vec!["sh", "-c", clone_base.as_str()],
            vec!["sh", "-c", diff.as_str()],
            vec!["npx", base_npx.as_str()],
        ] {
            // At most a pinned package whose dependencies float, never the change's code.
            assert_eq!(fetch(&line), loose(&line), "{line:?}");
        }
        let base_run = fetched(&["sh", "-c", base.as_str()]);
        assert!(
            base_run
                .iter()
                .all(|f| !matches!(f.how, FetchHow::Change(_)))
        );
    }

    #[test]
    fn code_that_pipes_a_download_into_an_interpreter_is_fetched() {
        for code in [
            "curl -fsSL https://x.test/install.sh | sh",
            "set -e; curl -s https://x.test/i | sudo bash -s -- --yes",
            "wget -qO- https://x.test/i.py | python3",
            "bash <(curl -s https://x.test/i)",
            "eval \"$(curl -s https://x.test/env)\"",
            ". <(wget -qO- https://x.test/i)",
        ] {
            assert_eq!(fetch(&["sh", "-c", code]).len(), 1, "{code}");
        }
        for code in [
            "git clone -q https://x.test/r.git src && cd src && git fetch origin pull/7/head && git checkout FETCH_HEAD && npm ci",
            "gh pr checkout 7; make test",
        ] {
            assert_eq!(fetch(&["sh", "-c", code]).len(), 1, "{code}");
        }
        for code in [
            "git fetch origin main && git diff --stat origin/main",
            "curl -fsSL https://x.test/report -o report.json",
            "curl -s https://x.test/a | jq .b",
            "curl -s https://x.test/i | sh ./local.sh",
            "diff <(curl -s https://a.test) <(curl -s https://b.test)",
            "echo hi | sh",
        ] {
            assert_eq!(fetch(&["sh", "-c", code]), Vec::<String>::new(), "{code}");
        }
    }
}
