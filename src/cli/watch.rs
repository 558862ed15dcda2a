//! `watch`: resolve the targets, start the tracer (or play a recording),
//! run the command if one was given, redraw the live view every interval
//! on a terminal, and write the summary through the outputs.

use super::{warn, Out};
use crate::errors::TargetError;
use crate::report::{Format, Run};
use crate::sys::Snapshot;
use crate::watch::{self, ChildRun, SnapshotSource, WatchOptions, WatchRun, Watched};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Returns standard output's text and the exit status: 1 findings, 2 a
/// target could not be watched or tracing could not start or went on.
pub fn run(
    opts: &WatchOptions,
    command: &[String],
    replay: Option<&Path>,
    out: Out,
) -> (String, u8) {
    let mut resolved = watch::resolve(&opts.targets, &opts.sysfs, opts.unit);
    for e in &resolved.errors {
        warn(&e.to_string());
    }
    if resolved.watched.is_empty() {
        if resolved.errors.is_empty() {
            warn("nothing to watch: no disk found");
        }
        return (String::new(), 2);
    }
    if replay.is_none() && !opts.sysfs.is_live() {
        warn("watch traces the live kernel: a --sysfs-root tree cannot be watched (--replay plays a recording over it)");
        return (String::new(), 2);
    }
    // What check reads to name the causes (tables, layer headers) is read
    // before the tracer starts, so none of it is in the counts.
    let before = crate::sys::storage_read_bytes();
    watch::add_causes(&mut resolved.watched, &opts.sysfs);
    // A recording's run read nothing of its own disks.
    let read_before = crate::sys::storage_read_bytes()
        .zip(before)
        .map(|(after, before)| after.saturating_sub(before))
        .filter(|_| replay.is_none());
    let mut source = match open(replay, &resolved.watched) {
        Ok(s) => s,
        Err(e) => {
            warn(&e);
            return (String::new(), 2);
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&stop)) {
            warn(&format!("cannot catch signal {sig}: {e}"));
        }
    }
    // The counted window starts here, before the command does, so none
    // of its I/O falls before the first snapshot.
    let first = match source.snapshot() {
        Ok(s) => s,
        Err(e) => {
            warn(&e);
            return (String::new(), 2);
        }
    };
    let mut child = match spawn(command) {
        Ok(c) => c,
        Err(e) => {
            warn(&e);
            return (String::new(), 2);
        }
    };
    let live = out.outputs.stdout() == Format::Human
        && !out.style.quiet
        && std::io::stdout().is_terminal();
    let stack = &resolved.watched;
    let path = source.path();
    let mut ended: Option<ExitStatus> = None;
    // A recording plays to its end whenever the command ends.
    let recorded = source.recorded();
    let observed = {
        let mut stop_now = || {
            if stop.load(Ordering::Relaxed) {
                return true;
            }
            if recorded {
                return false;
            }
            if let (Some(c), None) = (child.as_mut(), ended) {
                ended = c.try_wait().ok().flatten();
            }
            ended.is_some()
        };
        let mut each = |a: &Snapshot, b: &Snapshot| {
            if live {
                let interval = WatchRun::new(opts, stack.clone(), path, a, b);
                redraw(&crate::report::watch_live(&interval, out.style));
            }
        };
        watch::observe(
            &mut *source,
            first,
            opts.interval,
            opts.duration,
            &mut stop_now,
            &mut each,
        )
    };
    // A recording's end is not the command's: it runs to its own end.
    let command_run = finish(command, child.as_mut(), ended, !recorded);
    let mut run = WatchRun::new(
        opts,
        resolved.watched,
        path,
        &observed.first,
        &observed.last,
    );
    run.command = command_run;
    run.read_before_bytes = read_before;
    run.trace.note = source.note();
    run.trace.attach = source.attach();
    run.errors = resolved.errors;
    if let Some(e) = observed.error {
        warn(&format!(
            "tracing stopped: {e}; the summary holds what was counted until then"
        ));
        run.errors.push(TargetError::new("trace", e));
    }
    run.settle();
    out.write(Run::Watch(&run), run.exit_status)
}

/// The kernel's tracer for these devices, or a recording from `replay`.
fn open(replay: Option<&Path>, watched: &[Watched]) -> Result<Box<dyn SnapshotSource>, String> {
    match replay {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("--replay {}: {e}", file.display()))?;
            let r = watch::Replay::parse(&text)
                .map_err(|e| format!("--replay {}: {e}", file.display()))?;
            Ok(Box::new(r))
        }
        None => {
            let grains: Vec<_> = watched.iter().map(Watched::grains).collect();
            watch::tracer(&grains)
        }
    }
}

/// Starts COMMAND, when one was given.
fn spawn(command: &[String]) -> Result<Option<Child>, String> {
    let Some((program, args)) = command.split_first() else {
        return Ok(None);
    };
    std::process::Command::new(program)
        .args(args)
        .spawn()
        .map(Some)
        .map_err(|e| format!("cannot run {program}: {e}"))
}

/// How COMMAND ended. One still running when the watch ends (--for,
/// Ctrl-C, the tracer failing) is killed, so nothing is left behind;
/// after a recording (`kill` false) it is waited for.
fn finish(
    command: &[String],
    child: Option<&mut Child>,
    ended: Option<ExitStatus>,
    kill: bool,
) -> Option<ChildRun> {
    use std::os::unix::process::ExitStatusExt;
    let child = child?;
    let status = match ended {
        Some(s) => Some(s),
        None => child.try_wait().ok().flatten().or_else(|| {
            if kill {
                let _ = child.kill();
            }
            child.wait().ok()
        }),
    };
    Some(ChildRun {
        argv: command.to_vec(),
        exit_status: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
    })
}

/// The live view, drawn over the previous one.
fn redraw(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = write!(o, "\x1b[H\x1b[2J{text}");
    let _ = o.flush();
}
