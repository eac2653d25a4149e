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
use std::collections::VecDeque;
use std::fs::File;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::{JoinHandle, LocalSet};
use tokio::time::Instant;

use crate::pacer::{Picker, Schedule};
use crate::spec::{Spec, Warmup};
use crate::stats::{Interval, Stats};
use crate::tls::{RunTls, Tls};
use crate::uring::{IoChoice, IoPath};
use arrivals::Pacer;

mod arrivals;
mod collect;
mod epoll;
mod lifecycle;
mod record;
mod run;
mod uring;
mod vu;
mod wake;

use collect::{Msg, ThreadOutput};
use epoll::{settle_timeout, Alive};
use record::InFlight;
use wake::Signal;
pub use run::{run, Progress, Run};
use run::unix_us;

/// How long requests in flight at the end may take to finish before they count as aborted.
const DRAIN: Duration = Duration::from_secs(1);
/// How long after its start call a replay's clock starts (without `start_at`), so that its
/// first requests, due at once, do not wait for the threads to start.
const REPLAY_LEAD: Duration = Duration::from_millis(50);
/// The same after a cancel (Ctrl-C, SIGTERM): the caller has promised to stop within a second.
const CANCEL_DRAIN: Duration = Duration::from_millis(200);
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
    /// Requests started and not yet counted (warm-up included): `Run::progress`'s `in_flight`.
    in_flight: AtomicU64,
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
    /// Wakes the threads (epoll's controllers, the rings) when what they wait for changes: a
    /// cancel, the measured phase's start (a deadline known from then).
    signal: Signal,
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
        if self.measure_start_ns.compare_exchange(UNKNOWN, ns, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            self.signal.raise();
        }
        self.measure_start().expect("just set")
    }

    fn deadline(&self) -> Option<Instant> {
        match &self.schedule {
            Some(s) => Some(self.start + s.length()),
            None => Some(self.measure_start()? + self.spec.duration?),
        }
    }
}



/// A unit of work: one request slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// Where this thread is in the schedule (`arrivals::Pacer`, shared by both paths).
    pacer: RefCell<Pacer>,
    work: Notify,
    /// epoll: wakes the controller when a connection task ends or the pacer is spent.
    look: Notify,
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
        look: Notify::new(),
        pacer: RefCell::new(Pacer::new(warmup_slots)),
        idle: Cell::new(0),
        tasks: RefCell::new(Vec::with_capacity(cap)),
        tls: sh.tls.as_ref().map(|(setup, names)| setup.thread(names)),
        sh,
    });
    // a ring the thread cannot set up (a memory limit hit after the probe): this thread runs on
    // epoll, and the result says so
    let mut error = None;
    let on_ring = w.sh.io.path == IoPath::Uring
        && match uring::drive(&w) {
            Ok(broken) => {
                error = broken;
                true
            }
            Err(e) => {
                w.sh.ring_failures.lock().unwrap_or_else(|p| p.into_inner()).push(e);
                false
            }
        };
    if !on_ring {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
        let local = LocalSet::new();
        // the controller as a task of its own: block_on polls the future it is given at every
        // wake of any task (twice per request), and a JoinHandle costs less to poll than the
        // controller's select
        local.block_on(&rt, async {
            if let Err(e) = tokio::task::spawn_local(Rc::clone(&w).control()).await {
                if e.is_panic() {
                    std::panic::resume_unwind(e.into_panic());
                }
            }
        });
        drop(local);
    }
    w.flush_tsv();
    let mut stats = w.stats.replace(Stats::new());
    stats.connections_opened = w.opened.get();
    stats.tls_used = w.tls.is_some();
    ThreadOutput { stats, cpu: thread_cpu(), last_end: w.last_end.get(), error }
}

impl Worker {
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
