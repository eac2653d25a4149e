//! An engine thread on tokio's epoll reactor: its controller (the thread's life, `lifecycle`,
//! waiting on signals), its connection tasks (each takes jobs until there are none or the run
//! stops) and, open loop, its pacer task (the arrivals, `arrivals`, handed out at their times).

use std::cell::Cell;
use std::pin::Pin;
use std::rc::Rc;
use tokio::time::{Instant, Sleep};

use super::lifecycle::Step;
use super::{InFlight, Job, Next, Worker};
use crate::connection::{Connection, Failure, Reuse};
use crate::stats::ErrorKind;
use crate::timer::PreciseTimer;

impl Worker {
    /// Starts the tasks, stops them at the deadline or on cancel, drains, and hands over the
    /// last second.
    pub(super) async fn control(self: Rc<Self>) {
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
        // until the last task ends (`Alive` says so on `look`) or the drain's end
        while self.live.get() > 0 {
            tokio::select! {
                () = tokio::time::sleep_until(drain_end) => break,
                () = self.look.notified() => {}
            }
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

    pub(super) fn wake_all(&self) {
        self.idle.set(0);
        self.work.notify_waiters();
    }

    /// epoll, open loop: a request was put in the backlog: an idle connection task is woken for
    /// it, else a connection opened when the cap allows; else it waits for a busy one.
    pub(super) fn hand_out(self: &Rc<Self>) {
        if self.idle.get() > 0 {
            self.idle.set(self.idle.get() - 1);
            self.work.notify_one();
        } else if self.live.get() < self.cap {
            self.spawn_connection();
        }
    }

    pub(super) fn spawn_connection(self: &Rc<Self>) {
        self.live.set(self.live.get() + 1);
        let task = match self.sh.spec.scenario {
            None => tokio::task::spawn_local(Rc::clone(self).connection()),
            // a scenario: the task is a virtual user (vu.rs)
            Some(_) => tokio::task::spawn_local(Rc::clone(self).virtual_user()),
        };
        self.tasks.borrow_mut().push(task);
    }

    /// A connection task's connection (plain or virtual user's): the spec's reuse, this thread's TLS.
    pub(super) fn task_connection<'a>(&'a self, written: &'a Cell<bool>) -> Connection<'a> {
        let spec = &self.sh.spec;
        let reuse =
            Reuse { keepalive: spec.keepalive, calls_per_conn: spec.calls_per_conn, throttle_bps: spec.throttle_bps };
        Connection::new(reuse, &self.opened, written).with_tls(self.tls.as_ref())
    }

    /// A connection task: takes jobs until there are none or the run stops.
    pub(super) async fn connection(self: Rc<Self>) {
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
    pub(super) fn next_job(&self, was_idle: bool) -> Next {
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
            None if stopping || self.pacer.borrow().done() => Next::Stop,
            None => {
                self.idle.set(self.idle.get() + 1);
                Next::Wait
            }
        }
    }

    /// Open loop: claims slots of the global schedule and hands out each at its time.
    pub(super) async fn pace(self: Rc<Self>) {
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

    pub(super) async fn serve(&self, conn: &mut Connection<'_>, written: &Cell<bool>, mut timeout: Pin<&mut Sleep>, job: Job) {
        let index = self.picker.borrow_mut().pick(job.slot);
        let target = &self.sh.spec.targets[index];
        written.set(false);
        let in_flight = InFlight::new(self, job.measured, written, target.request.len(), None);
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
pub(super) fn settle_timeout<T>(result: &mut Result<T, Failure>, conn: &mut Connection<'_>) {
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
pub(super) struct Alive<'a>(pub(super) &'a Worker);

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
