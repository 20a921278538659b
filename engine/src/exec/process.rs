//! Runs one child process for a stage, on tokio, and always leaves nothing behind.
//!
//! The child starts with a cleared environment plus exactly what its [`ChildSpec`] declares, in
//! its own process group, with stdin null unless given (and closed once written). Its stdout and
//! stderr pass through the run's [`Redactor`] before anything else sees them, then are cut into
//! lines for the caller's callback; stdout can also be kept, redacted, up to a cap.
//!
//! Ending a child: on timeout or cancellation the whole group gets SIGTERM, then SIGKILL if the
//! leader has not exited within the grace period. Whenever the leader exits, for any reason, the
//! group gets SIGKILL so that no background grandchild outlives it (a stage is over when its
//! process is; this also releases the output pipes a grandchild would hold open). The leader is
//! always reaped before [`run`] returns. A process that leaves the group on purpose (`setsid`)
//! escapes this; inside a run, the engine is a subreaper and ends it when its stage ends
//! ([`confine::reaper`]).
//!
//! Confinement: between its start and its `execve` the child arms a parent-death signal, sets
//! no new privileges, drops every capability (as root) and restricts itself to its Landlock
//! ruleset ([`ChildSpec::confine`], or its stage's); see [`confine`]. It is started without
//! `fork` (`spawn`: `clone(CLONE_VM | CLONE_VFORK)`), so its cost does not grow with the
//! engine's memory. Inside a stage it also carries the stage's marker
//! ([`confine::STAGE_MARKER_VAR`]) and, with a work folder, `TMPDIR`.
//!
//! Cancellation is any future: pass `token.cancelled()`, `async { rx.changed().await.ok(); }`
//! for a `tokio::sync::watch`, or `std::future::pending()` for none. This keeps the module free
//! of a dependency on any one cancellation type.
//!
//! Secrets: the environment block handed to the operating system is zeroized once the child
//! has started, and so are the spec's own copies.

mod error;
mod group;
mod lines;
mod outcome;
mod spawn;
mod spec;

use std::future::Future;
use std::io;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::{Instant, MissedTickBehavior, interval, sleep_until};

pub use error::ProcessError;
pub use outcome::{ChildResult, Outcome, Stream};
pub use spec::{ChildSpec, DEFAULT_GRACE, DEFAULT_MAX_LINE, Stdin, minimal_path};

use crate::exec::confine::cgroup::ChildCgroup;
use crate::exec::confine::{self, reaper};
use crate::exec::redact::{RedactingStream, Redactor};
use group::ProcessGroup;
use lines::LineSplitter;

/// Why the supervisor ended the child early.
#[derive(Debug, Clone, Copy)]
enum Stop {
    TimedOut,
    Cancelled,
}

