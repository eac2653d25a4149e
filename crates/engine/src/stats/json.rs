//! The result document of a run's stats (docs/reference/engine-contract.md), and the stats read back from
//! one made with `export_histograms` (to merge the shares of a run).

use serde_json::{json, Value};

use super::{ErrorKind, SecondStats, Stats, HISTOGRAMS, STATUS_SLOTS};
use crate::histogram::Hist;

impl Stats {
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

#[cfg(test)]
mod tests {
    use super::*;

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
