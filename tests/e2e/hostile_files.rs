//! A generated set of hostile pipeline files (deep nesting of every kind, huge lines, huge
//! counts, binary, invalid UTF-8, byte order marks, long names, control characters), each run
//! through every command and output format. A review.kdl can come from a pull request, so every
//! one must end with exit 1 or 2, without a panic, with bounded output and bounded memory.
//!
//! `cargo test --release --test e2e hostile_files_table -- --ignored --nocapture` prints the
//! time and peak memory of each file under each format (docs/performance.md, "Hostile files").

use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Peak resident memory a child may reach on any hostile file.
const MAX_RSS_KB: i64 = 200 * 1024;
/// Largest stderr a hostile file may produce.
const MAX_STDERR: usize = 1 << 20;
/// Largest stdout: the machine formats list every finding, but files are bounded (8 MiB).
const MAX_STDOUT: usize = 64 << 20;

/// Every hostile file: a name and its bytes.
pub fn hostile_files() -> Vec<(&'static str, Vec<u8>)> {
    let head = "pipeline \"x\"\n";
    let text = |s: String| s.into_bytes();
    let names = |n: usize| -> String { (0..n).map(|i| format!(" \"n{i}\"")).collect() };
    let mut binary = Vec::with_capacity(1 << 20);
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..(1 << 20) {
        // xorshift: deterministic noise.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        binary.push((state >> 24) as u8);
    }
    let cycle: String = (0..8_000)
        .map(|i| {
            format!(
                "stage \"s{i}\" uses=\"run\" {{\n  needs \"s{}\"\n  command \"true\"\n}}\n",
                (i + 1) % 8_000
            )
        })
        .collect();
    let many_stages: String = (0..20_000)
        .map(|i| format!("stage \"s{i}\" uses=\"run\" {{\n  command \"true\"\n}}\n"))
        .collect();
    vec![
        // Nesting of every kind.
        (
            "comments-open",
            text(format!("{head}{}", "/*".repeat(3_800))),
        ),
        (
            "comments-closed",
            text(format!(
                "{head}{}{}",
                "/*".repeat(100_000),
                "*/".repeat(100_000)
            )),
        ),
        (
            "children",
            text(format!(
                "{head}{}{}",
                "a {".repeat(100_000),
                "}".repeat(100_000)
            )),
        ),
        (
            "children-open",
            text(format!("{head}{}", "a {".repeat(100_000))),
        ),
        (
            "closing-braces",
            text(format!("{head}{}", "}\n".repeat(100_000))),
        ),
        (
            "slashdash-children",
            text(format!("{head}{}{}", "a /-{ ".repeat(50), "}".repeat(50))),
        ),
        (
            "slashdash-nodes",
            text(format!("{head}{}a\n", "/- ".repeat(100_000))),
        ),
        (
            "type-annotations",
            text(format!("{head}a {}1\n", "(t)".repeat(100_000))),
        ),
        (
            "line-continuations",
            text(format!("{head}a {}1\n", "\\\n".repeat(100_000))),
        ),
        ("quotes", text(format!("{head}{}", "\"".repeat(100_000)))),
        (
            "raw-hashes",
            text(format!("{head}a {}\"x\"\n", "#".repeat(100_000))),
        ),
        // Huge lines.
        (
            "column-65536",
            text(format!("pipeline \"x\"{}a=1\n", " ".repeat(65_536))),
        ),
        (
            "line-1mb-props",
            text(format!("{head}a{}\n", " p=1".repeat(250_000))),
        ),
        (
            "line-1mb-args",
            text(format!(
                "{head}stage \"a\" uses=\"run\" {{\n  command{}\n}}\n",
                " 1".repeat(500_000)
            )),
        ),
        // Huge counts.
        (
            "bogus-40k",
            text(format!("{head}{}", "bogus 1\n".repeat(40_000))),
        ),
        (
            "needs-8k",
            text(format!(
                "{head}stage \"a\" uses=\"run\" {{\n  needs{}\n  command \"true\"\n}}\n",
                names(8_000)
            )),
        ),
        (
            "needs-16k",
            text(format!(
                "{head}stage \"a\" uses=\"run\" {{\n  needs{}\n  command \"true\"\n}}\n",
                names(16_000)
            )),
        ),
        ("cycle-8k", text(format!("{head}{cycle}"))),
        (
            "stages-20k",
            text(format!("{head}{many_stages}stage \"bad\" uses=\"nope\"\n")),
        ),
        // Binary and encodings.
        ("binary", binary),
        ("nul-bytes", vec![0u8; 1 << 20]),
        (
            "invalid-utf8",
            [head.as_bytes(), &[0xff, 0xfe, 0xc0, 0x80].repeat(100_000)].concat(),
        ),
        (
            "bom-utf8",
            [
                &[0xef, 0xbb, 0xbf][..],
                format!("{head}bogus 1\n").as_bytes(),
            ]
            .concat(),
        ),
        (
            "bom-twice",
            [
                &[0xef, 0xbb, 0xbf][..],
                &[0xef, 0xbb, 0xbf],
                head.as_bytes(),
            ]
            .concat(),
        ),
        (
            "bom-utf16",
            [
                &[0xff, 0xfe][..],
                &"pipeline \"x\"\n"
                    .encode_utf16()
                    .flat_map(u16::to_le_bytes)
                    .collect::<Vec<u8>>(),
            ]
            .concat(),
        ),
        // Long names.
        (
            "long-stage-name",
            text(format!(
                "{head}stage \"{}\" uses=\"nope\"\n",
                "s".repeat(250_000)
            )),
        ),
        (
            "long-node-name",
            text(format!("{head}{} 1\n", "n".repeat(1_000_000))),
        ),
        (
            "long-kind",
            text(format!(
                "{head}stage \"a\" uses=\"{}\"\n",
                "k".repeat(250_000)
            )),
        ),
        // Word lists at the longest string: one finding each, read in linear time.
        (
            "trigger-types",
            text(format!(
                "{head}trigger \"pull_request\" types=\"{}\"\n",
                (0..30_000).map(|i| format!("t{i} ")).collect::<String>()
            )),
        ),
        (
            "trigger-branches",
            text(format!(
                "{head}trigger \"pull_request\" branches=\"{}\"\n",
                (0..30_000).map(|i| format!("!b{i} ")).collect::<String>()
            )),
        ),
        // Control characters, raw and escaped.
        (
            "control-raw",
            text(format!(
                "{head}stage \"a\" uses=\"\u{1b}]0;pwned\u{7}\u{1b}[2J\"\n"
            )),
        ),
        (
            "control-escaped",
            text(format!(
                "{head}stage \"a\" uses=\"\\u{{1b}}]0;pwned\\u{{7}}\\u{{1b}}[2J\"\n"
            )),
        ),
        (
            "control-name",
            text(format!(
                "{head}stage \"a\\u{{1b}}[2J\" uses=\"run\" {{\n  needs \"\\u{{1b}}[2J\"\n  command \"true\"\n}}\n"
            )),
        ),
    ]
}

