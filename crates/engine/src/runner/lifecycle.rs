//! An engine thread's life, one core for both I/O paths (no I/O here: no sleeping, no sockets):
//! wait for the start (or a cancel), load until the clock (the deadline, a cancel) or the last
//! request ends it, then the end (the arrivals due by then, `arrivals`), the stop, the drain (1 s,
//! 200 ms after a cancel), and the last second handed over. The epoll path's controller and the
//! ring's loop each call `step` whenever they wake and do what it says; `decide` is the rule.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::{unix_us, Worker, CANCEL_DRAIN, DRAIN};

/// What a loading thread does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Go on loading; look again by `wake` at the latest (the deadline; none: when something
    /// changes, a cancel or the last request's end).
    Go { wake: Option<Instant> },
    /// The load is over: by the clock (the deadline or a cancel: the run ends now), or not (its
    /// requests ran out: it ends with its last answer).
    End { by_clock: bool },
}

/// The rule: a cancel or the deadline ends the load by the clock; else it ends when nothing is
/// in flight and nothing more will come (`finished`).
pub(super) fn decide(now: Instant, cancelled: bool, deadline: Option<Instant>, live: usize, finished: bool) -> Step {
    if cancelled || deadline.is_some_and(|d| now >= d) {
        return Step::End { by_clock: true };
    }
    if live == 0 && finished {
        return Step::End { by_clock: false };
    }
    Step::Go { wake: deadline }
}

/// Before the start: until when to wait (None: start now, or cancelled while waiting).
pub(super) fn until_start(now: Instant, start: Instant, cancelled: bool) -> Option<Instant> {
    (now < start && !cancelled).then_some(start)
}

/// How long the requests in flight at the end may take.
pub(super) fn drain_time(cancelled: bool) -> Duration {
    if cancelled {
        CANCEL_DRAIN
    } else {
        DRAIN
    }
}

impl Worker {
    /// Before the start (`start_at`): when to look again; None once the thread may begin.
    pub(super) fn start_wait(&self) -> Option<Instant> {
        until_start(Instant::now(), self.sh.start, self.sh.cancel.load(Ordering::Relaxed))
    }

    /// The thread begins (cancelled while waiting: nothing will be sent, it never began).
    pub(super) fn begin(&self) {
        if !self.sh.cancel.load(Ordering::Relaxed) {
            self.sh.began_unix_us.fetch_min(unix_us(), Ordering::Relaxed);
        }
    }

    /// One look at a loading thread: `live` requests (epoll: connection tasks) in flight;
    /// `claiming`: closed loop, requests may still be claimed. Open loop: a schedule sent in full
    /// still runs to its end (its length is the run's duration); one cut short by `-n` ends with
    /// its last answer.
    pub(super) fn step(&self, now: Instant, live: usize, claiming: bool) -> Step {
        let finished = if self.sh.schedule.is_some() { self.ended_by_requests() } else { !claiming };
        decide(now, self.sh.cancel.load(Ordering::Relaxed), self.sh.deadline(), live, finished)
    }

    /// The load is over: a run stopped by the clock ends at its deadline (now after a cancel) and,
    /// open loop, the arrivals due by then go to the backlog. Whether it was cancelled, and how
    /// many arrivals the free connections are to take before the stop (none after a cancel).
    pub(super) fn end_load(&self, by_clock: bool) -> (bool, usize) {
        let cancelled = self.sh.cancel.load(Ordering::Relaxed);
        if !by_clock {
            return (cancelled, 0);
        }
        let end = self.end_moment(cancelled);
        self.last_end.set(self.last_end.get().max(Some(end)));
        if self.sh.schedule.is_none() {
            return (cancelled, 0);
        }
        let due = self.release_due(end);
        (cancelled, if cancelled { 0 } else { due })
    }

    /// The stop: no new request starts (after a cancel, what waits is unsent at once); when the
    /// drain ends.
    pub(super) fn stop_for_drain(&self, cancelled: bool) -> Instant {
        self.stop();
        if cancelled {
            self.count_unsent();
        }
        Instant::now() + drain_time(cancelled)
    }

    /// The thread's end: what still waits is unsent, the last second handed over.
    pub(super) fn end_life(&self) {
        self.count_unsent();
        self.hand_over_interval();
    }

    /// Open loop: the schedule was spent by `-n`, not by its end: the run ends with its last answer.
    pub(super) fn ended_by_requests(&self) -> bool {
        let a = self.pacer.borrow();
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
    pub(super) fn stop(&self) {
        self.stopping.set(true);
        self.sh.stopped.store(true, Ordering::Relaxed);
        self.wake_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_ends_a_load_first() {
        let now = Instant::now();
        let later = now + Duration::from_secs(1);
        assert_eq!(decide(now, true, Some(later), 3, false), Step::End { by_clock: true });
        assert_eq!(decide(later, false, Some(later), 3, false), Step::End { by_clock: true });
        // a cancel when nothing is left is still a cancel (its end is now)
        assert_eq!(decide(now, true, None, 0, true), Step::End { by_clock: true });
    }

    #[test]
    fn the_last_answer_ends_a_finished_load() {
        let now = Instant::now();
        assert_eq!(decide(now, false, None, 0, true), Step::End { by_clock: false });
        assert_eq!(decide(now, false, None, 1, true), Step::Go { wake: None });
        assert_eq!(decide(now, false, None, 0, false), Step::Go { wake: None });
    }

    #[test]
    fn a_loading_thread_wakes_by_the_deadline() {
        let now = Instant::now();
        let soon = now + Duration::from_millis(3);
        assert_eq!(decide(now, false, Some(soon), 1, false), Step::Go { wake: Some(soon) });
    }

    #[test]
    fn the_start_and_the_drain() {
        let now = Instant::now();
        let start = now + Duration::from_millis(4);
        assert_eq!(until_start(now, start, false), Some(start));
        assert_eq!(until_start(now, start, true), None);
        assert_eq!(until_start(start, start, false), None);
        assert_eq!(drain_time(false), DRAIN);
        assert_eq!(drain_time(true), CANCEL_DRAIN);
    }
}
