//! The per-second series: one thread's second of its measured phase, and the series entry made of
//! it (with its histogram encoded, to merge the shares of a run).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::{count, ErrorKind};
use crate::histogram::Hist;

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
    /// Of `failed`, how many of each kind (by `ErrorKind as usize`).
    pub errors: [u64; ErrorKind::ALL.len()],
    pub bytes: u64,
}

impl Interval {
    pub fn new(thread: usize, second: u64) -> Interval {
        Interval {
            thread,
            second,
            hist: Hist::new(),
            complete: 0,
            non_2xx: 0,
            failed: 0,
            errors: [0; ErrorKind::ALL.len()],
            bytes: 0,
        }
    }

    /// A request of this second failed with `kind`.
    pub fn fail(&mut self, kind: ErrorKind) {
        self.failed += 1;
        self.errors[kind as usize] += 1;
    }

    pub fn add(&mut self, o: &Interval) {
        self.hist.add(&o.hist);
        self.complete += o.complete;
        self.non_2xx += o.non_2xx;
        self.failed += o.failed;
        for (mine, theirs) in self.errors.iter_mut().zip(o.errors) {
            *mine += theirs;
        }
        self.bytes += o.bytes;
    }

    /// Starts the next second in place, keeping the histogram's memory.
    pub fn restart(&mut self, second: u64) {
        self.second = second;
        self.hist.reset();
        self.complete = 0;
        self.non_2xx = 0;
        self.failed = 0;
        self.errors = [0; ErrorKind::ALL.len()];
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
            errors: self.errors_by_name(),
            bytes: self.bytes,
            mean_us: self.hist.mean(),
            p50_us: self.hist.percentile(50.0),
            p99_us: self.hist.percentile(99.0),
            max_us: self.hist.max(),
            hist: export.then(|| self.hist.encode()),
        }
    }

    /// The kinds of failure of this second that happened, by name.
    pub fn errors_by_name(&self) -> BTreeMap<&'static str, u64> {
        ErrorKind::ALL.iter().filter(|&&k| self.errors[k as usize] > 0).map(|&k| (k.name(), self.errors[k as usize])).collect()
    }

    /// The second of a series entry made with `export` (the inverse of `stats`).
    pub fn from_json(entry: &Value) -> Result<Interval, String> {
        let hist = entry.get("hist").and_then(Value::as_str).ok_or("no \"hist\" (was it run with export_histograms?)")?;
        let mut errors = [0; ErrorKind::ALL.len()];
        // an entry from before its errors by kind has none
        if let Some(by_name) = entry.get("errors") {
            let by_name = by_name.as_object().ok_or("\"errors\" is not an object")?;
            for (name, n) in by_name {
                let kind = ErrorKind::ALL.iter().find(|k| k.name() == name).ok_or_else(|| format!("errors: no kind {name:?}"))?;
                errors[*kind as usize] = n.as_u64().ok_or_else(|| format!("errors/{name}: not a count"))?;
            }
        }
        Ok(Interval {
            thread: 0,
            second: count(entry, "/second")?,
            hist: Hist::decode(hist)?,
            complete: count(entry, "/complete")?,
            non_2xx: count(entry, "/non_2xx")?,
            failed: count(entry, "/failed")?,
            errors,
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
    /// Of `failed`, by kind (only the kinds that happened; none: no key).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<&'static str, u64>,
    pub bytes: u64,
    pub mean_us: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    /// The second's histogram (corrected latency), encoded; only with `export_histograms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hist: Option<String>,
}