/// One invocation of the binary: how it ended and what it cost.
pub struct Measured {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout_len: usize,
    pub stderr_len: usize,
    /// The first [`MAX_STDERR`] bytes of stderr.
    pub stderr: Vec<u8>,
    pub max_rss_kb: i64,
    pub wall: Duration,
}

/// The commands every file goes through, as arguments after the binary (`{}` is the file).
pub fn invocations() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        ("check human", vec!["check", "{}"]),
        ("check color", vec!["check", "--color", "always", "{}"]),
        ("check json", vec!["check", "--format", "json", "{}"]),
        ("check sarif", vec!["check", "--format", "sarif", "{}"]),
        ("check github", vec!["check", "--format", "github", "{}"]),
        ("graph text", vec!["graph", "--format", "text", "{}"]),
        ("graph dot", vec!["graph", "--format", "dot", "{}"]),
        ("graph mermaid", vec!["graph", "--format", "mermaid", "{}"]),
        (
            "run",
            vec![
                "run",
                "{}",
                "--checkout",
                "{dir}",
                "--run-dir",
                "{dir}/runs",
            ],
        ),
        // The workflow names the pipeline by its path from the top: given relative to `{dir}`.
        ("export github", vec!["export", "github", "{rel}"]),
    ]
}

/// What is not a regular file, where a pipeline is named: each must be refused at once (a FIFO
/// is never waited on, a device never read), with exit 2, in every command.
pub fn special_files(dir: &Path) -> Vec<(&'static str, std::path::PathBuf)> {
    let fifo = dir.join("fifo.kdl");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    let link = |name: &str, to: &Path| {
        let path = dir.join(name);
        std::os::unix::fs::symlink(to, &path).expect("symlink");
        path
    };
    vec![
        ("fifo", fifo),
        ("link-to-dev-zero", link("zero.kdl", Path::new("/dev/zero"))),
        ("link-loop", link("loop.kdl", &dir.join("loop.kdl"))),
        (
            "link-dangling",
            link("dangling.kdl", &dir.join("missing.kdl")),
        ),
        // Named outside the working folder, the folders are taken as named; the file is not
        // regular.
        ("dev-zero", std::path::PathBuf::from("/dev/zero")),
        ("folder", {
            std::fs::create_dir(dir.join("folder.kdl")).expect("folder");
            dir.join("folder.kdl")
        }),
    ]
}

