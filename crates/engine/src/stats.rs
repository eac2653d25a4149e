//! What a thread measures, merged across threads at the end of a run; the result document it
//! makes and reads back in `stats/json.rs`, the per-second series in `stats/second.rs`.
//!
//! Each thread owns its `Stats` (no locks, no atomics on the hot path) and a one-second
//! `Interval` that it hands to the collector when the second is over.

use crate::histogram::Hist;

mod json;
mod second;

pub use json::{count, RunFacts};
pub use second::{Interval, SecondStats};

/// Why a request failed. Every failed request has exactly one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Connection refused or unreachable (nothing was received by the server).
    Refused,
    /// Reset, broken pipe, or the server closed before the response was complete.
    Reset,
    /// The per-request timeout passed.
    Timeout,
    /// Malformed status line or headers, head over 64 KiB, bad chunk framing.
    BadResponse,
    Other,
    /// Still in flight when the run stopped, and not finished within the drain.
    Aborted,
    /// HTTPS: the server's certificate was not trusted, or ours was refused.
    TlsCertificate,
    /// HTTPS: any other failed handshake (no TLS server there, no common protocol, ...).
    TlsHandshake,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 8] = [
        ErrorKind::Refused,
        ErrorKind::Reset,
        ErrorKind::Timeout,
        ErrorKind::BadResponse,
        ErrorKind::Other,
        ErrorKind::Aborted,
        ErrorKind::TlsCertificate,
        ErrorKind::TlsHandshake,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Refused => "refused",
            ErrorKind::Reset => "reset",
            ErrorKind::Timeout => "timeout",
            ErrorKind::BadResponse => "bad_response",
            ErrorKind::Other => "other",
            ErrorKind::Aborted => "aborted",
            ErrorKind::TlsCertificate => "tls_certificate",
            ErrorKind::TlsHandshake => "tls_handshake",
        }
    }
}

/// Status codes are three digits; anything else was rejected by the parser.
const STATUS_SLOTS: usize = 1000;

/// A success status (the others are counted as `non_2xx`, in the totals and per second).
#[inline]
pub fn is_2xx(status: u16) -> bool {
    (200..300).contains(&status)
}

/// Times of one successful exchange, in microseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timing {
    /// From the intended send time to the last byte (= `total` in closed loop).
    pub corrected: u64,
    /// From the actual start of the attempt to the last byte.
    pub total: u64,
    /// Actual start − intended start; `None` in closed loop.
    pub lag: Option<u64>,
    /// Set when this request opened its connection.
    pub connect: Option<u64>,
    /// Set when this request made a TLS handshake: its time, and whether it resumed a session.
    pub tls: Option<(u64, bool)>,
    pub waiting: u64,
    pub processing: u64,
}

#[derive(Clone, Debug)]
pub struct Stats {
    pub complete: u64,
    pub failed: u64,
    pub non_2xx: u64,
    pub late: u64,
    pub unsent: u64,
    pub bytes_total: u64,
    pub bytes_body: u64,
    pub bytes_sent: u64,
    pub connections_opened: u64,
    pub warmup_complete: u64,
    pub warmup_failed: u64,
    status: Vec<u64>,
    errors: [u64; ErrorKind::ALL.len()],
    /// From the intended send time; open loop only (in closed loop it equals `uncorrected`).
    corrected: Hist,
    /// From the actual start: also the `total` connection phase.
    uncorrected: Hist,
    lag: Hist,
    connect: Hist,
    waiting: Hist,
    processing: Hist,
    /// HTTPS: handshake times (the `tls` phase), handshakes made, of them resumed.
    tls: Hist,
    pub tls_handshakes: u64,
    pub tls_resumed: u64,
    /// Some target is HTTPS: the result has the `tls` counts.
    pub tls_used: bool,
    /// A scenario's steps (empty without one): the result has `steps`.
    pub steps: Vec<crate::steps::StepStats>,
}

/// Late: started more than this after the intended time (microseconds).
pub const LATE_US: u64 = 1000;

/// The raw histograms, by their key in the result's `"histograms"` (the order of `Stats::hists`).
pub const HISTOGRAMS: [&str; 7] =
    ["corrected", "uncorrected", "schedule_lag", "connect", "waiting", "processing", "tls"];

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

