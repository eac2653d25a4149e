//! How a thread counts: each request's figures into its stats, its second of the series and the
//! TSV (the same `record` for both I/O paths), a request cut off by the end as aborted.

use std::cell::Cell;
use std::io::Write as _;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::collect::Msg;
use super::{Job, Worker, TSV_FLUSH};
use crate::connection::{Failure, Response};
use crate::stats::{is_2xx, ErrorKind, Interval, Timing};

impl Worker {
    /// Counts a request: `index` is its target (a scenario's: its step), `sent` its length.
    pub(super) fn record(&self, job: Job, index: usize, sent: usize, start: Instant, end: Instant, result: &Result<Response, Failure>) {
        self.ended();
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
                iv.fail(f.kind);
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

    /// A request starts: in flight until it is counted (`record`) or aborted. Only this thread
    /// writes its counter (others read it): a plain load and store, no locked read-modify-write.
    pub(super) fn began(&self) {
        let n = &self.sh.counters[self.id].in_flight;
        n.store(n.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// A request started with `began` is counted or aborted.
    pub(super) fn ended(&self) {
        let n = &self.sh.counters[self.id].in_flight;
        n.store(n.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
    }

    /// Moves the open interval forward to the second `at` falls in, handing over finished ones.
    pub(super) fn advance_interval(&self, iv: &mut Interval, at: Instant) {
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

    pub(super) fn hand_over_interval(&self) {
        let iv = self.interval.borrow();
        if !iv.is_empty() {
            let _ = self.tx.send(Msg::Interval(iv.clone()));
        }
        let _ = self.tx.send(Msg::Passed { thread: self.id, second: u64::MAX });
    }

    /// Hands over each second when it ends, also when nothing completed in it.
    pub(super) async fn tick(self: Rc<Self>) {
        loop {
            // the measured phase's start unknown yet (a warm-up by requests): until it is known
            let signal = self.sh.signal.notified();
            tokio::pin!(signal);
            signal.as_mut().enable();
            let Some(m) = self.sh.measure_start() else {
                signal.await;
                continue;
            };
            let elapsed = Instant::now().saturating_duration_since(m).as_secs();
            let next = m + Duration::from_secs(elapsed + 1) + Duration::from_millis(1);
            tokio::time::sleep_until(next).await;
            self.advance_interval(&mut self.interval.borrow_mut(), Instant::now());
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_tsv(
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

    pub(super) fn flush_tsv(&self) {
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

/// A request in flight: if its task is aborted before it finishes, it counts as aborted.
pub(super) struct InFlight<'a> {
    pub(super) worker: &'a Worker,
    pub(super) measured: bool,
    pub(super) armed: bool,
    /// Its request went out (its bytes count as sent, also when it is aborted).
    pub(super) written: &'a Cell<bool>,
    pub(super) request_len: usize,
    /// A virtual user's step: it counts the abort as failed too.
    pub(super) step: Option<usize>,
}

impl<'a> InFlight<'a> {
    /// A request of `worker` starts (`Worker::began`): aborted when dropped armed.
    pub(super) fn new(worker: &'a Worker, measured: bool, written: &'a Cell<bool>, request_len: usize, step: Option<usize>) -> Self {
        worker.began();
        InFlight { worker, measured, armed: true, written, request_len, step }
    }

    pub(super) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let w = self.worker;
        w.ended();
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
            iv.fail(ErrorKind::Aborted);
        } else {
            s.warmup_failed += 1;
        }
    }
}