/// Reads a pipe to its end, keeping at most `keep` bytes and counting the rest.
fn drain(mut pipe: impl std::io::Read, keep: usize) -> (Vec<u8>, usize) {
    let mut kept = Vec::new();
    let mut total = 0;
    let mut buf = [0u8; 64 << 10];
    while let Ok(n) = pipe.read(&mut buf) {
        if n == 0 {
            break;
        }
        let room = keep.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
        total += n;
    }
    (kept, total)
}

/// Starts the binary for [`measure`]: a small Python process forks it, waits for it with
/// `wait4` and writes its peak memory to the file named first. Spawned straight from the test,
/// the binary's peak would start at the test process's own: the kernel carries the peak across
/// `exec` from the image it replaces, and a vfork-style spawn replaces the parent's, so every
/// figure would be at least what any other test of this process once used. The exit status (or
/// the signal) is passed on.
const SPAWN: &str = r#"
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
if os.WIFSIGNALED(status):
    os.kill(os.getpid(), os.WTERMSIG(status))
os._exit(os.WEXITSTATUS(status))
"#;

/// Runs the binary with `args` in `dir` and measures its peak memory (`wait4`, see [`SPAWN`]).
// The child is reaped by `wait4`, which `Child::wait` would not let us call with a `rusage`.
#[allow(clippy::zombie_processes)]
pub fn measure(dir: &Path, file: &Path, args: &[&str]) -> Measured {
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            let rel = file.strip_prefix(dir).unwrap_or(file);
            a.replace("{}", &file.to_string_lossy())
                .replace("{dir}", &dir.to_string_lossy())
                .replace("{rel}", &rel.to_string_lossy())
        })
        .collect();
    let started = Instant::now();
    let report = tempfile::NamedTempFile::new_in(dir).expect("a report file");
    let mut child = Command::new("/usr/bin/python3")
        .args(["-c", SPAWN])
        .arg(report.path())
        .arg(env!("CARGO_BIN_EXE_reviewflow"))
        .args(&args)
        .current_dir(dir)
        // Its own process group, so that the watchdog ends the binary with it.
        .process_group(0)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let pid = child.id() as libc::pid_t;
    let out = child.stdout.take().expect("stdout");
    let err = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || drain(out, 0));
    let err = std::thread::spawn(move || drain(err, MAX_STDERR));
    // A hang must not hang the test run: far past any reasonable time, the child is killed
    // (and then fails the exit code assertion).
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(300);
            while Instant::now() < until {
                if done.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            // SAFETY: kill(2) on the child's process group; the child has not been reaped (only
            // wait4 below does), so its group id is still its own.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        })
    };
    let mut status: libc::c_int = 0;
    // SAFETY: zeroed rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child's pid, with valid out-pointers.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = watchdog.join();
    assert_eq!(reaped, pid, "wait4");
    let (_, stdout_len) = out.join().expect("stdout reader");
    let (stderr, stderr_len) = err.join().expect("stderr reader");
    let status = std::process::ExitStatus::from_raw(status);
    Measured {
        code: status.code(),
        signal: status.signal(),
        stdout_len,
        stderr_len,
        stderr,
        // Python's own peak when the binary's was not written (it was killed with it).
        max_rss_kb: std::fs::read_to_string(report.path())
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(usage.ru_maxrss),
        wall,
    }
}

