//! A connection task that is a virtual user of the spec's scenario: each job it takes sends its
//! session's next step (the login steps first, then the loop steps round and round).

use std::cell::Cell;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use super::{InFlight, Job, Worker};
use crate::connection::{Connection, Failure};
use crate::session::Session;
use crate::stats::ErrorKind;

impl Worker {
    /// Sends the session's next step for `job` and counts it (in the run's totals and in its
    /// step's); in closed loop, then pauses for the step's think time (not measured: the next
    /// request's time starts after it).
    pub(super) async fn serve_step(
        &self,
        vu: &mut Session<'_>,
        conn: &mut Connection<'_>,
        written: &Cell<bool>,
        mut timeout: Pin<&mut Sleep>,
        job: Job,
    ) {
        let sc = self.sh.spec.scenario.as_ref().expect("a virtual user has a scenario");
        let index = vu.next_step();
        let step = &sc.steps[index];
        let target = &self.sh.spec.targets[step.target];
        let request_len = vu.render(target.tls_name.is_some()).len();
        written.set(false);
        let in_flight = InFlight { worker: self, measured: job.measured, armed: true, written, request_len };
        let step_in_flight = StepInFlight { worker: self, step: index, armed: job.measured };
        let start = if self.sh.schedule.is_some() { Instant::now() } else { job.intended };
        timeout.as_mut().reset(start + self.sh.spec.timeout);
        let (request, user) = vu.parts();
        let mut result = tokio::select! {
            biased;
            r = conn.exchange_with(target, request, step.is_head, self.sh.addr_ids[step.target], user) => r,
            () = timeout => Err(Failure { kind: ErrorKind::Timeout, bytes_in: 0, sent: false }),
        };
        if let Err(f) = &mut result {
            if f.kind == ErrorKind::Timeout {
                f.sent = conn.request_written();
                conn.close();
            }
        }
        let end = Instant::now();
        in_flight.disarm();
        step_in_flight.disarm();
        let outcome = vu.finish(result.as_ref().ok().map(|r| r.status));
        self.record(job, index, request_len, start, end, &result);
        if job.measured {
            let corrected = end.saturating_duration_since(job.intended).as_micros() as u64;
            self.stats.borrow_mut().steps[index].record(outcome, corrected);
        }
        if self.sh.schedule.is_none() && !step.think.is_zero() {
            self.think(step.think).await;
        }
    }

    /// Sleeps `pause`, or until the run stops; not after the run's last request.
    async fn think(&self, pause: Duration) {
        // made before the check: a stop after it still wakes this (notify_waiters)
        let stopped = self.work.notified();
        let spec = &self.sh.spec;
        let next = self.sh.next_slot.load(Ordering::Relaxed);
        let next_slot = next.checked_mul(spec.slot_stride).and_then(|s| s.checked_add(spec.slot_offset));
        if self.stopping.get() || next_slot.is_none_or(|s| s >= self.sh.slot_limit) {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = stopped => {}
        }
    }
}

/// A step in flight: if its task is aborted before it finishes, the step counts it as failed
/// (as `InFlight` does for the run).
struct StepInFlight<'a> {
    worker: &'a Worker,
    step: usize,
    armed: bool,
}

impl StepInFlight<'_> {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for StepInFlight<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.worker.stats.borrow_mut().steps[self.step].failed += 1;
        }
    }
}
