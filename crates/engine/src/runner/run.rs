//! A run from its caller's side: the spec checked, the state every thread shares set up, the
//! threads started (`collect::supervise`); its progress, cancel and result.

use std::fs::File;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use super::collect::supervise;
use super::{Counters, Shared, Signal, REPLAY_LEAD, TSV_HEADER, UNKNOWN};
use crate::pacer::Schedule;
use crate::spec::{Addr, Spec, Stage, Warmup};

/// What the caller sees while a run is in flight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    pub phase: &'static str,
    pub elapsed_s: f64,
    pub complete: u64,
    pub failed: u64,
    pub rate: f64,
    /// Requests started and not yet answered, failed or aborted, now (warm-up's too).
    pub in_flight: u64,
}

/// A run in flight. Dropping it cancels the run without waiting: its threads drain (at most
/// `DRAIN` plus a request timeout) and end by themselves, so a caller holding a lock (Python's
/// GIL) is not blocked.
pub struct Run {
    shared: Arc<Shared>,
}

impl Run {
    /// Validates the spec and starts the run in background threads.
    pub fn start(spec: Spec) -> Result<Run, String> {
        spec.validate()?;
        let io = crate::uring::choose(&spec)?;
        let (schedule, warmup_slots) = open_schedule(&spec);
        let slot_limit = match (&schedule, spec.requests) {
            (Some(s), Some(n)) => s.total().min(warmup_slots + n),
            (Some(s), None) => s.total(),
            (None, Some(n)) => warmup_slots + n,
            (None, None) => u64::MAX,
        };
        let tsv = match &spec.tsv_path {
            Some(p) => {
                let mut f = File::options()
                    .create(true)
                    .write(true)
                    .truncate(true)
                    .open(p)
                    .map_err(|e| format!("tsv: cannot write {}: {e}", p.display()))?;
                // a full disk here is a write error of the run (reported with its figures), not a start error
                let header = f.write_all(TSV_HEADER.as_bytes()).err();
                // Threads append whole lines in batches; O_APPEND keeps each batch in one piece.
                Some((File::options().append(true).open(p).map_err(|e| format!("tsv: {e}"))?, header))
            }
            None => None,
        };
        let (tsv, tsv_header_error) = match tsv {
            Some((file, error)) => (Some(file), error),
            None => (None, None),
        };
        let hdr_log = match &spec.hdr_log_path {
            Some(p) => Some(File::create(p).map_err(|e| format!("hdr log: cannot write {}: {e}", p.display()))?),
            None => None,
        };
        let mut addrs: Vec<(&Addr, &Option<String>)> = Vec::new();
        let addr_ids = spec
            .targets
            .iter()
            .map(|t| match addrs.iter().position(|a| *a == (&t.addr, &t.tls_name)) {
                Some(i) => i,
                None => {
                    addrs.push((&t.addr, &t.tls_name));
                    addrs.len() - 1
                }
            })
            .collect();
        let tls = crate::tls::run_setup(&spec, addrs.iter().map(|a| a.1))?;
        // With start_at: the run (and its clock) begins then; the threads start now, connect
        // nothing and wait for it.
        // a replay's first requests are due at once: its clock starts once the threads are up
        let lead = if spec.replay.is_some() { REPLAY_LEAD } else { Duration::ZERO };
        let now = Instant::now() + lead;
        let now_unix_us = unix_us() + lead.as_micros() as u64;
        let (start, start_unix_us) = match spec.start_at_unix_us {
            Some(at) if at > now_unix_us => (now + Duration::from_micros(at - now_unix_us), at),
            _ => (now, now_unix_us),
        };
        let measure_start_ns = match (&schedule, spec.warmup) {
            (_, Warmup::None) => 0,
            (Some(_), _) => schedule_warmup(&spec).as_nanos() as u64,
            (None, Warmup::Time(w)) => w.as_nanos() as u64,
            (None, Warmup::Requests(_)) => UNKNOWN,
        };
        let shared = Arc::new(Shared {
            counters: (0..spec.threads).map(|_| Counters::default()).collect(),
            schedule,
            addr_ids,
            tls,
            start,
            start_unix_us,
            measure_start_ns: AtomicU64::new(measure_start_ns),
            began_unix_us: AtomicU64::new(UNKNOWN),
            next_slot: AtomicU64::new(0),
            warm_claims: AtomicU64::new(0),
            slot_limit,
            cancel: AtomicBool::new(false),
            signal: Signal::new(),
            stopped: AtomicBool::new(false),
            last_rate: AtomicU64::new(0),
            finished: Mutex::new(Vec::new()),
            done: Mutex::new(None),
            done_cv: Condvar::new(),
            write_errors: Mutex::new(tsv_header_error.iter().map(|e| format!("tsv: {e}")).collect()),
            tsv_failed: AtomicBool::new(tsv_header_error.is_some()),
            tsv,
            io,
            ring_failures: Mutex::new(Vec::new()),
            spec,
        });
        let sh = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("pounder-supervisor".into())
            .spawn(move || supervise(sh, hdr_log, warmup_slots))
            .map_err(|e| format!("cannot start threads: {e}"))?;
        Ok(Run { shared })
    }