/// (file, invocation) pairs known to go past the memory bound (exit codes, panics, stderr and
/// control characters would still be checked for them). None: the pre-scan's token bound
/// refuses the files of a hundred thousand braces, strings, annotations, arguments or lines,
/// and SARIF keeps each result as text, not as a value.
const KNOWN_OVER: &[(&str, &str)] = &[];

/// What every hostile file must satisfy under every invocation.
fn problems(name: &str, how: &str, m: &Measured) -> Vec<String> {
    let mut out = Vec::new();
    let at = format!("{name} / {how}");
    if !matches!(m.code, Some(1 | 2)) {
        out.push(format!(
            "{at}: exit {:?} (signal {:?}), stderr starts {:?}",
            m.code,
            m.signal,
            String::from_utf8_lossy(&m.stderr[..m.stderr.len().min(400)])
        ));
    }
    let stderr = String::from_utf8_lossy(&m.stderr);
    if stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE") {
        out.push(format!("{at}: panic: {stderr:.400}"));
    }
    if m.stderr_len > MAX_STDERR {
        out.push(format!("{at}: {} bytes on stderr", m.stderr_len));
    }
    let bounded = !KNOWN_OVER.contains(&(name, how));
    if bounded && m.stdout_len > MAX_STDOUT {
        out.push(format!("{at}: {} bytes on stdout", m.stdout_len));
    }
    if bounded && m.max_rss_kb > MAX_RSS_KB {
        out.push(format!("{at}: peak RSS {} KB", m.max_rss_kb));
    }
    // Human output: no control character but newline (and, in colour, the SGR sequences).
    let colour = how == "check color";
    for (i, &b) in m.stderr.iter().enumerate() {
        let sgr = colour && b == 0x1b && m.stderr.get(i + 1) == Some(&b'[') && {
            let rest = &m.stderr[i + 2..];
            let end = rest
                .iter()
                .position(|c| !(c.is_ascii_digit() || *c == b';'));
            end.is_some_and(|e| rest[e] == b'm')
        };
        if sgr {
            continue;
        }
        if (b < 0x20 && b != b'\n') || b == 0x7f {
            out.push(format!(
                "{at}: raw control byte {b:#04x} at {i} of stderr: {:?}",
                String::from_utf8_lossy(
                    &m.stderr[i.saturating_sub(80)..(i + 40).min(m.stderr.len())]
                )
            ));
            break;
        }
    }
    out
}

fn write_set(dir: &Path) -> Vec<(&'static str, std::path::PathBuf)> {
    hostile_files()
        .into_iter()
        .map(|(name, bytes)| {
            let path = dir.join(format!("{name}.kdl"));
            std::fs::write(&path, bytes).expect("write a hostile file");
            (name, path)
        })
        .collect()
}

