//! `reviewflow run`.

use std::io::IsTerminal as _;

use reviewflow_engine::duration::parse_duration_ms;
use reviewflow_engine::exec::confine::Layer;
use reviewflow_engine::finding::Severity;
use reviewflow_engine::report;
use reviewflow_engine::run::{
    ConsoleMode, EXIT_UNUSABLE, RunError, RunOptions, execute_with_signals,
};
use reviewflow_engine::{CheckOptions, run_checks};

use crate::cli::RunArgs;
use crate::fail_on;
use crate::isolation::Isolation;
use crate::output::{Loaded, err, errln, load, print_stderr, style};

pub fn run(args: RunArgs, mut isolation: Isolation) -> u8 {
    // As early as possible: the secrets are still in this process's environment block until the
    // re-exec below.
    isolation.protect();
    let registry = reviewflow_stdlib::registry();
    let style = style(args.color.color);
    let rule = fail_on::Rule {
        fail_on: args.fail_on,
        new_only: args.fail_on_new,
    };
    let compiled = match load(&args.file, &registry) {
        Ok(c) => c,
        Err(Loaded::Unreadable(message)) => {
            errln!("error: {message}");
            return EXIT_UNUSABLE;
        }
        Err(Loaded::Unusable(u)) => {
            print_stderr(&report::render_human(&u.source, &u.findings, style));
            errln!("{}: unusable input", u.source.name());
            return EXIT_UNUSABLE;
        }
    };
    let findings = run_checks(&compiled, &registry, CheckOptions::default());
    let live_error = findings
        .iter()
        .any(|f| f.suppressed.is_none() && f.severity == Severity::Error);
    if live_error {
        print_stderr(&report::render_human(&compiled.source, &findings, style));
        errln!(
            "{}: {}; not running a pipeline that fails check",
            compiled.source.name(),
            report::summary_line(&findings)
        );
        return EXIT_UNUSABLE;
    }

    let grace = match parse_duration_ms(&args.grace) {
        Some(ms) => std::time::Duration::from_millis(ms),
        None => {
            errln!(
                "error: --grace {:?} is not a duration such as \"10s\" or \"500ms\"",
                args.grace
            );
            return EXIT_UNUSABLE;
        }
    };
    let checkout = match args.checkout.clone().map_or_else(std::env::current_dir, Ok) {
        Ok(c) => c,
        Err(e) => {
            errln!("error: cannot find the current folder: {e}");
            return EXIT_UNUSABLE;
        }
    };
    if !checkout.is_dir() {
        errln!("error: the checkout {} is not a folder", checkout.display());
        return EXIT_UNUSABLE;
    }
    // Re-exec without the secret variables (when set), not dumpable, the watchdog forked: all
    // before the runtime starts a thread.
    isolation.before_runtime(&compiled.pipeline);
    // `.reviewflow/` lives at the work tree's top level whichever subfolder the run starts from.
    // After the fork above: asking git uses threads.
    let checkout = match reviewflow_stdlib::git::top_level(&checkout) {
        Ok(Some(top)) => top,
        Ok(None) | Err(reviewflow_stdlib::git::GitError::Spawn { .. }) => checkout,
        Err(e) => {
            errln!("error: cannot find the top level of the checkout: {e}");
            return EXIT_UNUSABLE;
        }
    };
    // Every variable goes through this: after the re-exec the secrets are no longer in the
    // process environment.
    let lookup = isolation.env_lookup();
    // The platform the run happens on, if any (docs/platforms.md): its console, its summary.
    let var = |name: &str| lookup(name).and_then(|v| v.into_string().ok());
    let platform = registry.detect_platform(&var);
    let mut options = RunOptions::new(checkout);
    options.env = lookup.clone();
    options.private_mounts = isolation.private_mounts;
    options.process_layers = isolation
        .process_layers()
        .into_iter()
        .map(|(name, held, detail)| Layer { name, held, detail })
        .collect();
    if let Some(jobs) = args.jobs {
        options.jobs = jobs;
    }
    options.grace = grace;
    if let Some(dir) = args.run_dir.clone() {
        options.runs_dir = dir;
    }
    options.resume = args.resume.clone();
    options.keep_runs = args.keep_runs;
    options.allow_model_change = args.allow_model_change;
    options.stages = args.stages.clone();
    options.force = args.force;
    options.exit_decided_after = rule.decides_exit();
    options.mode = if platform.is_some() { "ci" } else { "local" }.into();
    options.console = if platform.is_some() {
        ConsoleMode::Platform
    } else if std::io::stderr().is_terminal() {
        ConsoleMode::Live
    } else {
        ConsoleMode::Plain
    };
    if style == reviewflow_engine::report::Style::Color {
        options.console = options.console.with_color();
    }
    options.step_summary = platform.as_ref().and_then(|p| p.summary_file(&var));
    let temp_dir = platform.as_ref().and_then(|p| p.temp_dir(&var));
    // The next job of an exported workflow resumes this run: its id is a step output
    // (`steps.<id>.outputs.run-id`, docs/export.md).
    let step_output = platform.as_ref().and_then(|p| p.step_output(&var));
    options.platform = platform;

    let implementations = reviewflow_stdlib::implementations();
    // The std/* stages work on the forge's change, opened once, here: its SHAs are what the run
    // reviews, and they are part of the run's identity.
    let uses_std = compiled
        .pipeline
        .stages
        .iter()
        .any(|s| s.uses.value.starts_with("std/"));
    // The forge's client is built on the run's runtime: its background tasks live with it.
    let runtime = match reviewflow_engine::run::runtime() {
        Ok(r) => r,
        Err(e) => {
            errln!("error: {e}");
            return EXIT_UNUSABLE;
        }
    };
    let result = runtime.block_on(async {
        let mut forge = None;
        if uses_std {
            let env = |name: &str| lookup(name).and_then(|v| v.into_string().ok());
            let temp_dir = temp_dir.unwrap_or_else(|| options.runs_dir.clone());
            let prepared = reviewflow_stdlib::kinds::prepare(
                &compiled.pipeline,
                reviewflow_stdlib::kinds::PrepareOptions {
                    checkout: &options.checkout,
                    base: args.base.as_deref(),
                    head: args.head.as_deref(),
                    env: &env,
                    temp_dir,
                },
            )
            .await
            .map_err(Failed::Prepare)?;
            // Said by the run, once, as its other warnings are (styled, annotated on GitHub,
            // in the events log).
            options.warnings.extend(prepared.warnings);
            options.builtin_inputs = prepared.inputs;
            options.commits = prepared.commits;
            forge = Some(prepared.services.forge.clone());
            let mut extensions = reviewflow_engine::run::Extensions::new();
            extensions.insert(prepared.services);
            options.extensions = std::sync::Arc::new(extensions);
        }
        let report = execute_with_signals(&compiled, &registry, &implementations, options)
            .await
            .map_err(Failed::Run)?;
        let last = match forge {
            Some(forge) if report.manifest.stopped.is_some() => last_verdict(&*forge).await,
            _ => None,
        };
        Ok((report, last))
    });
    // Dropping a runtime waits for its blocking threads without end: one still stuck in a read
    // must not keep the process alive once the run is over.
    runtime.shutdown_timeout(reviewflow_engine::run::shutdown_grace(grace));
    let result = match result {
        Ok(r) => Ok(r),
        Err(Failed::Prepare(message)) => {
            errln!("error: {message}");
            return EXIT_UNUSABLE;
        }
        Err(Failed::Run(e)) => Err(e),
    };
    match result {
        Ok((report, last)) => {
            if let (Some(path), Some(id)) = (&step_output, report.run_dir.file_name()) {
                write_run_id(path, &id.to_string_lossy());
            }
            print_stderr(&not_run_lines(
                &report.manifest.stages,
                style == reviewflow_engine::report::Style::Color,
            ));
            let verdict = fail_on::judge(
                &compiled.pipeline,
                &report.manifest,
                &report.run_dir,
                last.as_ref(),
                rule,
                report.exit_code,
            );
            // The verdict comes last: its last line states the exit the process returns.
            errln!("run directory: {}", report.run_dir.display());
            err!("{}", verdict.lines);
            verdict.exit
        }
        Err(RunError::Check { findings }) => {
            print_stderr(&report::render_human(&compiled.source, &findings, style));
            EXIT_UNUSABLE
        }
        Err(e) => {
            errln!("error: {e}");
            EXIT_UNUSABLE
        }
    }
}