impl Stats {
    pub fn new() -> Stats {
        Stats {
            complete: 0,
            failed: 0,
            non_2xx: 0,
            late: 0,
            unsent: 0,
            bytes_total: 0,
            bytes_body: 0,
            bytes_sent: 0,
            connections_opened: 0,
            warmup_complete: 0,
            warmup_failed: 0,
            status: vec![0; STATUS_SLOTS],
            errors: [0; ErrorKind::ALL.len()],
            corrected: Hist::new(),
            uncorrected: Hist::new(),
            lag: Hist::new(),
            connect: Hist::new(),
            waiting: Hist::new(),
            processing: Hist::new(),
            tls: Hist::new(),
            tls_handshakes: 0,
            tls_resumed: 0,
            tls_used: false,
            steps: Vec::new(),
        }
    }

    #[inline]
    pub fn record_ok(&mut self, status: u16, t: &Timing) {
        self.complete += 1;
        self.status[usize::from(status) % STATUS_SLOTS] += 1;
        self.non_2xx += u64::from(!is_2xx(status));
        self.uncorrected.record(t.total);
        if let Some(lag) = t.lag {
            self.corrected.record(t.corrected);
            self.lag.record(lag);
            if lag > LATE_US {
                self.late += 1;
            }
        }
        if let Some(c) = t.connect {
            self.connect.record(c);
            if let Some((us, resumed)) = t.tls {
                self.record_tls(us, resumed);
            }
        }
        self.waiting.record(t.waiting);
        self.processing.record(t.processing);
    }

    #[cold]
    fn record_tls(&mut self, us: u64, resumed: bool) {
        self.tls.record(us);
        self.tls_handshakes += 1;
        self.tls_resumed += u64::from(resumed);
    }

    #[inline]
    pub fn record_error(&mut self, kind: ErrorKind, lag: Option<u64>) {
        self.failed += 1;
        self.errors[kind as usize] += 1;
        if lag.is_some_and(|l| l > LATE_US) {
            self.late += 1;
        }
    }

    pub fn errors(&self, kind: ErrorKind) -> u64 {
        self.errors[kind as usize]
    }

    /// Latency from the intended send time (in closed loop, from the actual start).
    pub fn corrected(&self) -> &Hist {
        if self.lag.count() > 0 {
            &self.corrected
        } else {
            &self.uncorrected
        }
    }

    pub fn merge(&mut self, o: &Stats) {
        self.complete += o.complete;
        self.failed += o.failed;
        self.non_2xx += o.non_2xx;
        self.late += o.late;
        self.unsent += o.unsent;
        self.bytes_total += o.bytes_total;
        self.bytes_body += o.bytes_body;
        self.bytes_sent += o.bytes_sent;
        self.connections_opened += o.connections_opened;
        self.warmup_complete += o.warmup_complete;
        self.warmup_failed += o.warmup_failed;
        self.tls_handshakes += o.tls_handshakes;
        self.tls_resumed += o.tls_resumed;
        self.tls_used |= o.tls_used;
        crate::steps::merge(&mut self.steps, &o.steps);
        for (a, b) in self.status.iter_mut().zip(&o.status) {
            *a += b;
        }
        for (a, b) in self.errors.iter_mut().zip(&o.errors) {
            *a += b;
        }
        for (a, b) in self.hists_mut().into_iter().zip(o.hists()) {
            a.add(b);
        }
    }

    /// The raw histograms, in the order of `HISTOGRAMS` (`corrected` is empty in closed loop).
    fn hists(&self) -> [&Hist; 7] {
        [&self.corrected, &self.uncorrected, &self.lag, &self.connect, &self.waiting, &self.processing, &self.tls]
    }

    fn hists_mut(&mut self) -> [&mut Hist; 7] {
        [
            &mut self.corrected,
            &mut self.uncorrected,
            &mut self.lag,
            &mut self.connect,
            &mut self.waiting,
            &mut self.processing,
            &mut self.tls,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_everything() {
        let (mut a, mut b) = (Stats::new(), Stats::new());
        let t = Timing {
            corrected: 900,
            total: 800,
            lag: Some(2000),
            connect: Some(50),
            tls: Some((40, true)),
            waiting: 700,
            processing: 50,
        };
        a.record_ok(200, &t);
        b.record_ok(404, &t);
        b.record_error(ErrorKind::Reset, None);
        a.merge(&b);
        assert_eq!((a.complete, a.failed, a.non_2xx, a.late), (2, 1, 1, 2));
        assert_eq!((a.status[200], a.status[404]), (1, 1));
        assert_eq!(a.errors(ErrorKind::Reset), 1);
        assert_eq!(a.corrected().count(), 2);
        assert_eq!((a.tls_handshakes, a.tls_resumed, a.tls.count()), (2, 2, 2));
    }
}