#[test]
fn every_hostile_file_ends_cleanly_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = write_set(dir.path());
    let jobs: Vec<(&str, &std::path::PathBuf, &str, Vec<&str>)> = files
        .iter()
        .flat_map(|(name, path)| {
            invocations()
                .into_iter()
                .map(move |(how, args)| (*name, path, how, args))
        })
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let found: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut found = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((name, path, how, args)) = jobs.get(i) else {
                            break found;
                        };
                        let m = measure(dir.path(), path, args);
                        found.extend(problems(name, how, &m));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("worker"))
            .collect()
    });
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A FIFO, a device, a link (to `/dev/zero`, to itself, to nothing) or a folder named as the
/// pipeline: exit 2 in every command and format, at once, saying why. Before the reader, a FIFO
/// blocked every command forever and `/dev/zero` was read until memory ran out.
#[test]
fn a_pipeline_that_is_not_a_regular_file_is_refused_in_every_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut found = Vec::new();
    for (name, path) in special_files(dir.path()) {
        for (how, args) in invocations() {
            let m = measure(dir.path(), &path, &args);
            found.extend(problems(name, how, &m));
            let stderr = String::from_utf8_lossy(&m.stderr);
            let why = [
                "symbolic link",
                "not a regular file",
                "relative to the repository",
                "no `.kdl` file",
            ];
            if m.code != Some(2) || !why.iter().any(|w| stderr.contains(w)) {
                found.push(format!("{name} / {how}: exit {:?}: {stderr:.400}", m.code));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The table of docs/performance.md: the slowest format and the largest peak memory per file.
#[test]
#[ignore = "prints a table; run with --release --ignored --nocapture"]
fn hostile_files_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = write_set(dir.path());
    println!("| file | bytes | slowest | time | largest RSS | RSS | exits |");
    println!("|---|---:|---|---:|---|---:|---|");
    let (mut worst_time, mut worst_rss) = ((String::new(), Duration::ZERO), (String::new(), 0));
    for (name, path) in &files {
        let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
        let mut slowest = ("", Duration::ZERO);
        let mut largest = ("", 0i64);
        let mut exits = Vec::new();
        for (how, args) in invocations() {
            let m = measure(dir.path(), path, &args);
            if m.wall >= slowest.1 {
                slowest = (how, m.wall);
            }
            if m.max_rss_kb >= largest.1 {
                largest = (how, m.max_rss_kb);
            }
            let exit = m.code.map_or_else(
                || format!("sig{}", m.signal.unwrap_or(0)),
                |c| c.to_string(),
            );
            if !exits.contains(&exit) {
                exits.push(exit);
            }
        }
        println!(
            "| {name} | {bytes} | {} | {:.2} s | {} | {} MB | {} |",
            slowest.0,
            slowest.1.as_secs_f64(),
            largest.0,
            largest.1 / 1024,
            exits.join(", ")
        );
        if slowest.1 > worst_time.1 {
            worst_time = (format!("{name} / {}", slowest.0), slowest.1);
        }
        if largest.1 > worst_rss.1 {
            worst_rss = (format!("{name} / {}", largest.0), largest.1);
        }
    }
    println!(
        "\nslowest: {} {:.2} s; largest RSS: {} {} MB",
        worst_time.0,
        worst_time.1.as_secs_f64(),
        worst_rss.0,
        worst_rss.1 / 1024
    );
}

#[test]
fn the_measure_is_the_binarys_not_the_test_processs() {
    // This process touches 300 MB first: a binary spawned straight from it would report at
    // least that much.
    let ballast: Vec<u8> = vec![1; 300 << 20];
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("p.kdl");
    std::fs::write(&file, "pipeline \"p\"\n").expect("write");
    let m = measure(dir.path(), &file, &["check", "{}"]);
    assert_eq!(m.code, Some(0), "{}", String::from_utf8_lossy(&m.stderr));
    assert!(
        m.max_rss_kb < 100 * 1024,
        "peak {} KB with {} MB of ballast",
        m.max_rss_kb,
        std::hint::black_box(&ballast).len() >> 20
    );
}