/// Runs `spec` to completion, redacting its output with `redactor` and handing each line (without
/// its `\n`) to `on_line`. Returns once the child is reaped; `cancel` resolving ends it early.
///
/// Needs a tokio runtime with I/O and time enabled (as `tokio::process` does). The future is
/// `Send` when `cancel` and `on_line` are; dropping it mid-run kills the whole group.
pub async fn run<C, F>(
    spec: ChildSpec,
    redactor: &Redactor,
    cancel: C,
    mut on_line: F,
) -> Result<ChildResult, ProcessError>
where
    C: Future<Output = ()>,
    F: FnMut(Stream, Vec<u8>),
{
    spec.validate()?;
    let supervise = |source| ProcessError::Supervise { source };
    let mut spec = spec;
    let stage = confine::current();
    let confine = spec.confine.take();
    // The program is looked for in the same hand-off as the rest of the preparation.
    let program = spec.program();
    let Some((mut prepared, program)) = confine::prepare(
        &mut spec.env,
        confine.as_ref(),
        program,
        &spec.cwd,
        stage.as_ref(),
        spec.grace,
    )
    .await
    .map_err(|source| ProcessError::Confine {
        program: spec.program_named().to_path_buf(),
        source,
    })?
    else {
        return Err(spec.not_found());
    };
    // A stage that takes its slot around its program waits for one here, prepared: its view
    // and ruleset were made while another stage's program ran (exec/slot.rs).
    let mut cancel = std::pin::pin!(cancel);
    let slot = match stage.as_ref().and_then(|s| s.program_slot().cloned()) {
        // Cancel first: a slot freed by the cancel itself (the stage that held it ended) must
        // not start this program, whichever of the two is seen ready first.
        Some(gate) => tokio::select! {
            biased;
            () = &mut cancel => return Ok(ChildResult::cancelled_before_start()),
            slot = gate.take() => slot,
        },
        None => None,
    };
    // Listen before spawning, so that an immediate exit is not missed.
    let mut sigchld = signal(SignalKind::child()).map_err(supervise)?;

    let started = Instant::now();
    let launch = spec.launch(&program, prepared.steps());
    let (child, _registered) = {
        // The reaper must never take a child between its start and its registration for an
        // orphan.
        let spawning = reaper::spawning();
        let child = spawn::spawn(launch).map_err(|source| ProcessError::Spawn {
            program: program.clone(),
            source,
        })?;
        let registered = spawning.register(child.pid.unsigned_abs());
        (child, registered)
    };
    // The descriptors of the ruleset and namespaces are no longer needed once the child has
    // exec'd; its mount namespace is kept until it has exited (`MountView`).
    let cgroup = prepared.take_cgroup();
    let view = prepared.take_view(child.pid);
    drop(prepared);
    if let Some(stage) = &stage {
        stage.mark_spawned();
    }
    let Some(mut group) = ProcessGroup::new(child.pid.unsigned_abs(), cgroup) else {
        return Err(supervise(io::Error::other("the spawned child has no pid")));
    };
    // Reaps the leader if this future is dropped before it could (after `group` killed it).
    let mut leader = Leader(Some(child.pid));

    let mut stdout = Pipe::new(Some(child.stdout), Stream::Stdout, redactor, &spec);
    let mut stderr = Pipe::new(Some(child.stderr), Stream::Stderr, redactor, &spec);
    let mut capture = spec.capture_stdout.map(Capture::new);
    let mut sink = |stream, line| on_line(stream, line);

    let mut stdin = std::pin::pin!(write_stdin(child.stdin, spec.stdin));
    let mut stdin_done = false;
    let mut timeout = std::pin::pin!(sleep_until(
        spec.timeout.map_or(started, |limit| started + limit)
    ));
    let mut kill = std::pin::pin!(sleep_until(started));
    let mut poll_exit = interval(std::time::Duration::from_secs(1));
    poll_exit.set_missed_tick_behavior(MissedTickBehavior::Delay);

    let mut stop: Option<Stop> = None;
    let mut kill_pending = false;
    let mut forced_kill = false;

    loop {
        let mut check_exit = false;
        tokio::select! {
            biased;
            read = stdout.read(), if stdout.is_open() => {
                stdout.handle(read, capture.as_mut(), &mut sink);
            }
            read = stderr.read(), if stderr.is_open() => {
                stderr.handle(read, None, &mut sink);
            }
            () = &mut stdin, if !stdin_done => stdin_done = true,
            _ = sigchld.recv() => check_exit = true,
            _ = poll_exit.tick() => check_exit = true,
            () = &mut timeout, if stop.is_none() && spec.timeout.is_some() => {
                stop = Some(Stop::TimedOut);
            }
            () = &mut cancel, if stop.is_none() => stop = Some(Stop::Cancelled),
            () = &mut kill, if kill_pending => {
                group.signal(rustix::process::Signal::KILL);
                kill_pending = false;
                forced_kill = true;
            }
        }
        if stop.is_some() && !kill_pending && !forced_kill {
            // First pass after a stop: ask nicely, once.
            group.signal(rustix::process::Signal::TERM);
            kill.as_mut().reset(Instant::now() + spec.grace);
            kill_pending = true;
        }
        if check_exit && group.leader_exited().map_err(supervise)? {
            break;
        }
    }

    // The leader is a zombie: its group id is still reserved, so stragglers can be killed safely.
    group.signal(rustix::process::Signal::KILL);
    // Drain what is left in the pipes. A process that escaped the group could hold them open
    // forever, so the drain is bounded.
    let drain_until = Instant::now() + spec.grace;
    while stdout.is_open() || stderr.is_open() {
        tokio::select! {
            biased;
            read = stdout.read(), if stdout.is_open() => {
                stdout.handle(read, capture.as_mut(), &mut sink);
            }
            read = stderr.read(), if stderr.is_open() => {
                stderr.handle(read, None, &mut sink);
            }
            () = sleep_until(drain_until) => break,
        }
    }
    stdout.close(capture.as_mut(), &mut sink);
    stderr.close(None, &mut sink);

    // The leader has exited (seen without reaping it): this wait returns at once.
    let status = leader.reap().map_err(supervise)?;
    // The program has ended: its slot goes to the next stage while this one is kept.
    drop(slot);
    drop(view);
    group.disarm();
    // Whatever the child left in its cgroup (it was killed above) is gone before `run` returns:
    // the caller may read what the child wrote without a process of it still at work.
    if let Some(cgroup) = group.take_cgroup().and_then(ChildCgroup::end_if_empty) {
        // Something outlived the leader: it is killed now, and the stage's end reaps it.
        if let Some(stage) = &stage {
            stage.mark_left();
        }
        let _ = tokio::task::spawn_blocking(move || cgroup.end()).await;
    }
    let duration = started.elapsed();

    let outcome = match stop {
        Some(Stop::TimedOut) => Outcome::TimedOut,
        Some(Stop::Cancelled) => Outcome::Cancelled,
        None => exit_outcome(status),
    };
    let (stdout, stdout_truncated) =
        capture.map_or((Vec::new(), false), |c| (c.bytes, c.truncated));
    Ok(ChildResult {
        outcome,
        status,
        duration,
        forced_kill,
        stdout,
        stdout_truncated,
    })
}