/// Appends `run-id=<id>` to the step's `GITHUB_OUTPUT` file. A run id holds only letters,
/// digits, `-`, `_` and `.`, so the plain `name=value` form cannot be broken by it. A failure is
/// said, not fatal: the run itself is done.
fn write_run_id(path: &std::path::Path, id: &str) {
    use std::io::Write as _;
    let written = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .and_then(|mut f| f.write_all(format!("run-id={id}\n").as_bytes()));
    if let Err(e) = written {
        errln!(
            "warning: cannot write the run id to $GITHUB_OUTPUT ({}): {e}",
            path.display()
        );
    }
}

/// The review the forge shows as last posted, read again once a stage stopped the run: a run
/// stopped because its head was already reviewed is judged by that review's verdict. On GitHub
/// the marker as first read (no request); locally `posted.json` again. An error is no verdict.
async fn last_verdict(forge: &dyn reviewflow_stdlib::kinds::Forge) -> Option<fail_on::LastPosted> {
    let posted = forge.last_posted().await.ok()??;
    // A marker with no head keeps only a total: no review was posted, so there is no verdict.
    Some(fail_on::LastPosted {
        head: posted.head?.to_string(),
        run: posted.run,
        published: posted.published,
    })
}

/// Why a run did not get to report.
enum Failed {
    /// The forge or a store could not be opened.
    Prepare(String),
    Run(RunError),
}

/// The stages that never started (the run stopped, or a required secret was missing): the
/// console shows a line for every stage that ended, and these never do. One line each, in the
/// pipeline's order, after the run's end line: `· post: not run — stage `review` failed`.
/// Dim with `color`, like the console's lines of stages that did not run.
fn not_run_lines(stages: &[reviewflow_engine::run::StageRecord], color: bool) -> String {
    stages
        .iter()
        .filter(|s| s.outcome == reviewflow_engine::run::Outcome::NotRun)
        .map(|s| {
            // The name is the pipeline's, the reason may quote a child: escaped before the
            // colour is added.
            let line = report::terminal_text(&match &s.reason {
                Some(why) => format!("· {}: not run — {why}", s.name),
                None => format!("· {}: not run", s.name),
            });
            if color {
                format!("\x1b[2m{line}\x1b[0m\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect()
}
