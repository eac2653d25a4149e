//! What a thread measures, merged across threads at the end of a run.
//!
//! Each thread owns its `Stats` (no locks, no atomics on the hot path) and a one-second
//! `Interval` that it hands to the collector when the second is over.

use serde::Serialize;
use serde_json::{json, Value};

use crate::histogram::Hist;

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

    /// The result document (see docs/reference/engine-contract.md); with `export`, also the raw
    /// histograms encoded under `"histograms"`, so that results can be merged.
    pub fn to_json(&self, run: &RunFacts, series: &[SecondStats], export: bool) -> Value {
        let status: serde_json::Map<String, Value> = self
            .status
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(code, &n)| (code.to_string(), json!(n)))
            .collect();
        let errors: serde_json::Map<String, Value> =
            ErrorKind::ALL.iter().map(|&k| (k.name().to_string(), json!(self.errors(k)))).collect();
        let mut doc = json!({
            "elapsed_s": run.elapsed_s,
            "start_unix_us": run.start_unix_us,
            "measure_start_unix_us": run.measure_start_unix_us,
            "began_unix_us": run.began_unix_us,
            "warmup": {
                "complete": self.warmup_complete,
                "failed": self.warmup_failed,
                "elapsed_s": run.warmup_s,
            },
            "requests": {
                "complete": self.complete,
                "failed": self.failed,
                "non_2xx": self.non_2xx,
                "unsent": self.unsent,
                "late": self.late,
            },
            "bytes": {"total": self.bytes_total, "body": self.bytes_body, "sent": self.bytes_sent},
            "connections": {"opened": self.connections_opened},
            "status": status,
            "errors": errors,
            "latency": {
                "corrected": self.corrected().summary(),
                "uncorrected": self.uncorrected.summary(),
                "schedule_lag": self.lag.summary(),
            },
            "phases": {
                "connect": self.connect.summary(),
                "tls": self.tls.summary(),
                "waiting": self.waiting.summary(),
                "processing": self.processing.summary(),
                "total": self.uncorrected.summary(),
            },
            "series": series,
            "client_cpu": {"user_s": run.cpu_user_s, "sys_s": run.cpu_sys_s},
            "histogram": self.corrected().encode(),
        });
        if self.tls_used {
            doc["tls"] = json!({"handshakes": self.tls_handshakes, "resumed": self.tls_resumed});
        }
        if !self.steps.is_empty() {
            doc["steps"] = crate::steps::to_json(&self.steps, export);
        }
        if export {
            let hists = HISTOGRAMS.iter().zip(self.hists()).map(|(&k, h)| (k.to_string(), json!(h.encode())));
            doc["histograms"] = Value::Object(hists.collect());
        }
        doc
    }

    /// The stats of a result document made with `export` (the inverse of `to_json`).
    pub fn from_json(doc: &Value) -> Result<Stats, String> {
        let mut s = Stats::new();
        for (field, path) in [
            (&mut s.complete, "/requests/complete"),
            (&mut s.failed, "/requests/failed"),
            (&mut s.non_2xx, "/requests/non_2xx"),
            (&mut s.late, "/requests/late"),
            (&mut s.unsent, "/requests/unsent"),
            (&mut s.bytes_total, "/bytes/total"),
            (&mut s.bytes_body, "/bytes/body"),
            (&mut s.bytes_sent, "/bytes/sent"),
            (&mut s.connections_opened, "/connections/opened"),
            (&mut s.warmup_complete, "/warmup/complete"),
            (&mut s.warmup_failed, "/warmup/failed"),
        ] {
            *field = count(doc, path)?;
        }
        let status = doc.get("status").and_then(Value::as_object).ok_or("status: missing")?;
        for (code, n) in status {
            let slot = code.parse::<usize>().ok().filter(|&c| c < STATUS_SLOTS);
            let slot = slot.ok_or_else(|| format!("status: bad code {code:?}"))?;
            s.status[slot] += n.as_u64().ok_or_else(|| format!("status: {code} is not a count"))?;
        }
        for k in ErrorKind::ALL {
            let path = format!("/errors/{}", k.name());
            // a share from before HTTPS has no tls_* categories: none of its requests had them
            let old = matches!(k, ErrorKind::TlsCertificate | ErrorKind::TlsHandshake) && doc.pointer(&path).is_none();
            s.errors[k as usize] = if old { 0 } else { count(doc, &path)? };
        }
        if doc.get("tls").is_some() {
            s.tls_used = true;
            s.tls_handshakes = count(doc, "/tls/handshakes")?;
            s.tls_resumed = count(doc, "/tls/resumed")?;
        }
        let hists = doc.get("histograms").ok_or("no \"histograms\" (was it run with export_histograms?)")?;
        for (&key, h) in HISTOGRAMS.iter().zip(s.hists_mut()) {
            if key == "tls" && hists.get(key).is_none() {
                continue; // from before HTTPS: no handshake
            }
            let text = hists.get(key).and_then(Value::as_str).ok_or_else(|| format!("histograms: no {key}"))?;
            *h = Hist::decode(text).map_err(|e| format!("histograms.{key}: {e}"))?;
        }
        s.steps = crate::steps::from_json(doc)?;
        Ok(s)
    }
}

