//! An engine thread on io_uring: one ring, one loop, no tasks. Each pass of the loop enters the
//! kernel once: it submits every operation queued since the last pass (sends, and for a new
//! connection a linked socket → TCP_NODELAY → connect → send → receive chain) and waits, until a
//! completion or the next due moment (an open-loop send time, a request's timeout, the end of a
//! second, the run's end) or a wake (a poll on the thread's eventfd: a cancel, the measured
//! phase's start), for completions. Sockets are direct descriptors in the ring's fixed
//! file table (slot i is connection i), receives are multishot into a provided-buffer ring, and a
//! successful send posts no completion, so a busy thread enters the kernel once per batch of
//! requests, not twice per request.
//!
//! What is measured, and how, is the epoll path's (`Worker::record`, `Worker::claim`, the same
//! response framing): only the clock readings differ, taken once per pass instead of per request.

use std::sync::atomic::Ordering;
use std::time::Duration;

use io_uring::{types, IoUring};
use tokio::time::Instant;

use super::lifecycle::Step;
use super::{Job, Worker};
use crate::connection::{Failure, Response};
use crate::spec::Addr;
use crate::stats::ErrorKind;
use socket2::SockAddr;
use crate::uring::{kernel, new_ring, BufRing};

mod complete;
mod slot;
mod submit;

use slot::{Attempt, Conn};

/// Each provided buffer: a whole small response, or a piece of a large one.
const BUF_SIZE: usize = 16 * 1024;
/// No slot (the ends of the list of busy slots).
const NONE: usize = usize::MAX;
/// The thread's ring and connections. Field order matters: the ring (which the kernel writes
/// buffers through) drops before the buffers.
struct Ring<'w> {
    ring: IoUring,
    bufs: BufRing,
    w: &'w Worker,
    conns: Vec<Conn>,
    /// The socket addresses of each distinct address (the kernel reads them when it connects).
    addrs: Vec<Vec<SockAddr>>,
    /// Open loop: slots free for the backlog's requests, the last freed on top.
    avail: Vec<usize>,
    /// The busy slots (none: `NONE`), oldest request first: their deadlines come in this order (each is its
    /// start plus the same timeout, and starts only grow).
    oldest: usize,
    newest: usize,
    /// Slots whose multishot receive ended while their exchange goes on.
    rearm: Vec<usize>,
    /// (slot, request number) of the requests queued this pass on an open connection: written
    /// when the pass's submission is made.
    sent: Vec<(usize, u64)>,
    cqes: Vec<(u64, i32, u32)>,
    seq: u64,
    now: Instant,
    /// The current second of the series: its end and its wake (a millisecond later), known
    /// from the measured phase's start on and computed again once `now` reaches the end.
    second: Option<(Instant, Instant)>,
    nodelay: bool,
    open_loop: bool,
    /// Closed loop: no request is left to claim.
    claims_done: bool,
    /// The ring failed (`io_uring_enter`): the load ends, what is in flight is aborted.
    broken: Option<String>,
    /// The thread's eventfd (`wake::Signal`), polled by the ring.
    wake_fd: std::os::fd::RawFd,
}

/// Runs this thread's share on a ring; an error (nothing was sent) when the ring cannot be set up.
/// Once set up, what broke the ring (if anything did) ended the thread's load early.
pub(super) fn drive(w: &Worker) -> Result<Option<String>, String> {
    let mut ring = Ring::new(w).map_err(|e| format!("io_uring: {e}"))?;
    ring.run();
    w.sh.signal.forget(ring.wake_fd);
    Ok(ring.broken.map(|e| format!("engine thread {}: {e}", w.id)))
}