fn exit_outcome(status: std::process::ExitStatus) -> Outcome {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (_, Some(signal)) => Outcome::Signalled(signal),
        (Some(code), None) => Outcome::Exited(code),
        // wait(2) reports only exits and deaths by signal; keep a value rather than panic.
        (None, None) => Outcome::Exited(-1),
    }
}

/// The child, until it is reaped. Dropped earlier (the supervising future was dropped, and
/// its group killed), it is reaped off this thread, so that no zombie is left.
struct Leader(Option<i32>);

impl Leader {
    fn reap(&mut self) -> io::Result<std::process::ExitStatus> {
        match self.0.take() {
            Some(pid) => spawn::reap(pid),
            None => Err(io::Error::other("the child was already reaped")),
        }
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        if let Some(pid) = self.0.take() {
            // The group's SIGKILL is on its way (`ProcessGroup` drops right after); waiting for
            // the exit blocks, so not on this thread.
            let _ = std::thread::Builder::new()
                .name("reviewflow-reap".into())
                .spawn(move || spawn::reap(pid));
        }
    }
}

/// Writes stdin, then closes it (by dropping the pipe) so the child sees end of file. A child
/// that exits without reading makes the write fail; that is its business, not an error here.
async fn write_stdin(pipe: Option<tokio::process::ChildStdin>, data: Stdin) {
    if let (Some(mut pipe), Some(bytes)) = (pipe, data.bytes()) {
        let _ = pipe.write_all(bytes).await;
        let _ = pipe.shutdown().await;
    }
    // `data` drops here: a secret's bytes are zeroized as soon as they are written.
}

/// Stdout kept for the result, up to a cap.
struct Capture {
    bytes: Vec<u8>,
    cap: usize,
    truncated: bool,
}

impl Capture {
    fn new(cap: usize) -> Self {
        Self {
            bytes: Vec::new(),
            cap,
            truncated: false,
        }
    }

    fn extend(&mut self, data: &[u8]) {
        let room = self.cap.saturating_sub(self.bytes.len());
        self.bytes.extend_from_slice(&data[..room.min(data.len())]);
        self.truncated |= data.len() > room;
    }
}

/// One output pipe: reader, redaction, line splitting.
struct Pipe<R> {
    reader: Option<R>,
    stream: Stream,
    redact: RedactingStream,
    lines: LineSplitter,
    buf: Box<[u8]>,
}

const READ_CHUNK: usize = 16 * 1024;

impl<R: AsyncRead + Unpin> Pipe<R> {
    fn new(reader: Option<R>, stream: Stream, redactor: &Redactor, spec: &ChildSpec) -> Self {
        Self {
            reader,
            stream,
            redact: redactor.stream(),
            lines: LineSplitter::new(spec.max_line),
            buf: vec![0; READ_CHUNK].into_boxed_slice(),
        }
    }

    fn is_open(&self) -> bool {
        self.reader.is_some()
    }

    /// Reads one chunk; cancel-safe, as `select!` requires.
    async fn read(&mut self) -> io::Result<usize> {
        match &mut self.reader {
            Some(reader) => reader.read(&mut self.buf).await,
            None => std::future::pending().await,
        }
    }

    fn handle(
        &mut self,
        read: io::Result<usize>,
        capture: Option<&mut Capture>,
        sink: &mut impl FnMut(Stream, Vec<u8>),
    ) {
        match read {
            Ok(0) | Err(_) => self.close(capture, sink),
            Ok(n) => {
                let redacted = self.redact.push(&self.buf[..n]);
                self.deliver(&redacted, capture, sink);
            }
        }
    }

    /// End of stream (or a read error, which ends it too): release the held-back tail.
    fn close(&mut self, capture: Option<&mut Capture>, sink: &mut impl FnMut(Stream, Vec<u8>)) {
        if self.reader.take().is_none() {
            return;
        }
        let tail = self.redact.finish();
        self.deliver(&tail, capture, sink);
        let stream = self.stream;
        self.lines.finish(&mut |line| sink(stream, line));
    }

    fn deliver(
        &mut self,
        redacted: &[u8],
        capture: Option<&mut Capture>,
        sink: &mut impl FnMut(Stream, Vec<u8>),
    ) {
        if let Some(capture) = capture {
            capture.extend(redacted);
        }
        let stream = self.stream;
        self.lines.push(redacted, &mut |line| sink(stream, line));
    }
}