/// The non-negative integer at `path` (a JSON pointer) of a result document.
pub fn count(doc: &Value, path: &str) -> Result<u64, String> {
    doc.pointer(path).and_then(Value::as_u64).ok_or_else(|| format!("{path}: missing or not a count"))
}

/// Facts about the run as a whole, for the result.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunFacts {
    /// When the run began (its start time, when one was given), microseconds since the epoch.
    pub start_unix_us: u64,
    /// When the measured phase began; None when it never did (a warm-up that did not end).
    pub measure_start_unix_us: Option<u64>,
    /// When the first thread began sending (this machine's clock, after the wait for the start
    /// time); None when none did (cancelled while waiting).
    pub began_unix_us: Option<u64>,
    pub elapsed_s: f64,
    pub warmup_s: f64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
}

/// One second of one thread's measured phase, by completion time.
#[derive(Clone, Debug)]
pub struct Interval {
    pub thread: usize,
    pub second: u64,
    pub hist: Hist,
    pub complete: u64,
    /// Complete requests whose status was not 2xx (counted in `complete` too).
    pub non_2xx: u64,
    pub failed: u64,
    pub bytes: u64,
}

impl Interval {
    pub fn new(thread: usize, second: u64) -> Interval {
        Interval { thread, second, hist: Hist::new(), complete: 0, non_2xx: 0, failed: 0, bytes: 0 }
    }

    pub fn add(&mut self, o: &Interval) {
        self.hist.add(&o.hist);
        self.complete += o.complete;
        self.non_2xx += o.non_2xx;
        self.failed += o.failed;
        self.bytes += o.bytes;
    }

    /// Starts the next second in place, keeping the histogram's memory.
    pub fn restart(&mut self, second: u64) {
        self.second = second;
        self.hist.reset();
        self.complete = 0;
        self.non_2xx = 0;
        self.failed = 0;
        self.bytes = 0;
    }

    pub fn is_empty(&self) -> bool {
        self.complete == 0 && self.failed == 0
    }

    /// The series entry; with `export`, with the second's histogram encoded.
    pub fn stats(&self, export: bool) -> SecondStats {
        SecondStats {
            second: self.second,
            complete: self.complete,
            non_2xx: self.non_2xx,
            failed: self.failed,
            bytes: self.bytes,
            mean_us: self.hist.mean(),
            p50_us: self.hist.percentile(50.0),
            p99_us: self.hist.percentile(99.0),
            max_us: self.hist.max(),
            hist: export.then(|| self.hist.encode()),
        }
    }

    /// The second of a series entry made with `export` (the inverse of `stats`).
    pub fn from_json(entry: &Value) -> Result<Interval, String> {
        let hist = entry.get("hist").and_then(Value::as_str).ok_or("no \"hist\" (was it run with export_histograms?)")?;
        Ok(Interval {
            thread: 0,
            second: count(entry, "/second")?,
            hist: Hist::decode(hist)?,
            complete: count(entry, "/complete")?,
            non_2xx: count(entry, "/non_2xx")?,
            failed: count(entry, "/failed")?,
            bytes: count(entry, "/bytes")?,
        })
    }
}

/// One entry of the per-second series.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SecondStats {
    pub second: u64,
    pub complete: u64,
    /// Of `complete`, the responses whose status was not 2xx.
    pub non_2xx: u64,
    pub failed: u64,
    pub bytes: u64,
    pub mean_us: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    /// The second's histogram (corrected latency), encoded; only with `export_histograms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hist: Option<String>,
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

    #[test]
    fn json_has_every_error_category() {
        let s = Stats::new();
        let v = s.to_json(&RunFacts::default(), &[], false);
        for k in ErrorKind::ALL {
            assert_eq!(v["errors"][k.name()], 0);
        }
        assert_eq!(v["latency"]["corrected"]["percentiles"]["99.9"], 0);
        assert!(v["status"].as_object().unwrap().is_empty());
    }
}
