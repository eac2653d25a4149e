//! Latency histograms: HdrHistogram in microseconds, mergeable across threads and runs.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;

/// Largest value kept exactly: one hour in microseconds. Longer values are clamped to it.
pub const MAX_US: u64 = 3_600_000_000;

/// The percentiles every summary reports (ab's table plus 99.9).
pub const PERCENTILES: [(&str, f64); 10] = [
    ("50", 50.0),
    ("66", 66.0),
    ("75", 75.0),
    ("80", 80.0),
    ("90", 90.0),
    ("95", 95.0),
    ("98", 98.0),
    ("99", 99.0),
    ("99.9", 99.9),
    ("100", 100.0),
];

/// A histogram of microseconds with three significant digits.
#[derive(Clone, Debug)]
pub struct Hist(Histogram<u64>);

impl Default for Hist {
    fn default() -> Self {
        Hist::new()
    }
}

impl Hist {
    pub fn new() -> Hist {
        Hist(Histogram::new_with_bounds(1, MAX_US, 3).expect("valid histogram bounds"))
    }

    #[inline]
    pub fn record(&mut self, us: u64) {
        self.0.saturating_record(us);
    }

    pub fn add(&mut self, other: &Hist) {
        // Same bounds on both sides: adding cannot fail.
        self.0.add(&other.0).expect("histograms with equal bounds");
    }

    pub fn reset(&mut self) {
        self.0.reset();
    }

    pub fn count(&self) -> u64 {
        self.0.len()
    }

    pub fn mean(&self) -> f64 {
        if self.0.is_empty() {
            0.0
        } else {
            self.0.mean()
        }
    }

    pub fn max(&self) -> u64 {
        self.0.max()
    }

    /// Value at percentile `p` (0 to 100), to three significant digits; 100 is the maximum.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.0.is_empty() {
            0
        } else if p >= 100.0 {
            self.0.max()
        } else {
            self.0.value_at_quantile(p / 100.0)
        }
    }

    pub fn inner(&self) -> &Histogram<u64> {
        &self.0
    }

    pub fn summary(&self) -> Summary {
        let empty = self.0.is_empty();
        Summary {
            count: self.0.len(),
            min_us: if empty { 0 } else { self.0.min() },
            max_us: self.max(),
            mean_us: self.mean(),
            stdev_us: if empty { 0.0 } else { self.0.stdev() },
            percentiles: PERCENTILES.iter().map(|&(k, p)| (k, self.percentile(p))).collect(),
        }
    }

    /// Base64 of the V2 + deflate encoding, the form HdrHistogram tools exchange.
    pub fn encode(&self) -> String {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.0, &mut bytes)
            .expect("serializing to memory cannot fail");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// The histogram `encode` made (or any V2 encoding, deflated or not, of values in our range),
    /// added into a new one with our bounds.
    pub fn decode(text: &str) -> Result<Hist, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("histogram: not base64: {e}"))?;
        let h: Histogram<u64> =
            Deserializer::new().deserialize(&mut &bytes[..]).map_err(|e| format!("histogram: {e}"))?;
        let mut hist = Hist::new();
        hist.0.add(&h).map_err(|e| format!("histogram: {e}"))?;
        Ok(hist)
    }
}

/// What a report shows of a histogram.
#[derive(Debug, Serialize, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub min_us: u64,
    pub max_us: u64,
    pub mean_us: f64,
    pub stdev_us: f64,
    pub percentiles: BTreeMap<&'static str, u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_uniform_run() {
        let mut h = Hist::new();
        for us in 1..=10_000 {
            h.record(us);
        }
        let s = h.summary();
        assert_eq!(s.count, 10_000);
        assert_eq!(s.min_us, 1);
        // Values are kept to three significant digits: the max is its bucket's top.
        assert!((10_000..=10_010).contains(&s.max_us), "{}", s.max_us);
        // Three significant digits: within 0.1 %.
        let p50 = s.percentiles["50"] as f64;
        assert!((p50 - 5000.0).abs() <= 5.0, "{p50}");
        let p999 = s.percentiles["99.9"] as f64;
        assert!((p999 - 9990.0).abs() <= 10.0, "{p999}");
        assert!((s.mean_us - 5000.5).abs() < 5.0);
    }

    #[test]
    fn empty_summary_is_all_zero() {
        let s = Hist::new().summary();
        assert_eq!(s.count, 0);
        assert_eq!(s.max_us, 0);
        assert!(s.percentiles.values().all(|&v| v == 0));
    }

    #[test]
    fn merge_and_clamp() {
        let (mut a, mut b) = (Hist::new(), Hist::new());
        a.record(100);
        b.record(MAX_US * 10);
        a.add(&b);
        assert_eq!(a.count(), 2);
        assert!(a.max() >= MAX_US && a.max() <= MAX_US + MAX_US / 1000);
    }

    #[test]
    fn encoding_round_trips() {
        let mut h = Hist::new();
        for us in [5, 50, 500, 5000] {
            h.record(us);
        }
        let bytes = base64::engine::general_purpose::STANDARD.decode(h.encode()).unwrap();
        let back: Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
        assert_eq!(back.len(), 4);
        assert_eq!(back.max(), h.max());
    }

    #[test]
    fn decode_gives_back_the_same_histogram() {
        let mut h = Hist::new();
        for us in [0, 5, 50, 500, 5000, 5001, MAX_US] {
            h.record(us);
        }
        let back = Hist::decode(&h.encode()).unwrap();
        assert_eq!(back.summary(), h.summary());
        assert_eq!(back.encode(), h.encode());
        let empty = Hist::decode(&Hist::new().encode()).unwrap();
        assert_eq!(empty.summary(), Hist::new().summary());
        assert!(Hist::decode("not base64!").is_err());
        assert!(Hist::decode("AAAA").is_err());
    }
}
