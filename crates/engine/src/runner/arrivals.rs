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
//! `Pacer::due(now)` is the rule of one thread's place in the schedule (no clock read: `now` is
//! given; no shared state: the global schedule's slots come through the `claim` it is handed).
//! The epoll path's pacer task sleeps until `next_arrival` and hands out what `release_due` moved
//! to the backlog; the ring's loop does the same once per pass. At the end both call
//! `release_due` up to the end, give free connections what they can take, then `count_unsent`.

use tokio::time::Instant;

use super::{Job, Worker};

/// A slot of the global schedule claimed by a thread (its number, its intended time), or, when
/// none is left, whether the schedule ended (`ran_out`; else `-n` cut it).
pub(super) type Claim = Result<(u64, Instant), bool>;

/// What the pacer says at a moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Due {
    /// This arrival is due (taken: it goes to the backlog).
    Now(Job),
    /// The next arrival is due then.
    At(Instant),
    /// This thread's share is spent.
    Spent,
}

/// A thread's place in the global schedule: the slot it claimed next (not yet due), and whether
/// its share is spent.
pub(super) struct Pacer {
    next: Option<Job>,
    done: bool,
    /// Spent because the schedule ended (not because `-n` cut it): the run then lasts until the
    /// schedule's end, whenever its last answer came.
    ran_out: bool,
    /// The run's warm-up slots (`-n` warm-up): an arrival of a lower slot is not measured.
    warmup_slots: u64,
}

impl Pacer {
    pub fn new(warmup_slots: u64) -> Pacer {
        Pacer { next: None, done: false, ran_out: false, warmup_slots }
    }

    /// No arrival is left for this thread.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Spent by the schedule's end, not by `-n`.
    pub fn ran_out(&self) -> bool {
        self.ran_out
    }

    /// When the next arrival is due, claiming it (`claim`) when none is claimed; None when the
    /// share is spent. An arrival is measured when it is past the warm-up's slots and due at or
    /// after the measured phase's start (`measure_start`).
    pub fn next(&mut self, measure_start: Instant, claim: impl FnOnce() -> Claim) -> Option<Instant> {
        if self.next.is_none() && !self.done {
            match claim() {
                Ok((slot, intended)) => {
                    let measured = slot >= self.warmup_slots && intended >= measure_start;
                    self.next = Some(Job { slot, intended, measured });
                }
                Err(ran_out) => {
                    self.ran_out = ran_out;
                    self.done = true;
                }
            }
        }
        self.next.map(|job| job.intended)
    }

    /// At `now`: the next arrival if it is due (taken), else when it will be, or none left.
    pub fn due(&mut self, now: Instant, measure_start: Instant, claim: impl FnOnce() -> Claim) -> Due {
        match self.next(measure_start, claim) {
            None => Due::Spent,
            Some(at) if at <= now => Due::Now(self.next.take().expect("claimed")),
            Some(at) => Due::At(at),
        }
    }
}

impl Worker {
    /// A slot of the global schedule for this thread (`Pacer`'s claim).
    fn claim_arrival(&self) -> Claim {
        let sh = &self.sh;
        let schedule = sh.schedule.as_ref().expect("open loop");
        match sh.take_slot().and_then(|slot| Some((slot, schedule.time_of(slot)?))) {
            Some((slot, offset)) => Ok((slot, sh.start + offset)),
            None => Err(sh.slot_limit >= schedule.total()),
        }
    }

    /// Open loop: when this thread's next arrival is due, claiming it from the global schedule
    /// when none is claimed; None when its share is spent.
    pub(super) fn next_arrival(&self) -> Option<Instant> {
        let measure_start = self.sh.measure_start().expect("known in open loop");
        self.pacer.borrow_mut().next(measure_start, || self.claim_arrival())
    }

    /// Moves every arrival due at or before `upto` to the backlog (they wait there for a free
    /// connection); how many.
    pub(super) fn release_due(&self, upto: Instant) -> usize {
        let measure_start = self.sh.measure_start().expect("known in open loop");
        let mut moved = 0;
        while let Due::Now(job) = self.pacer.borrow_mut().due(upto, measure_start, || self.claim_arrival()) {
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A schedule of arrivals every 10 ms from `t0`, `n` of them, then spent (`ran_out`).
    fn every_10ms(t0: Instant, n: u64, ran_out: bool) -> impl FnMut() -> Claim {
        let mut k = 0;
        move || {
            k += 1;
            if k > n {
                return Err(ran_out);
            }
            Ok((k - 1, t0 + Duration::from_millis(10 * (k - 1))))
        }
    }

    #[test]
    fn an_arrival_is_due_at_its_time_not_before() {
        let t0 = Instant::now();
        let mut claim = every_10ms(t0, 3, true);
        let mut p = Pacer::new(0);
        let ms = |m| t0 + Duration::from_millis(m);
        assert!(matches!(p.due(ms(0), t0, &mut claim), Due::Now(j) if j.slot == 0 && j.intended == t0 && j.measured));
        assert_eq!(p.due(ms(9), t0, &mut claim), Due::At(ms(10)));
        // what is claimed stays claimed: no slot is taken while waiting for it
        assert_eq!(p.due(ms(9), t0, || panic!("claimed already")), Due::At(ms(10)));
        // late: both due ones, oldest first
        assert!(matches!(p.due(ms(25), t0, &mut claim), Due::Now(j) if j.slot == 1));
        assert!(matches!(p.due(ms(25), t0, &mut claim), Due::Now(j) if j.slot == 2));
        assert_eq!(p.due(ms(25), t0, &mut claim), Due::Spent);
        assert!(p.done() && p.ran_out());
        assert_eq!(p.due(ms(99), t0, || panic!("spent")), Due::Spent);
    }

    #[test]
    fn a_share_cut_by_requests_did_not_run_out() {
        let t0 = Instant::now();
        let mut p = Pacer::new(0);
        assert_eq!(p.next(t0, every_10ms(t0, 0, false)), None);
        assert!(p.done() && !p.ran_out());
    }

    #[test]
    fn warm_up_slots_and_arrivals_before_the_measured_start_are_not_measured() {
        let t0 = Instant::now();
        let measure = t0 + Duration::from_millis(15);
        let mut claim = every_10ms(t0, 4, true);
        // slot 0: a warm-up slot; slot 1 (10 ms): before the measured start; 2 and 3 measured
        let mut p = Pacer::new(1);
        let far = t0 + Duration::from_secs(1);
        let measured: Vec<bool> = std::iter::from_fn(|| match p.due(far, measure, &mut claim) {
            Due::Now(j) => Some(j.measured),
            _ => None,
        })
        .collect();
        assert_eq!(measured, [false, false, true, true]);
    }
}