impl<'w> Ring<'w> {
    fn new(w: &'w Worker) -> std::io::Result<Ring<'w>> {
        let cap = w.cap.max(1);
        let entries = (cap * 8).next_power_of_two().clamp(256, 4096) as u32;
        let ring = new_ring(entries)?;
        ring.submitter().register_files_sparse(cap as u32)?;
        let count = (cap * 2).next_power_of_two().clamp(64, 2048) as u16;
        let bufs = BufRing::new(&ring, count, BUF_SIZE)?;
        let spec = &w.sh.spec;
        let distinct = w.sh.addr_ids.iter().copied().max().map_or(0, |m| m + 1);
        let mut addrs: Vec<Vec<SockAddr>> = (0..distinct).map(|_| Vec::new()).collect();
        for (t, &id) in spec.targets.iter().zip(&w.sh.addr_ids) {
            if addrs[id].is_empty() {
                addrs[id] = match &t.addr {
                    Addr::Tcp(list) => list.iter().map(|&sa| SockAddr::from(sa)).collect(),
                    // a path too long for a sockaddr_un is refused by Spec::validate
                    Addr::Unix(path) => vec![SockAddr::unix(path)?],
                };
            }
        }
        // the last that may fail: a ring not set up leaves no eventfd behind
        let wake_fd = w.sh.signal.eventfd()?;
        let now = Instant::now();
        let idle = Job { slot: 0, intended: now, measured: false };
        let mut ring = Ring {
            ring,
            bufs,
            w,
            conns: (0..cap).map(|_| Conn::new(idle)).collect(),
            addrs,
            avail: if w.sh.schedule.is_some() { (0..cap).rev().collect() } else { Vec::new() },
            oldest: NONE,
            newest: NONE,
            rearm: Vec::with_capacity(cap),
            sent: Vec::with_capacity(cap),
            cqes: Vec::with_capacity(entries as usize * 2),
            seq: 0,
            now,
            second: None,
            nodelay: kernel().setsockopt,
            open_loop: w.sh.schedule.is_some(),
            claims_done: false,
            broken: None,
            wake_fd,
        };
        ring.arm_wake();
        Ok(ring)
    }

    /// The thread's life: start, load until the deadline, cancel or the last request, drain,
    /// count what is left as aborted, hand over the last second.
    fn run(&mut self) {
        let w = self.w;
        // the start (start_at), or a cancel (its wake) while waiting for it
        while let Some(until) = w.start_wait() {
            self.enter(Some(until));
            if self.broken.is_some() {
                break;
            }
        }
        w.begin();
        self.now = Instant::now();
        // closed loop: every slot claims its first request (unless cancelled while waiting)
        if !self.open_loop && !w.sh.cancel.load(Ordering::Relaxed) && self.broken.is_none() {
            for i in 0..self.conns.len() {
                self.next_claim(i);
            }
        }
        let by_clock = loop {
            if self.broken.is_some() {
                break true;
            }
            self.now = Instant::now();
            let now = self.now;
            w.advance_interval(&mut w.interval.borrow_mut(), now);
            // the clock first (what falls due after the end is not the run's)
            let wake = match w.step(now, 1, true) {
                Step::End { by_clock } => break by_clock,
                Step::Go { wake } => wake,
            };
            if self.open_loop {
                // what fell due before this pass goes to the backlog, and to free connections
                w.release_due(now);
                self.dispatch();
            }
            self.expire();
            // nothing in flight: the load may be over (one look per pass while requests are)
            if self.oldest == NONE {
                if let Step::End { by_clock } = w.step(now, 0, !self.claims_done) {
                    break by_clock;
                }
            }
            // the first due of: the deadline, the second's end, the next arrival, the oldest
            // request's timeout (none: a completion or a wake)
            let mut wake = earliest(wake, self.next_second());
            if self.open_loop {
                wake = earliest(wake, w.next_arrival());
            }
            self.enter(earliest(wake, self.next_timeout()));
        };
        // the arrivals due by the end: the free connections take them, the others are unsent
        // (after a cancel, all of them)
        let (cancelled, _) = w.end_load(by_clock);
        if by_clock && !cancelled && self.open_loop && self.broken.is_none() {
            self.dispatch();
        }
        let drain_end = w.stop_for_drain(cancelled);
        while self.oldest != NONE && self.broken.is_none() && Instant::now() < drain_end {
            self.now = Instant::now();
            w.advance_interval(&mut w.interval.borrow_mut(), self.now);
            self.expire();
            if self.oldest == NONE {
                break;
            }
            let wake = earliest(earliest(Some(drain_end), self.next_second()), self.next_timeout());
            self.enter(wake);
        }
        self.now = Instant::now();
        for i in 0..self.conns.len() {
            if self.conns[i].busy() {
                self.abort(i);
            }
            // every connection closed now, as the epoll path's end drops them (the last closes
            // queued by the last pass included): not when the ring is torn down after the run
            self.close(i);
        }
        let _ = self.ring.submit();
        self.w.end_life();
    }

    /// When the oldest request in flight times out (None when none is in flight).
    fn next_timeout(&self) -> Option<Instant> {
        match self.oldest {
            NONE => None,
            i => Some(self.conns[i].deadline),
        }
    }

    /// When the current second of the series ends (plus a millisecond); None before the measured
    /// phase's start is known (its wake comes then). Computed once a second: the start, once
    /// known, stays, and `now` only grows.
    fn next_second(&mut self) -> Option<Instant> {
        if let Some((end, wake)) = self.second {
            if self.now < end {
                return Some(wake);
            }
        }
        let m = self.w.sh.measure_start()?;
        let elapsed = self.now.saturating_duration_since(m).as_secs();
        let end = m + Duration::from_secs(elapsed + 1);
        let wake = end + Duration::from_millis(1);
        self.second = Some((end, wake));
        Some(wake)
    }

    /// Submits what was queued and waits until a completion or `wake` (None: a completion, the
    /// eventfd's among them), then handles every completion there is.
    fn enter(&mut self, wake: Option<Instant>) {
        let before = Instant::now();
        for (i, seq) in self.sent.drain(..) {
            let c = &mut self.conns[i];
            // not if that request has ended since, or its slot opens a new connection for it
            if c.busy() && c.seq == seq && c.connecting.is_none() {
                c.written.get_or_insert(before);
            }
        }
        self.bufs.publish();
        let submitted = match wake {
            Some(at) => {
                let ts = types::Timespec::from(at.saturating_duration_since(before));
                self.ring.submitter().submit_with_args(1, &types::SubmitArgs::new().timespec(&ts))
            }
            None => self.ring.submit_and_wait(1),
        };
        if let Err(e) = submitted {
            match e.raw_os_error() {
                Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN) => {}
                // the thread ends its load here, and the run reports it (`engine_errors`)
                _ => self.broken = Some(format!("io_uring_enter: {e}")),
            }
        }
        self.reap();
    }

