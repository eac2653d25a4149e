//! Runs a spec: one OS thread per engine thread, each with its own single-threaded tokio runtime,
//! its own connections and its own stats (wrk's design), merged when the run ends.
//!
//! Closed loop: each connection task claims the next request and sends it at once.
//! Open loop: a pacer task per thread claims slots of the global schedule, waits for each slot's
//! intended time and hands it to an idle connection, opening one if none is idle and the cap
//! allows; otherwise the slot waits in a backlog and its latency keeps counting from the intended
//! time. The run ends at the schedule's end: slots still waiting then are counted as unsent
//! (`arrivals`: the rule, shared with the io_uring path).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::Write as _;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::IntervalLogWriterError;
use tokio::sync::Notify;
use tokio::task::{JoinHandle, LocalSet};
use tokio::time::{Instant, Sleep};

use crate::connection::{Connection, Failure, Response, Reuse};
use crate::pacer::{Picker, Schedule};
use crate::spec::{Addr, Spec, Stage, Warmup};
use crate::stats::{is_2xx, ErrorKind, Interval, RunFacts, SecondStats, Stats, Timing};
use crate::timer::PreciseTimer;
use crate::tls::{RunTls, Tls};
use crate::uring::{IoChoice, IoPath};
use arrivals::Arrivals;

mod arrivals;
mod uring;
mod vu;

/// How long requests in flight at the end may take to finish before they count as aborted.
const DRAIN: Duration = Duration::from_secs(1);
/// How long after its start call a replay's clock starts (without `start_at`), so that its
/// first requests, due at once, do not wait for the threads to start.
const REPLAY_LEAD: Duration = Duration::from_millis(50);
/// The same after a cancel (Ctrl-C, SIGTERM): the caller has promised to stop within a second.
const CANCEL_DRAIN: Duration = Duration::from_millis(200);
/// How often a thread's controller looks at the cancel flag.
const POLL: Duration = Duration::from_millis(10);
const TSV_FLUSH: usize = 192 * 1024;
const TSV_HEADER: &str =
    "start_unix_us\tintended_offset_us\ttarget\tstatus\tlatency_us\tuncorrected_us\tconnect_us\twaiting_us\tbytes\terror\ttls_us\n";
const UNKNOWN: u64 = u64::MAX;

/// Live counters of one thread, on a cache line of its own.
#[repr(align(64))]
#[derive(Default)]
struct Counters {
    complete: AtomicU64,
    failed: AtomicU64,
}

/// State shared by all threads of a run.
struct Shared {
    spec: Spec,
    schedule: Option<Schedule>,
    /// Distinct address index of each target (the address and, for HTTPS, the server name).
    addr_ids: Vec<usize>,
    /// HTTPS: the checked options and the server name of each distinct address (None: plain).
    tls: Option<RunTls>,
    start: Instant,
    start_unix_us: u64,
    /// Measured phase start, in ns after `start`; `UNKNOWN` until the warm-up ends.
    measure_start_ns: AtomicU64,
    /// When the first thread began (wall clock, µs since the epoch); `UNKNOWN` until one did.
    began_unix_us: AtomicU64,
    next_slot: AtomicU64,
    /// Closed loop with a time warm-up: the requests sent while warming, numbered apart so that
    /// they do not use up `-n`.
    warm_claims: AtomicU64,
    /// Slots the run may claim, warm-up included.
    slot_limit: u64,
    cancel: AtomicBool,
    stopped: AtomicBool,
    counters: Vec<Counters>,
    /// Completions in the last finished second (f64 bits).
    last_rate: AtomicU64,
    /// Each finished second of the series as JSON (with its histogram: `export_histograms` only),
    /// readable while the run goes on (`Run::seconds`).
    finished: Mutex<Vec<String>>,
    done: Mutex<Option<String>>,
    done_cv: Condvar,
    tsv: Option<File>,
    /// The first write error of each output file (`tsv`, `hdr log`): that file stops there, the
    /// run goes on, and the result says so (`write_errors`).
    write_errors: Mutex<Vec<String>>,
    tsv_failed: AtomicBool,
    /// The I/O path the threads take, and why.
    io: IoChoice,
    /// Why threads that were to take the ring could not set it up (they ran on epoll).
    ring_failures: Mutex<Vec<String>>,
}