    pub fn progress(&self) -> Progress {
        let sh = &self.shared;
        let now = Instant::now();
        let (complete, failed) = sh.counters.iter().fold((0, 0), |(c, f), k| {
            (c + k.complete.load(Ordering::Relaxed), f + k.failed.load(Ordering::Relaxed))
        });
        let phase = if sh.done.lock().map(|d| d.is_some()).unwrap_or(true) {
            "done"
        } else if sh.stopped.load(Ordering::Relaxed) {
            "drain"
        } else if sh.measure_start().is_some_and(|m| now >= m) {
            "measure"
        } else if now < sh.start {
            "waiting"
        } else {
            "warmup"
        };
        let in_flight = sh.counters.iter().map(|k| k.in_flight.load(Ordering::Relaxed)).sum();
        let elapsed = sh.measure_start().map_or(0.0, |m| now.saturating_duration_since(m).as_secs_f64());
        Progress {
            phase,
            elapsed_s: elapsed,
            complete,
            failed,
            rate: f64::from_bits(sh.last_rate.load(Ordering::Relaxed)),
            in_flight,
        }
    }

    /// Asks the run to stop issuing requests; the result still comes, with what was measured.
    pub fn cancel(&self) {
        self.shared.cancel.store(true, Ordering::Relaxed);
        self.shared.signal.raise();
    }

    /// Waits up to `timeout` for the run to finish; true when it has.
    pub fn wait(&self, timeout: Duration) -> bool {
        let guard = self.shared.done.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = self
            .shared
            .done_cv
            .wait_timeout_while(guard, timeout, |d| d.is_none())
            .unwrap_or_else(|e| e.into_inner());
        guard.is_some()
    }

    /// The seconds of the series finished so far, from the `from`-th on, as JSON entries of the
    /// result's `series` (each with its histogram with `export_histograms`). What a caller keeps
    /// of a run that never returns its result (its machine died), or streams as it goes.
    pub fn seconds(&self, from: usize) -> Vec<String> {
        let finished = self.shared.finished.lock().unwrap_or_else(|e| e.into_inner());
        finished.get(from..).map(<[String]>::to_vec).unwrap_or_default()
    }

    /// The result JSON, once the run has finished.
    pub fn result(&self) -> Option<String> {
        self.shared.done.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// Now on this machine's clock, in microseconds since the epoch.
pub(super) fn unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_micros() as u64
}

/// Runs a spec to the end and returns the result JSON.
pub fn run(spec: Spec) -> Result<String, String> {
    let run = Run::start(spec)?;
    while !run.wait(Duration::from_secs(1)) {}
    run.result().ok_or_else(|| "the run ended without a result".into())
}

/// The open-loop schedule with the warm-up prepended, and the number of warm-up slots.
fn open_schedule(spec: &Spec) -> (Option<Schedule>, u64) {
    if let Some(replay) = &spec.replay {
        return (Some(Schedule::explicit(Arc::clone(&replay.times_us), spec.duration)), 0);
    }
    let Some(stages) = &spec.stages else {
        let warm = if let Warmup::Requests(n) = spec.warmup { n } else { 0 };
        return (None, warm);
    };
    let warm = schedule_warmup(spec);
    let mut all = Vec::with_capacity(stages.len() + 1);
    if !warm.is_zero() {
        let r = stages[0].start_rate;
        all.push(Stage { duration: warm, start_rate: r, end_rate: r });
    }
    all.extend_from_slice(stages);
    let schedule = Schedule::new(&all);
    let warm_slots = if warm.is_zero() { 0 } else { Schedule::new(&all[..1]).total() };
    (Some(schedule), warm_slots)
}

/// Length of the open-loop warm-up: its time, or its requests at the first stage's rate.
fn schedule_warmup(spec: &Spec) -> Duration {
    let rate = spec.stages.as_ref().map_or(0.0, |s| s[0].start_rate);
    match spec.warmup {
        Warmup::None => Duration::ZERO,
        Warmup::Time(d) => d,
        Warmup::Requests(n) if rate > 0.0 => Duration::from_secs_f64(n as f64 / rate),
        Warmup::Requests(_) => Duration::ZERO,
    }
}
