//! The watch session: resolve the targets, read what names the causes
//! (before the tracer starts), start the tracer or play a recording, run
//! the command if one was given, take a snapshot every interval until
//! `--for`, Ctrl-C or the command's end, and put the run together. What
//! is drawn and written is the caller's: a line for stderr goes through
//! `warn`, each interval's run through `live`.

use super::{
    add_causes, observe, resolve, tracer, ChildRun, Replay, SnapshotSource, WatchOptions, WatchRun,
    Watched,
};
use crate::errors::TargetError;
use crate::sys::Snapshot;
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One watch, start to end. `live` (when the view is drawn) gets each
/// interval's run; `warn` each line for stderr. None: nothing could be
/// watched (a target, the tracer, the command), said through `warn`.
pub fn session(
    opts: &WatchOptions,
    command: &[String],
    replay: Option<&Path>,
    mut live: Option<&mut dyn FnMut(&WatchRun)>,
    warn: &dyn Fn(&str),
) -> Option<WatchRun> {
    let mut resolved = resolve(&opts.targets, &opts.sysfs, opts.unit);
    for e in &resolved.errors {
        warn(&e.to_string());
    }
    if resolved.watched.is_empty() {
        if resolved.errors.is_empty() {
            warn("nothing to watch: no disk found");
        }
        return None;
    }
    if replay.is_none() && !opts.sysfs.is_live() {
        warn("watch traces the live kernel: a --sysfs-root tree cannot be watched (--replay plays a recording over it)");
        return None;
    }
    // What check reads to name the causes (tables, layer headers) is read
    // before the tracer starts, so none of it is in the counts.
    let before = crate::sys::storage_read_bytes();
    add_causes(&mut resolved.watched, &opts.sysfs);
    // A recording's run read nothing of its own disks.
    let read_before = crate::sys::storage_read_bytes()
        .zip(before)
        .map(|(after, before)| after.saturating_sub(before))
        .filter(|_| replay.is_none());
    let mut source = open(replay, &resolved.watched).map_err(|e| warn(&e)).ok()?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&stop)) {
            warn(&format!("cannot catch signal {sig}: {e}"));
        }
    }
    // The counted window starts here, before the command does, so none
    // of its I/O falls before the first snapshot.
    let first = source.snapshot().map_err(|e| warn(&e)).ok()?;
    let mut child = spawn(command).map_err(|e| warn(&e)).ok()?;
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
            if let Some(draw) = live.as_mut() {
                draw(&WatchRun::new(opts, stack.clone(), path, a, b));
            }
        };
        observe(
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
    Some(run)
}

/// The kernel's tracer for these devices, or a recording from `replay`.
fn open(replay: Option<&Path>, watched: &[Watched]) -> Result<Box<dyn SnapshotSource>, String> {
    match replay {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("--replay {}: {e}", file.display()))?;
            let r =
                Replay::parse(&text).map_err(|e| format!("--replay {}: {e}", file.display()))?;
            Ok(Box::new(r))
        }
        None => {
            let grains: Vec<_> = watched.iter().map(Watched::grains).collect();
            tracer(&grains)
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
