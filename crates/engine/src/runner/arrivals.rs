//! Open loop's arrivals, one core for both I/O paths (no I/O here: no sleeping, no sockets).
//!
//! The rule (docs/reference/engine-contract.md, "Overload"): an arrival that finds every connection of its
//! thread busy (the cap reached) waits in the thread's backlog and is sent when a connection is
//! free, *late*, its latency counted from its intended time; the run ends at the schedule's end
//! (the stages' length; a replay's `-d`, or its last request's time), never later. At the end,
//! the arrivals due by then that a free connection can take are sent; those still waiting are
//! *unsent*. The requests in flight then have the drain to finish. So every arrival due before
//! the end is sent or unsent, once: `sent + unsent = arrivals`. A cancel sends nothing more: the
//! arrivals due by then and waiting are unsent.
//!
//! The epoll path's pacer task sleeps until `next_due` and hands out what `release` moved to the
//! backlog; the ring's loop does the same once per pass. At the end both call `release` up to the
//! end, give free connections what they can take, then `count_unsent`.

use tokio::time::Instant;

use super::{Job, Worker};

/// A thread's place in the global schedule: the slot it claimed next (not yet due), and whether
/// its share is spent.
#[derive(Default)]
pub(super) struct Arrivals {
    next: Option<Job>,
    done: bool,
    /// Spent because the schedule ended (not because `-n` cut it): the run then lasts until the
    /// schedule's end, whenever its last answer came.
    ran_out: bool,
}

impl Arrivals {
    /// No arrival is left for this thread.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Spent by the schedule's end, not by `-n`.
    pub fn ran_out(&self) -> bool {
        self.ran_out
    }
}

impl Worker {
    /// Open loop: when this thread's next arrival is due, claiming it from the global schedule
    /// when none is claimed; None when its share is spent.
    pub(super) fn next_arrival(&self) -> Option<Instant> {
        let mut a = self.arrivals.borrow_mut();
        if a.next.is_none() && !a.done {
            let sh = &self.sh;
            let schedule = sh.schedule.as_ref().expect("open loop");
            match sh.take_slot().and_then(|slot| Some((slot, schedule.time_of(slot)?))) {
                Some((slot, offset)) => {
                    let intended = sh.start + offset;
                    let measure_start = sh.measure_start().expect("known in open loop");
                    let measured = slot >= self.warmup_slots && intended >= measure_start;
                    a.next = Some(Job { slot, intended, measured });
                }
                None => {
                    a.ran_out = sh.slot_limit >= schedule.total();
                    a.done = true;
                }
            }
        }
        a.next.map(|job| job.intended)
    }

    /// Moves every arrival due at or before `upto` to the backlog (they wait there for a free
    /// connection); how many.
    pub(super) fn release_due(&self, upto: Instant) -> usize {
        let mut moved = 0;
        while self.next_arrival().is_some_and(|at| at <= upto) {
            let job = self.arrivals.borrow_mut().next.take().expect("claimed");
            self.backlog.borrow_mut().push_back(job);
            moved += 1;
        }
        moved
    }

    /// The end: the arrivals still waiting in the backlog are unsent (measured ones counted).
    pub(super) fn count_unsent(&self) {
        let unsent = self.backlog.borrow_mut().drain(..).filter(|j| j.measured).count() as u64;
        self.stats.borrow_mut().unsent += unsent;
    }
}