impl Shared {
    /// Records the first write error of `what`; true if it is the first.
    fn write_failed(&self, what: &str, error: &std::io::Error) -> bool {
        let mut errors = self.write_errors.lock().unwrap_or_else(|e| e.into_inner());
        let prefix = format!("{what}: ");
        if errors.iter().any(|e| e.starts_with(&prefix)) {
            return false;
        }
        errors.push(format!("{prefix}{error}"));
        true
    }
}

impl Shared {
    /// The next slot of this run's share of the global sequence (every `slot_stride`-th from
    /// `slot_offset`), or None past the limit.
    fn take_slot(&self) -> Option<u64> {
        let k = self.next_slot.fetch_add(1, Ordering::Relaxed);
        let slot = k.checked_mul(self.spec.slot_stride)?.checked_add(self.spec.slot_offset)?;
        (slot < self.slot_limit).then_some(slot)
    }

    fn measure_start(&self) -> Option<Instant> {
        match self.measure_start_ns.load(Ordering::Acquire) {
            UNKNOWN => None,
            ns => Some(self.start + Duration::from_nanos(ns)),
        }
    }

    /// Marks the measured phase as started now, unless another thread did first.
    fn begin_measure(&self, now: Instant) -> Instant {
        let ns = now.saturating_duration_since(self.start).as_nanos() as u64;
        let _ = self.measure_start_ns.compare_exchange(UNKNOWN, ns, Ordering::AcqRel, Ordering::Acquire);
        self.measure_start().expect("just set")
    }

    fn deadline(&self) -> Option<Instant> {
        match &self.schedule {
            Some(s) => Some(self.start + s.length()),
            None => Some(self.measure_start()? + self.spec.duration?),
        }
    }
}

