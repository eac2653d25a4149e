//! A connection task that is a virtual user of the spec's scenario: each job it takes sends its
//! session's next step (the login steps first, then the loop steps round and round). Apart from
//! `connection` and `serve`, which stay the plain path's alone.

use std::cell::Cell;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use super::{settle_timeout, Alive, InFlight, Job, Next, Worker};
use crate::connection::{Connection, Failure};
use crate::session::Session;
use crate::stats::ErrorKind;

impl Worker {
    /// A connection task that is one virtual user: takes jobs as `connection` does (the same
    /// rules: closed loop, claims; open loop, the backlog), each one its session's next step.
    pub(super) async fn virtual_user(self: Rc<Self>) {
        let sc = self.sh.spec.scenario.as_ref().expect("a virtual user has a scenario");
        let _alive = Alive(&self);
        let written = Cell::new(false);
        let mut conn = self.task_connection(&written);
        let timeout = tokio::time::sleep(self.sh.spec.timeout);
        tokio::pin!(timeout);
        let mut vu = Session::new(sc);
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
            if let Some(pause) = self.serve_step(&mut vu, &mut conn, &written, timeout.as_mut(), job).await {
                self.think(pause).await;
            }
        }
    }

    /// Sends the session's next step for `job` and counts it, in the run's totals and in its
    /// step's; the pause to make before the next one (closed loop: its think time, not measured,
    /// unless the run has no slot left).
    async fn serve_step(
        &self,
        vu: &mut Session<'_>,
        conn: &mut Connection<'_>,
        written: &Cell<bool>,
        mut timeout: Pin<&mut Sleep>,
        job: Job,
    ) -> Option<Duration> {
        let sc = self.sh.spec.scenario.as_ref().expect("a virtual user has a scenario");
        let index = vu.next_step();
        let step = &sc.steps[index];
        let target = &self.sh.spec.targets[step.target];
        let request_len = vu.render(target.tls_name.is_some()).len();
        written.set(false);
        let in_flight = InFlight::new(self, job.measured, written, request_len, Some(index));
        // Closed loop: the request is meant to go now, so its claim time is its start.
        let start = if self.sh.schedule.is_some() { Instant::now() } else { job.intended };
        timeout.as_mut().reset(start + self.sh.spec.timeout);
        let (request, user) = vu.parts();
        let mut result = tokio::select! {
            biased;
            r = conn.exchange_with(target, request, step.is_head, self.sh.addr_ids[step.target], user) => r,
            () = timeout => Err(Failure { kind: ErrorKind::Timeout, bytes_in: 0, sent: false }),
        };
        settle_timeout(&mut result, conn);
        let end = Instant::now();
        in_flight.disarm();
        let outcome = vu.finish(result.as_ref().ok().map(|r| r.status));
        self.record(job, index, request_len, start, end, &result);
        if job.measured {
            let corrected = end.saturating_duration_since(job.intended).as_micros() as u64;
            self.stats.borrow_mut().steps[index].record(outcome, corrected);
        }
        if self.sh.schedule.is_some() || step.think.is_zero() {
            return None;
        }
        let spec = &self.sh.spec;
        let next = self.sh.next_slot.load(Ordering::Relaxed);
        let next_slot = next.checked_mul(spec.slot_stride).and_then(|s| s.checked_add(spec.slot_offset));
        next_slot.is_some_and(|s| s < self.sh.slot_limit).then_some(step.think)
    }

    /// Sleeps `pause`, or until the run stops.
    async fn think(&self, pause: Duration) {
        // made before the check: a stop after it still wakes this (notify_waiters)
        let stopped = self.work.notified();
        if self.stopping.get() {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = stopped => {}
        }
    }
}
