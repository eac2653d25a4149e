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
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::{JoinHandle, LocalSet};
use tokio::time::{Instant, Sleep};

use crate::connection::{Connection, Failure, Reuse};
use crate::pacer::{Picker, Schedule};
use crate::spec::{Spec, Warmup};
use crate::stats::{ErrorKind, Interval, Stats};
use crate::timer::PreciseTimer;
use crate::tls::{RunTls, Tls};
use crate::uring::{IoChoice, IoPath};
use arrivals::Arrivals;

mod arrivals;
mod collect;
mod lifecycle;
mod record;
mod run;
mod uring;
mod vu;

use collect::{Msg, ThreadOutput};
use lifecycle::Step;
use record::InFlight;
pub use run::{run, Progress, Run};
use run::unix_us;

/// How long requests in flight at the end may take to finish before they count as aborted.
const DRAIN: Duration = Duration::from_secs(1);
/// How long after its start call a replay's clock starts (without `start_at`), so that its
/// first requests, due at once, do not wait for the threads to start.
const REPLAY_LEAD: Duration = Duration::from_millis(50);
/// The same after a cancel (Ctrl-C, SIGTERM): the caller has promised to stop within a second.
const CANCEL_DRAIN: Duration = Duration::from_millis(200);
/// How often the ring's loop (which waits on no signal) looks at the cancel flag.
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
    /// Wakes the threads' controllers (epoll) when what they wait for changes: a cancel, the
    /// measured phase's start (a deadline known from then).
    signal: Notify,
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
            self.signal.notify_waiters();
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
        arrivals: RefCell::new(Arrivals::default()),
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
        local.block_on(&rt, Rc::clone(&w).control());
        drop(local);
    }
    w.flush_tsv();
    let mut stats = w.stats.replace(Stats::new());
    stats.connections_opened = w.opened.get();
    stats.tls_used = w.tls.is_some();
    ThreadOutput { stats, cpu: thread_cpu(), last_end: w.last_end.get(), error }
}

impl Worker {
    /// Starts the tasks, stops them at the deadline or on cancel, drains, and hands over the
    /// last second.
    async fn control(self: Rc<Self>) {
        // a start in the future (start_at): wait for it, and for nothing longer than a cancel
        loop {
            let signal = self.sh.signal.notified();
            tokio::pin!(signal);
            signal.as_mut().enable();
            let Some(until) = self.start_wait() else { break };
            tokio::select! {
                () = tokio::time::sleep_until(until) => {}
                () = signal => {}
            }
        }
        self.begin();
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
        // requests ran out, it ends with its last answer. It looks again when the deadline comes,
        // on a cancel or the measured phase's start (`signal`), or when a task ends (`look`).
        let by_clock = loop {
            let signal = self.sh.signal.notified();
            tokio::pin!(signal);
            // listening before the look: a signal after it is not missed
            signal.as_mut().enable();
            match self.step(Instant::now(), self.live.get(), false) {
                Step::End { by_clock } => break by_clock,
                Step::Go { wake } => tokio::select! {
                    () = sleep_until(wake) => {}
                    () = signal => {}
                    () = self.look.notified() => {}
                },
            }
        };
        // the arrivals due by the end: the idle connections (and those the cap still allow) take
        // them after the stop, the others are unsent (after the drain)
        let (cancelled, due) = self.end_load(by_clock);
        (0..due).for_each(|_| self.hand_out());
        let drain_end = self.stop_for_drain(cancelled);
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
        self.end_life();
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
        let _alive = Alive(&self);
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
        // the controller looks again (a schedule cut by -n ends with its last answer)
        self.look.notify_one();
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

/// Sleeps until `wake`; forever when there is none.
async fn sleep_until(wake: Option<Instant>) {
    match wake {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Counts a connection task as alive until it ends, however it ends.
struct Alive<'a>(&'a Worker);

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        let live = &self.0.live;
        live.set(live.get() - 1);
        if live.get() == 0 {
            // the controller looks again (a load whose requests ran out ends with its last answer)
            self.0.look.notify_one();
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