/// What the caller sees while a run is in flight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    pub phase: &'static str,
    pub elapsed_s: f64,
    pub complete: u64,
    pub failed: u64,
    pub rate: f64,
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
        let elapsed = sh.measure_start().map_or(0.0, |m| now.saturating_duration_since(m).as_secs_f64());
        Progress {
            phase,
            elapsed_s: elapsed,
            complete,
            failed,
            rate: f64::from_bits(sh.last_rate.load(Ordering::Relaxed)),
        }
    }

    /// Asks the run to stop issuing requests; the result still comes, with what was measured.
    pub fn cancel(&self) {
        self.shared.cancel.store(true, Ordering::Relaxed);
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
    /// result's `series`, each with its histogram; empty without `export_histograms`. What a
    /// caller keeps of a run that never returns its result (its machine died).
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
fn unix_us() -> u64 {
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

enum Msg {
    Interval(Interval),
    /// The thread has handed over every second before this one.
    Passed { thread: usize, second: u64 },
}

struct ThreadOutput {
    stats: Stats,
    cpu: (f64, f64),
    /// When its last measured request ended, or it stopped issuing requests if later.
    last_end: Option<Instant>,
}

fn supervise(sh: Arc<Shared>, hdr_log: Option<File>, warmup_slots: u64) {
    let (tx, rx) = mpsc::channel::<Msg>();
    let threads = sh.spec.threads;
    let collector = {
        let sh = Arc::clone(&sh);
        std::thread::Builder::new()
            .name("pounder-collector".into())
            .spawn(move || collect(&sh, rx, threads, hdr_log))
    };
    let workers: Vec<_> = (0..threads)
        .map(|id| {
            let sh = Arc::clone(&sh);
            let tx = tx.clone();
            std::thread::Builder::new()
                .name(format!("pounder-{id}"))
                .spawn(move || work(id, sh, tx, warmup_slots))
        })
        .collect();
    drop(tx);
    let mut total = Stats::new();
    let mut facts = RunFacts::default();
    let mut last_end: Option<Instant> = None;
    let mut errors = Vec::new();
    for w in workers {
        match w.map_err(|e| e.to_string()).and_then(|h| h.join().map_err(|_| "an engine thread panicked".into())) {
            Ok(out) => {
                total.merge(&out.stats);
                facts.cpu_user_s += out.cpu.0;
                facts.cpu_sys_s += out.cpu.1;
                last_end = last_end.max(out.last_end);
            }
            Err(e) => errors.push(e),
        }
    }
    let series = match collector {
        Ok(h) => h.join().unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    facts.start_unix_us = sh.start_unix_us;
    facts.began_unix_us = Some(sh.began_unix_us.load(Ordering::Relaxed)).filter(|&t| t != UNKNOWN);
    if let Some(m) = sh.measure_start() {
        let end = last_end.unwrap_or(m);
        let warmup = m.saturating_duration_since(sh.start);
        facts.elapsed_s = end.saturating_duration_since(m).as_secs_f64();
        facts.warmup_s = warmup.as_secs_f64();
        facts.measure_start_unix_us = Some(sh.start_unix_us + warmup.as_micros() as u64);
    }
    let mut doc = total.to_json(&facts, &series, sh.spec.export_histograms);
    doc["io"] = io_json(&sh);
    if !errors.is_empty() {
        doc["engine_errors"] = serde_json::json!(errors);
    }
    let written = sh.write_errors.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if !written.is_empty() {
        doc["write_errors"] = serde_json::json!(written);
    }
    let mut done = sh.done.lock().unwrap_or_else(|e| e.into_inner());
    *done = Some(doc.to_string());
    sh.done_cv.notify_all();
}

/// The result's `io`: the path taken and why; threads that could not set up their ring ran on
/// epoll (all of them: the path is epoll; some: mixed), and the reason says why.
fn io_json(sh: &Shared) -> serde_json::Value {
    let failures = sh.ring_failures.lock().unwrap_or_else(|p| p.into_inner());
    if failures.is_empty() {
        return serde_json::json!({"path": sh.io.path.name(), "reason": sh.io.reason});
    }
    let path = if failures.len() >= sh.spec.threads { "epoll" } else { "mixed" };
    let reason = format!(
        "{}; {} of {} threads could not set up their ring ({}) and ran on epoll",
        sh.io.reason,
        failures.len(),
        sh.spec.threads,
        failures[0]
    );
    serde_json::json!({"path": path, "reason": reason})
}

/// Merges the threads' seconds into the series (and the HDR log) as each second completes.
fn collect(sh: &Shared, rx: mpsc::Receiver<Msg>, threads: usize, hdr_log: Option<File>) -> Vec<SecondStats> {
    let mut pending: BTreeMap<u64, Interval> = BTreeMap::new();
    let mut passed = vec![0u64; threads];
    let mut series = Vec::new();
    let mut file = hdr_log.map(std::io::BufWriter::new);
    let mut serializer = hdrhistogram::serialization::V2DeflateSerializer::new();
    let mut log = file.as_mut().and_then(|f| {
        let base = SystemTime::UNIX_EPOCH + Duration::from_micros(sh.start_unix_us);
        hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder::new()
            .add_comment("pounder: corrected latency (from the intended send time) in microseconds")
            .with_start_time(base)
            .with_base_time(base)
            .begin_log_with(f, &mut serializer)
            .map_err(|e| sh.write_failed("hdr log", &e))
            .ok()
    });
    let mut finish = |iv: Interval, series: &mut Vec<SecondStats>, whole: bool| {
        let s = iv.stats(sh.spec.export_histograms);
        if whole {
            sh.last_rate.store((s.complete as f64).to_bits(), Ordering::Relaxed);
        }
        if let (Some(writer), Some(m)) = (log.as_mut(), sh.measure_start()) {
            let offset = m.saturating_duration_since(sh.start) + Duration::from_secs(iv.second);
            if let Err(e) = writer.write_histogram(iv.hist.inner(), offset, Duration::from_secs(1), None) {
                let error = match e {
                    IntervalLogWriterError::IoError(io) => io,
                    IntervalLogWriterError::SerializeError(other) => std::io::Error::other(format!("{other:?}")),
                };
                sh.write_failed("hdr log", &error);
                log = None; // the file stops at its last whole interval
            }
        }
        if sh.spec.export_histograms {
            if let Ok(text) = serde_json::to_string(&s) {
                sh.finished.lock().unwrap_or_else(|e| e.into_inner()).push(text);
            }
        }
        series.push(s);
    };
    for msg in rx.iter() {
        match msg {
            Msg::Interval(iv) => {
                passed[iv.thread] = passed[iv.thread].max(iv.second);
                let second = iv.second;
                pending.entry(second).or_insert_with(|| Interval::new(0, second)).add(&iv);
            }
            Msg::Passed { thread, second } => passed[thread] = passed[thread].max(second),
        }
        let done_below = passed.iter().copied().min().unwrap_or(0);
        while let Some(entry) = pending.first_entry() {
            if *entry.key() >= done_below {
                break;
            }
            finish(entry.remove(), &mut series, true);
        }
    }
    // All threads are gone: what is left is complete (the last second may be partial).
    for (_, iv) in std::mem::take(&mut pending) {
        finish(iv, &mut series, false);
    }
    drop(log);
    if let Some(mut f) = file {
        // the buffer's last bytes: a full disk shows here at the latest
        if let Err(e) = f.flush() {
            sh.write_failed("hdr log", &e);
        }
    }
    series
}

/// A unit of work: one request slot.
#[derive(Clone, Copy)]
struct Job {
    slot: u64,
    intended: Instant,
    measured: bool,
}

/// A connection task's next move (`Worker::next_job`).
enum Next {
    Job(Job),
    /// Open loop: nothing due yet; wait for the pacer's `work`.
    Wait,
    Stop,
}

/// One engine thread's state, shared by its tasks (all on this thread).
struct Worker {
    id: usize,
    sh: Arc<Shared>,
    stats: RefCell<Stats>,
    interval: RefCell<Interval>,
    picker: RefCell<Picker>,
    tx: mpsc::Sender<Msg>,
    tsv: RefCell<Vec<u8>>,
    /// No new request may start.
    stopping: Cell<bool>,
    /// Connection tasks alive.
    live: Cell<usize>,
    /// Connections opened by this thread (warm-up included).
    opened: Cell<u64>,
    /// Connection tasks allowed on this thread.
    cap: usize,
    warmup_slots: u64,
    last_end: Cell<Option<Instant>>,
    // Open loop only:
    backlog: RefCell<VecDeque<Job>>,
    /// Where this thread is in the schedule (`arrivals`, shared by both paths).
    arrivals: RefCell<Arrivals>,
    work: Notify,
    /// epoll: connection tasks waiting for `work` that no `notify_one` has woken yet.
    idle: Cell<usize>,
    tasks: RefCell<Vec<JoinHandle<()>>>,
    /// This thread's TLS client (its own session cache), when some target is HTTPS.
    tls: Option<Tls>,
}

fn work(id: usize, sh: Arc<Shared>, tx: mpsc::Sender<Msg>, warmup_slots: u64) -> ThreadOutput {
    let (n, t) = (sh.spec.connections, sh.spec.threads);
    let cap = n / t + usize::from(id < n % t);
    // one start for every share: the share's offset keeps their random orders apart
    let seed = sh.start_unix_us ^ id as u64 ^ sh.spec.slot_offset.rotate_left(32);
    let picker = match &sh.spec.replay {
        Some(r) => Picker::replay(&sh.spec.targets, Arc::clone(&r.targets)),
        None => Picker::new(&sh.spec.targets, sh.spec.order, seed.wrapping_add(1)),
    };
    let w = Rc::new(Worker {
        id,
        stats: RefCell::new(crate::steps::stats_for(sh.spec.scenario.as_ref())),
        interval: RefCell::new(Interval::new(id, 0)),
        picker: RefCell::new(picker),
        tx,
        tsv: RefCell::new(if sh.tsv.is_some() { Vec::with_capacity(TSV_FLUSH + 4096) } else { Vec::new() }),
        stopping: Cell::new(false),
        live: Cell::new(0),
        opened: Cell::new(0),
        cap,
        warmup_slots,
        last_end: Cell::new(None),
        backlog: RefCell::new(VecDeque::with_capacity(cap * 4)),
        work: Notify::new(),
        arrivals: RefCell::new(Arrivals::default()),
        idle: Cell::new(0),
        tasks: RefCell::new(Vec::with_capacity(cap)),
        tls: sh.tls.as_ref().map(|(setup, names)| setup.thread(names)),
        sh,
    });
    // a ring the thread cannot set up (a memory limit hit after the probe): this thread runs on
    // epoll, and the result says so
    let on_ring = w.sh.io.path == IoPath::Uring
        && uring::drive(&w).map_err(|e| w.sh.ring_failures.lock().unwrap_or_else(|p| p.into_inner()).push(e)).is_ok();
    if !on_ring {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
        let local = LocalSet::new();
        local.block_on(&rt, Rc::clone(&w).control());
        drop(local);
    }
    w.flush_tsv();
    let mut stats = w.stats.replace(Stats::new());
    stats.connections_opened = w.opened.get();
    stats.tls_used = w.tls.is_some();
    ThreadOutput { stats, cpu: thread_cpu(), last_end: w.last_end.get() }
}

impl Worker {
    /// Starts the tasks, stops them at the deadline or on cancel, drains, and hands over the
    /// last second.
    async fn control(self: Rc<Self>) {
        // a start in the future (start_at): wait for it, and for nothing longer than a cancel
        while Instant::now() < self.sh.start && !self.sh.cancel.load(Ordering::Relaxed) {
            tokio::time::sleep_until(self.sh.start.min(Instant::now() + POLL)).await;
        }
        // cancelled while waiting: nothing will be sent, so this thread never began
        if !self.sh.cancel.load(Ordering::Relaxed) {
            self.sh.began_unix_us.fetch_min(unix_us(), Ordering::Relaxed);
        }
        let ticker = tokio::task::spawn_local(Rc::clone(&self).tick());
        if self.sh.schedule.is_some() {
            let pacer = tokio::task::spawn_local(Rc::clone(&self).pace());
            self.tasks.borrow_mut().push(pacer);
        } else {
            for _ in 0..self.cap {
                self.spawn_connection();
            }
        }
        // stopped by the clock (-d, a stage schedule's end) or a cancel: the run ends now; when its
        // requests ran out, it ends with its last answer (not up to a POLL later)
        let mut by_clock = false;
        loop {
            let now = Instant::now();
            let deadline = self.sh.deadline();
            if self.sh.cancel.load(Ordering::Relaxed) || deadline.is_some_and(|d| now >= d) {
                by_clock = true;
                break;
            }
            // open loop: a schedule sent in full still runs to its end (its length is the
            // run's duration); one cut short by -n ends with its last answer
            if self.live.get() == 0 && (self.sh.schedule.is_none() || self.ended_by_requests()) {
                break;
            }
            let wake = deadline.map_or(now + POLL, |d| d.min(now + POLL));
            tokio::time::sleep_until(wake).await;
        }
        let cancelled = self.sh.cancel.load(Ordering::Relaxed);
        if by_clock {
            let end = self.end_moment(cancelled);
            self.last_end.set(self.last_end.get().max(Some(end)));
            if self.sh.schedule.is_some() {
                // the arrivals due by the end: the idle connections (and those the cap still
                // allows) take them after the stop, the others are unsent (after the drain)
                let due = self.release_due(end);
                if !cancelled {
                    (0..due).for_each(|_| self.hand_out());
                }
            }
        }
        self.stop();
        if cancelled {
            self.count_unsent();
        }
        let drain = if cancelled { CANCEL_DRAIN } else { DRAIN };
        let drain_end = Instant::now() + drain;
        while self.live.get() > 0 && Instant::now() < drain_end {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let tasks = std::mem::take(&mut *self.tasks.borrow_mut());
        for t in &tasks {
            t.abort();
        }
        for t in tasks {
            let _ = t.await;
        }
        ticker.abort();
        let _ = ticker.await;
        self.count_unsent();
        self.hand_over_interval();
    }

    /// Open loop: the schedule was spent by `-n`, not by its end: the run ends with its last answer.
    fn ended_by_requests(&self) -> bool {
        let a = self.arrivals.borrow();
        a.done() && !a.ran_out()
    }

    /// When a run stopped by the clock ended: its deadline, or now after a cancel (or a deadline
    /// passed unnoticed).
    fn end_moment(&self, cancelled: bool) -> Instant {
        match self.sh.deadline() {
            Some(d) if !cancelled => d.min(Instant::now()),
            _ => Instant::now(),
        }
    }

    /// No new request may start; on epoll, every idle connection task wakes (to take what the end
    /// left it, or to end).
    fn stop(&self) {
        self.stopping.set(true);
        self.sh.stopped.store(true, Ordering::Relaxed);
        self.wake_all();
    }

    fn wake_all(&self) {
        self.idle.set(0);
        self.work.notify_waiters();
    }

    /// epoll, open loop: a request was put in the backlog: an idle connection task is woken for
    /// it, else a connection opened when the cap allows; else it waits for a busy one.
    fn hand_out(self: &Rc<Self>) {
        if self.idle.get() > 0 {
            self.idle.set(self.idle.get() - 1);
            self.work.notify_one();
        } else if self.live.get() < self.cap {
            self.spawn_connection();
        }
    }

    fn spawn_connection(self: &Rc<Self>) {
        self.live.set(self.live.get() + 1);
        let task = match self.sh.spec.scenario {
            None => tokio::task::spawn_local(Rc::clone(self).connection()),
            // a scenario: the task is a virtual user (vu.rs)
            Some(_) => tokio::task::spawn_local(Rc::clone(self).virtual_user()),
        };
        self.tasks.borrow_mut().push(task);
    }

    /// A connection task's connection (plain or virtual user's): the spec's reuse, this thread's TLS.
    fn task_connection<'a>(&'a self, written: &'a Cell<bool>) -> Connection<'a> {
        let spec = &self.sh.spec;
        let reuse =
            Reuse { keepalive: spec.keepalive, calls_per_conn: spec.calls_per_conn, throttle_bps: spec.throttle_bps };
        Connection::new(reuse, &self.opened, written).with_tls(self.tls.as_ref())
    }

    /// A connection task: takes jobs until there are none or the run stops.
    async fn connection(self: Rc<Self>) {
        let _alive = Alive(&self.live);
        let written = Cell::new(false);
        let mut conn = self.task_connection(&written);
        // One timeout timer for the task's life, moved forward for each request: moving a tokio
        // timer later is an atomic store, where a new timer per request is a wheel insertion.
        let timeout = tokio::time::sleep(self.sh.spec.timeout);
        tokio::pin!(timeout);
        // a new task is free, as one that waited
        let mut was_idle = true;
        loop {
            let job = match self.next_job(was_idle) {
                Next::Job(job) => job,
                Next::Stop => break,
                Next::Wait => {
                    self.work.notified().await;
                    was_idle = true;
                    continue;
                }
            };
            was_idle = false;
            self.serve(&mut conn, &written, timeout.as_mut(), job).await;
        }
    }

    /// What a connection task does next (connection's and virtual_user's loop): stop when the run
    /// stops; closed loop, claim a request; open loop, take the backlog's first, or wait (counted
    /// idle) for the pacer. After the end of an open-loop run, only a task that was free then
    /// (`was_idle`: it was waiting, or is new) takes a request the end left in the backlog.
    #[inline(always)]
    fn next_job(&self, was_idle: bool) -> Next {
        let stopping = self.stopping.get();
        if self.sh.schedule.is_none() {
            return match self.claim().filter(|_| !stopping) {
                Some(job) => Next::Job(job),
                None => Next::Stop,
            };
        }
        if stopping && !was_idle {
            return Next::Stop;
        }
        let next = self.backlog.borrow_mut().pop_front();
        match next {
            Some(job) => Next::Job(job),
            None if stopping || self.arrivals.borrow().done() => Next::Stop,
            None => {
                self.idle.set(self.idle.get() + 1);
                Next::Wait
            }
        }
    }

    /// Closed loop: the next request, sent now.
    fn claim(&self) -> Option<Job> {
        let now = Instant::now();
        if let Warmup::Time(_) = self.sh.spec.warmup {
            if self.sh.measure_start().is_some_and(|m| now < m) {
                // warming for a time: as many requests as fit, none of them one of the `-n`
                let k = self.sh.warm_claims.fetch_add(1, Ordering::Relaxed);
                let slot = k * self.sh.spec.slot_stride + self.sh.spec.slot_offset;
                return Some(Job { slot, intended: now, measured: false });
            }
        }
        let slot = self.sh.take_slot()?;
        let measured = match self.sh.spec.warmup {
            // a time warm-up's own claims were returned above
            Warmup::None | Warmup::Time(_) => true,
            // A plain load first: only the first measured claim writes the shared start time.
            Warmup::Requests(_) => slot >= self.warmup_slots && {
                if self.sh.measure_start_ns.load(Ordering::Relaxed) == UNKNOWN {
                    self.sh.begin_measure(now);
                }
                true
            },
        };
        Some(Job { slot, intended: now, measured })
    }

    /// Open loop: claims slots of the global schedule and hands out each at its time.
    async fn pace(self: Rc<Self>) {
        // Without a timerfd (never seen on Linux), fall back to tokio's 1 ms timer.
        let timer = PreciseTimer::new().ok();
        while !self.stopping.get() {
            let Some(intended) = self.next_arrival() else { break };
            if intended > Instant::now() {
                match &timer {
                    Some(t) if t.sleep_until(intended).await.is_ok() => {}
                    _ => tokio::time::sleep_until(intended).await,
                }
            }
            if self.stopping.get() {
                // the end took this arrival (`control`)
                return;
            }
            for _ in 0..self.release_due(Instant::now()) {
                self.hand_out();
            }
        }
        // spent: the idle tasks end (those serving end after their request)
        if !self.stopping.get() {
            self.wake_all();
        }
    }

    async fn serve(&self, conn: &mut Connection<'_>, written: &Cell<bool>, mut timeout: Pin<&mut Sleep>, job: Job) {
        let index = self.picker.borrow_mut().pick(job.slot);
        let target = &self.sh.spec.targets[index];
        written.set(false);
        let in_flight =
            InFlight { worker: self, measured: job.measured, armed: true, written, request_len: target.request.len(), step: None };
        // Closed loop: the request is meant to go now, so its claim time is its start.
        let start = if self.sh.schedule.is_some() { Instant::now() } else { job.intended };
        timeout.as_mut().reset(start + self.sh.spec.timeout);
        let mut result = tokio::select! {
            biased;
            r = conn.exchange(target, self.sh.addr_ids[index]) => r,
            () = timeout => Err(Failure { kind: ErrorKind::Timeout, bytes_in: 0, sent: false }),
        };
        settle_timeout(&mut result, conn);
        let end = Instant::now();
        in_flight.disarm();
        self.record(job, index, target.request.len(), start, end, &result);
    }

    /// Counts a request: `index` is its target (a scenario's: its step), `sent` its length.
    fn record(&self, job: Job, index: usize, sent: usize, start: Instant, end: Instant, result: &Result<Response, Failure>) {
        let counters = &self.sh.counters[self.id];
        if !job.measured {
            let mut s = self.stats.borrow_mut();
            match result {
                Ok(_) => s.warmup_complete += 1,
                Err(_) => s.warmup_failed += 1,
            }
            return;
        }
        let us = |d: Duration| d.as_micros() as u64;
        let lag = self.sh.schedule.as_ref().map(|_| us(start.saturating_duration_since(job.intended)));
        let corrected = us(end.saturating_duration_since(job.intended));
        let total = us(end - start);
        let mut stats = self.stats.borrow_mut();
        let mut iv = self.interval.borrow_mut();
        self.advance_interval(&mut iv, end);
        let (status, bytes, timing) = match result {
            Ok(r) => {
                let timing = Timing {
                    corrected,
                    total,
                    lag,
                    connect: r.connect.map(us),
                    tls: r.tls.map(|(d, resumed)| (us(d), resumed)),
                    waiting: us(r.first_byte.saturating_duration_since(r.written)),
                    processing: us(end.saturating_duration_since(r.first_byte)),
                };
                stats.record_ok(r.status, &timing);
                stats.bytes_total += r.bytes_in;
                stats.bytes_body += r.body;
                stats.bytes_sent += sent as u64;
                iv.complete += 1;
                iv.non_2xx += u64::from(!is_2xx(r.status));
                iv.bytes += r.bytes_in;
                iv.hist.record(corrected);
                counters.complete.fetch_add(1, Ordering::Relaxed);
                (r.status, r.bytes_in, Some(timing))
            }
            Err(f) => {
                stats.record_error(f.kind, lag);
                stats.bytes_total += f.bytes_in;
                if f.sent {
                    stats.bytes_sent += sent as u64;
                }
                iv.failed += 1;
                iv.bytes += f.bytes_in;
                counters.failed.fetch_add(1, Ordering::Relaxed);
                (0, f.bytes_in, None)
            }
        };
        self.last_end.set(self.last_end.get().max(Some(end)));
        if self.sh.tsv.is_some() {
            let error = result.as_ref().err().map_or("", |f| f.kind.name());
            self.write_tsv(job, index, start, status, bytes, timing, corrected, total, error);
        }
    }

    /// Moves the open interval forward to the second `at` falls in, handing over finished ones.
    fn advance_interval(&self, iv: &mut Interval, at: Instant) {
        let Some(m) = self.sh.measure_start() else { return };
        let second = at.saturating_duration_since(m).as_secs();
        if second > iv.second {
            if !iv.is_empty() {
                let _ = self.tx.send(Msg::Interval(iv.clone()));
            }
            let _ = self.tx.send(Msg::Passed { thread: self.id, second });
            iv.restart(second);
        }
    }

    fn hand_over_interval(&self) {
        let iv = self.interval.borrow();
        if !iv.is_empty() {
            let _ = self.tx.send(Msg::Interval(iv.clone()));
        }
        let _ = self.tx.send(Msg::Passed { thread: self.id, second: u64::MAX });
    }

    /// Hands over each second when it ends, also when nothing completed in it.
    async fn tick(self: Rc<Self>) {
        loop {
            let next = match self.sh.measure_start() {
                Some(m) => {
                    let elapsed = Instant::now().saturating_duration_since(m).as_secs();
                    m + Duration::from_secs(elapsed + 1) + Duration::from_millis(1)
                }
                None => Instant::now() + POLL,
            };
            tokio::time::sleep_until(next).await;
            self.advance_interval(&mut self.interval.borrow_mut(), Instant::now());
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn write_tsv(
        &self,
        job: Job,
        index: usize,
        start: Instant,
        status: u16,
        bytes: u64,
        timing: Option<Timing>,
        corrected: u64,
        total: u64,
        error: &str,
    ) {
        let start_unix = self.sh.start_unix_us + start.saturating_duration_since(self.sh.start).as_micros() as u64;
        let intended = job.intended.saturating_duration_since(self.sh.start).as_micros();
        let mut buf = self.tsv.borrow_mut();
        let _ = write!(buf, "{start_unix}\t{intended}\t{index}\t{status}\t{corrected}\t{total}\t");
        if let Some(c) = timing.and_then(|t| t.connect) {
            let _ = write!(buf, "{c}");
        }
        buf.push(b'\t');
        if let Some(t) = timing {
            let _ = write!(buf, "{}", t.waiting);
        }
        let _ = write!(buf, "\t{bytes}\t{error}\t");
        if let Some((handshake, _)) = timing.and_then(|t| t.tls) {
            let _ = write!(buf, "{handshake}");
        }
        buf.push(b'\n');
        if buf.len() >= TSV_FLUSH {
            drop(buf);
            self.flush_tsv();
        }
    }

    fn flush_tsv(&self) {
        let mut buf = self.tsv.borrow_mut();
        if let Some(mut f) = self.sh.tsv.as_ref() {
            if !buf.is_empty() && !self.sh.tsv_failed.load(Ordering::Relaxed) {
                if let Err(e) = f.write_all(&buf) {
                    // a full disk: no more lines (the file would have a hole), and the run says so
                    self.sh.tsv_failed.store(true, Ordering::Relaxed);
                    self.sh.write_failed("tsv", &e);
                }
            }
        }
        buf.clear();
    }
}

/// A request cut by its timeout: timed out while connecting, or after the request went out (only
/// the latter sent it); either way the connection is closed.
#[inline(always)]
fn settle_timeout<T>(result: &mut Result<T, Failure>, conn: &mut Connection<'_>) {
    if let Err(f) = result {
        if f.kind == ErrorKind::Timeout {
            f.sent = conn.request_written();
            conn.close();
        }
    }
}

/// Counts a connection task as alive until it ends, however it ends.
struct Alive<'a>(&'a Cell<usize>);

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

/// A request in flight: if its task is aborted before it finishes, it counts as aborted.
struct InFlight<'a> {
    worker: &'a Worker,
    measured: bool,
    armed: bool,
    /// Its request went out (its bytes count as sent, also when it is aborted).
    written: &'a Cell<bool>,
    request_len: usize,
    /// A virtual user's step: it counts the abort as failed too.
    step: Option<usize>,
}

impl InFlight<'_> {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let w = self.worker;
        let mut s = w.stats.borrow_mut();
        if self.measured {
            s.record_error(ErrorKind::Aborted, None);
            if let Some(step) = self.step {
                s.steps[step].failed += 1;
            }
            if self.written.get() {
                s.bytes_sent += self.request_len as u64;
            }
            w.sh.counters[w.id].failed.fetch_add(1, Ordering::Relaxed);
            let mut iv = w.interval.borrow_mut();
            w.advance_interval(&mut iv, Instant::now());
            iv.failed += 1;
        } else {
            s.warmup_failed += 1;
        }
    }
}

/// CPU time of the calling thread: (user, system) seconds.
fn thread_cpu() -> (f64, f64) {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}