    fn reap(&mut self) {
        self.now = Instant::now();
        let mut cqes = std::mem::take(&mut self.cqes);
        loop {
            cqes.clear();
            cqes.extend(self.ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
            if cqes.is_empty() {
                break;
            }
            for &(data, res, flags) in &cqes {
                self.complete(data, res, flags);
            }
        }
        self.cqes = cqes;
        while let Some(i) = self.rearm.pop() {
            let c = &self.conns[i];
            if c.busy() && !c.recv_armed {
                self.arm_recv(i);
            }
        }
        if self.open_loop {
            self.dispatch();
        }
    }

    /// Slot i's response is complete (`reusable`: as the response allows): count it, keep or
    /// close the connection, take the next.
    fn finish(&mut self, i: usize, reusable: bool) {
        let w = self.w;
        let c = &mut self.conns[i];
        let target = &w.sh.spec.targets[c.index];
        let response = Response {
            status: c.response.status().expect("a complete response has a head"),
            connect: c.connect,
            tls: None,
            written: c.written.unwrap_or(c.start),
            first_byte: c.first_byte.expect("a complete response has bytes"),
            bytes_in: c.bytes_in,
            body: c.response.payload(),
        };
        w.record(c.job, c.index, target.request.len(), c.start, self.now, &Ok(response));
        c.served += 1;
        let limit = w.sh.spec.calls_per_conn;
        let keep = reusable && w.sh.spec.keepalive && (limit == 0 || c.served < limit);
        self.release(i);
        if !keep {
            self.close(i);
        }
        self.after(i);
    }

    /// A failure: sent once more on a new connection when it came on a reused one before any byte
    /// of the response (the server closed it while idle), else counted.
    fn fail_or_retry(&mut self, i: usize, kind: ErrorKind) {
        let c = &self.conns[i];
        if let Some(again) = c.attempt.after_failure(c.bytes_in, kind) {
            self.close(i);
            let c = &mut self.conns[i];
            c.attempt = again;
            c.try_addr = 0;
            self.open(i);
            return;
        }
        self.fail(i, kind);
    }

    /// Counts slot i's request as failed (its bytes count as sent if its request went out) and
    /// closes the connection.
    fn fail(&mut self, i: usize, kind: ErrorKind) {
        let w = self.w;
        let c = &self.conns[i];
        let failure = Failure { kind, bytes_in: c.bytes_in, sent: c.written.is_some() };
        let len = w.sh.spec.targets[c.index].request.len();
        w.record(c.job, c.index, len, c.start, self.now, &Err(failure));
        self.release(i);
        self.close(i);
        self.after(i);
    }

    /// The request on slot i has ended.
    fn release(&mut self, i: usize) {
        let (prev, next) = (self.conns[i].prev, self.conns[i].next);
        match prev {
            NONE => self.oldest = next,
            p => self.conns[p].next = next,
        }
        match next {
            NONE => self.newest = prev,
            n => self.conns[n].prev = prev,
        }
        let c = &mut self.conns[i];
        (c.prev, c.next) = (NONE, NONE);
        c.ended();
    }

    /// Slot i is free: closed loop, its next request; open loop, back in the free list.
    fn after(&mut self, i: usize) {
        if self.open_loop {
            let c = &mut self.conns[i];
            if !c.listed {
                c.listed = true;
                self.avail.push(i);
            }
        } else if !self.w.stopping.get() {
            self.next_claim(i);
        }
    }

    fn next_claim(&mut self, i: usize) {
        if self.claims_done {
            return;
        }
        match self.w.claim() {
            Some(job) => self.start(i, job),
            None => self.claims_done = true,
        }
    }

    /// Starts `job` on slot i (free): on its open connection to the target's address, or a new one.
    fn start(&mut self, i: usize, job: Job) {
        let w = self.w;
        w.began();
        let index = w.picker.borrow_mut().pick(job.slot);
        let addr_id = w.sh.addr_ids[index];
        // closed loop: the request is meant to go now, so its claim time is its start
        let start = if self.open_loop { self.now } else { job.intended };
        self.seq += 1;
        // the newest request: last in the list of busy slots
        match self.newest {
            NONE => self.oldest = i,
            n => self.conns[n].next = i,
        }
        (self.conns[i].prev, self.conns[i].next) = (self.newest, NONE);
        self.newest = i;
        if self.conns[i].is_open() && self.conns[i].addr_id != addr_id {
            self.close(i);
        }
        let c = &mut self.conns[i];
        c.job = job;
        c.index = index;
        c.start = start;
        c.deadline = start + w.sh.spec.timeout;
        c.seq = self.seq;
        c.addr_id = addr_id;
        c.reset_exchange(w.sh.spec.targets[index].head);
        c.attempt = Attempt::first(c.is_open());
        if c.is_open() {
            c.reusing();
            self.send(i);
        } else {
            // (busy from its opening on)
            c.try_addr = 0;
            self.open(i);
        }
    }

    /// Counts requests past their timeout as timed out (sent if their request went out; the bytes
    /// of a response cut short are not counted, as on the epoll path).
    fn expire(&mut self) {
        while self.oldest != NONE && self.conns[self.oldest].deadline <= self.now {
            let i = self.oldest;
            self.conns[i].bytes_in = 0;
            self.fail(i, ErrorKind::Timeout);
        }
    }

    /// Open loop: the backlog's requests to free slots, oldest first.
    fn dispatch(&mut self) {
        if self.w.stopping.get() {
            return;
        }
        while !self.w.backlog.borrow().is_empty() {
            let Some(i) = self.avail.pop() else { break };
            self.conns[i].listed = false;
            if self.conns[i].busy() {
                continue;
            }
            let job = self.w.backlog.borrow_mut().pop_front().expect("not empty");
            self.start(i, job);
        }
    }

    /// A request still in flight when the drain ended: aborted (as the epoll path's `InFlight`).
    fn abort(&mut self, i: usize) {
        let w = self.w;
        w.ended();
        let c = &self.conns[i];
        let mut s = w.stats.borrow_mut();
        if !c.job.measured {
            s.warmup_failed += 1;
            return;
        }
        s.record_error(ErrorKind::Aborted, None);
        if c.written.is_some() {
            s.bytes_sent += w.sh.spec.targets[c.index].request.len() as u64;
        }
        w.sh.counters[w.id].failed.fetch_add(1, Ordering::Relaxed);
        let mut iv = w.interval.borrow_mut();
        w.advance_interval(&mut iv, self.now);
        iv.fail(ErrorKind::Aborted);
    }
}

/// The earlier of two moments, either of which may be none (none: nothing due).
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earliest_of_two_moments_is_the_first_known() {
        let t = Instant::now();
        let later = t + Duration::from_millis(1);
        assert_eq!(earliest(Some(later), Some(t)), Some(t));
        assert_eq!(earliest(Some(t), None), Some(t));
        assert_eq!(earliest(None, Some(later)), Some(later));
        assert_eq!(earliest(None, None), None);
    }
}
