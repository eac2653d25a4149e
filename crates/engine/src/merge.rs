//! Merges the results of several shares of one run (one run each, on several machines, with the
//! same start time) into one result, exactly: the shares' raw histograms are added, not their
//! summaries. The results must have been made with `export_histograms`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::stats::{count, Interval, RunFacts, Stats};

/// One result document of the same shape as a single run's with `export_histograms`, so that
/// it can be merged again. The error names the index of the first bad document.
pub fn merge(results: &[&str]) -> Result<String, String> {
    if results.is_empty() {
        return Err("merge: no result to merge".into());
    }
    let mut total = Stats::new();
    let mut facts = Vec::with_capacity(results.len());
    // the shares start their measured phase together: their seconds are added by number
    let mut seconds: BTreeMap<u64, Interval> = BTreeMap::new();
    let mut engine_errors = Vec::new();
    for (i, text) in results.iter().enumerate() {
        let at = |e: String| format!("merge: result {i}: {e}");
        let doc: Value = serde_json::from_str(text).map_err(|e| at(format!("not JSON: {e}")))?;
        let share = Stats::from_json(&doc).map_err(at)?;
        crate::steps::check_same(&total.steps, &share.steps).map_err(at)?;
        total.merge(&share);
        facts.push(run_facts(&doc).map_err(at)?);
        let series = doc.get("series").and_then(Value::as_array).ok_or_else(|| at("series: missing".into()))?;
        for (j, entry) in series.iter().enumerate() {
            let iv = Interval::from_json(entry).map_err(|e| at(format!("series[{j}]: {e}")))?;
            seconds.entry(iv.second).or_insert_with(|| Interval::new(0, iv.second)).add(&iv);
        }
        match doc.get("engine_errors") {
            Some(Value::Array(errors)) => engine_errors.extend(errors.iter().cloned()),
            Some(other) => engine_errors.push(other.clone()),
            None => {}
        }
    }
    let series: Vec<_> = seconds.values().map(|iv| iv.stats(true)).collect();
    let mut doc = total.to_json(&combine(&facts), &series, true);
    if !engine_errors.is_empty() {
        doc["engine_errors"] = Value::Array(engine_errors);
    }
    Ok(doc.to_string())
}

/// The seconds of one share's series (entries made with `export_histograms`) added up: counts
/// and the latency percentiles of every request in them. What is kept of a share whose result
/// never came (`Run::seconds`, read while it ran).
pub fn sum_seconds(entries: &[&str]) -> Result<String, String> {
    let mut total = Interval::new(0, 0);
    for (i, text) in entries.iter().enumerate() {
        let at = |e: String| format!("sum_seconds: entry {i}: {e}");
        let entry: Value = serde_json::from_str(text).map_err(|e| at(format!("not JSON: {e}")))?;
        total.add(&Interval::from_json(&entry).map_err(at)?);
    }
    let h = &total.hist;
    Ok(serde_json::json!({
        "seconds": entries.len(),
        "complete": total.complete,
        "non_2xx": total.non_2xx,
        "failed": total.failed,
        "errors": total.errors_by_name(),
        "bytes": total.bytes,
        "mean_us": h.mean(),
        "p50_us": h.percentile(50.0),
        "p90_us": h.percentile(90.0),
        "p99_us": h.percentile(99.0),
        "max_us": h.max(),
    })
    .to_string())
}

fn run_facts(doc: &Value) -> Result<RunFacts, String> {
    let number = |path: &str| doc.pointer(path).and_then(Value::as_f64).ok_or_else(|| format!("{path}: missing"));
    // null, or missing (a result from before began_unix_us), is unknown
    let moment = |path: &str| match doc.pointer(path) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => count(doc, path).map(Some),
    };
    Ok(RunFacts {
        start_unix_us: count(doc, "/start_unix_us")?,
        measure_start_unix_us: moment("/measure_start_unix_us")?,
        began_unix_us: moment("/began_unix_us")?,
        elapsed_s: number("/elapsed_s")?,
        warmup_s: number("/warmup/elapsed_s")?,
        cpu_user_s: number("/client_cpu/user_s")?,
        cpu_sys_s: number("/client_cpu/sys_s")?,
    })
}

/// The facts of the shares together: the earliest moments, the measured phase from the first
/// share's start to the last share's end, the longest warm-up, the CPU time of all.
fn combine(all: &[RunFacts]) -> RunFacts {
    let earliest = |f: fn(&RunFacts) -> Option<u64>| all.iter().filter_map(f).min();
    let measure = earliest(|f| f.measure_start_unix_us);
    let end = |f: &RunFacts| match (f.measure_start_unix_us, measure) {
        (Some(m), Some(first)) => (m - first) as f64 / 1e6 + f.elapsed_s,
        _ => f.elapsed_s,
    };
    RunFacts {
        start_unix_us: all.iter().map(|f| f.start_unix_us).min().unwrap_or(0),
        measure_start_unix_us: measure,
        began_unix_us: earliest(|f| f.began_unix_us),
        elapsed_s: all.iter().map(end).fold(0.0, f64::max),
        warmup_s: all.iter().map(|f| f.warmup_s).fold(0.0, f64::max),
        cpu_user_s: all.iter().map(|f| f.cpu_user_s).sum(),
        cpu_sys_s: all.iter().map(|f| f.cpu_sys_s).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{ErrorKind, SecondStats, Timing};

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    fn second(n: u64, latencies: &[u64]) -> Interval {
        let mut iv = Interval::new(0, n);
        for &us in latencies {
            iv.hist.record(us);
            iv.complete += 1;
            iv.bytes += 100;
        }
        iv.failed = n;
        iv
    }

    fn series(intervals: &[Interval]) -> Vec<SecondStats> {
        intervals.iter().map(|iv| iv.stats(true)).collect()
    }

    /// What a share's document is made of.
    type Share = (Stats, RunFacts, Vec<Interval>);

    /// An open-loop share (with schedule lag) and a closed-loop one.
    fn two_shares() -> (Share, Share) {
        let mut open = Stats::new();
        for i in 0..200u64 {
            let lag = i * 37 % 3000;
            let total = 500 + i * i % 7000;
            let t = Timing {
                corrected: total + lag,
                total,
                lag: Some(lag),
                connect: (i % 10 == 0).then_some(80 + i),
                tls: (i % 10 == 0).then_some((40 + i, i % 20 == 0)),
                waiting: total - 60,
                processing: 60,
            };
            open.record_ok(if i % 9 == 0 { 503 } else { 200 }, &t);
        }
        open.record_error(ErrorKind::Timeout, Some(5000));
        open.unsent = 3;
        open.bytes_total = 20_000;
        open.bytes_sent = 9_000;
        open.connections_opened = 20;
        open.warmup_complete = 10;
        open.tls_used = true;
        let mut closed = Stats::new();
        for i in 0..150u64 {
            let total = 900 + i * 13 % 20_000;
            let t = Timing {
                corrected: total,
                total,
                lag: None,
                connect: (i < 4).then_some(120),
                tls: None,
                waiting: total - 100,
                processing: 100,
            };
            closed.record_ok(if i % 50 == 0 { 404 } else { 200 }, &t);
        }
        closed.record_error(ErrorKind::Reset, None);
        closed.record_error(ErrorKind::Refused, None);
        closed.bytes_total = 15_000;
        closed.bytes_body = 750;
        closed.connections_opened = 4;
        closed.warmup_failed = 2;
        let open_facts = RunFacts {
            start_unix_us: 1_000_000,
            measure_start_unix_us: Some(2_000_000),
            began_unix_us: Some(1_000_300),
            elapsed_s: 1.5,
            warmup_s: 1.0,
            cpu_user_s: 0.25,
            cpu_sys_s: 0.125,
        };
        let closed_facts = RunFacts {
            start_unix_us: 1_000_100,
            measure_start_unix_us: Some(2_250_000),
            began_unix_us: None,
            elapsed_s: 1.5,
            warmup_s: 0.5,
            cpu_user_s: 0.5,
            cpu_sys_s: 0.25,
        };
        let open_series = vec![second(0, &[1000, 2000]), second(1, &[3000])];
        let closed_series = vec![second(1, &[500, 40_000]), second(2, &[700])];
        ((open, open_facts, open_series), (closed, closed_facts, closed_series))
    }

    fn doc(s: &Stats, f: &RunFacts, series_: &[Interval]) -> String {
        s.to_json(f, &series(series_), true).to_string()
    }

    #[test]
    fn merged_documents_equal_the_merged_stats() {
        let ((a, fa, sa), (b, fb, sb)) = two_shares();
        let merged = merge(&[&doc(&a, &fa, &sa), &doc(&b, &fb, &sb)]).unwrap();
        let mut total = a.clone();
        total.merge(&b);
        let mut by_second = vec![sa[0].clone(), sa[1].clone(), sb[1].clone()];
        by_second[1].add(&sb[0]);
        let facts = RunFacts {
            start_unix_us: 1_000_000,
            measure_start_unix_us: Some(2_000_000),
            began_unix_us: Some(1_000_300),
            elapsed_s: 1.75, // the closed share ended last: 0.25 s after the first began, + 1.5 s
            warmup_s: 1.0,
            cpu_user_s: 0.75,
            cpu_sys_s: 0.375,
        };
        let expected = total.to_json(&facts, &series(&by_second), true);
        let merged = parse(&merged);
        assert_eq!(merged, parse(&expected.to_string()));
        // what that means, spelled out for a few figures
        assert_eq!(merged["requests"]["complete"], 350);
        assert_eq!(merged["requests"]["failed"], 3);
        assert_eq!((merged["status"]["200"].as_u64(), merged["status"]["404"].as_u64()), (Some(324), Some(3)));
        assert_eq!(merged["latency"]["corrected"]["count"], 200); // lag known: the open share's only
        assert_eq!(merged["latency"]["uncorrected"]["count"], 350);
        assert_eq!(merged["tls"], serde_json::json!({"handshakes": 20, "resumed": 10}));
        assert_eq!(merged["phases"]["tls"]["count"], 20);
        assert_eq!(merged["errors"]["tls_certificate"], 0);
        assert_eq!(merged["histogram"], Value::String(total.corrected().encode()));
        let seconds: Vec<(u64, u64)> = merged["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["second"].as_u64().unwrap(), s["complete"].as_u64().unwrap()))
            .collect();
        assert_eq!(seconds, vec![(0, 2), (1, 3), (2, 1)]);
        assert_eq!(merged["series"][1]["max_us"].as_u64().unwrap() / 1000, 40);
        assert!(merged.get("engine_errors").is_none());
    }

    #[test]
    fn one_document_merges_into_itself() {
        let ((a, fa, sa), (b, fb, sb)) = two_shares();
        for text in [doc(&a, &fa, &sa), doc(&b, &fb, &sb)] {
            assert_eq!(parse(&merge(&[&text]).unwrap()), parse(&text));
        }
        // closed loop: no lag, so corrected is uncorrected, after the merge too
        let closed = parse(&merge(&[&doc(&b, &fb, &sb)]).unwrap());
        assert_eq!(closed["latency"]["corrected"], closed["latency"]["uncorrected"]);
        assert_eq!(closed["latency"]["corrected"]["count"], 150);
        // a merged document merges again
        let twice = merge(&[&doc(&a, &fa, &sa), &doc(&b, &fb, &sb)]).unwrap();
        assert_eq!(parse(&merge(&[&twice]).unwrap()), parse(&twice));
    }

    #[test]
    fn engine_errors_are_concatenated() {
        let ((a, fa, sa), (b, fb, sb)) = two_shares();
        let mut with_errors = parse(&doc(&a, &fa, &sa));
        with_errors["engine_errors"] = serde_json::json!(["an engine thread panicked"]);
        let merged = parse(&merge(&[&with_errors.to_string(), &doc(&b, &fb, &sb)]).unwrap());
        assert_eq!(merged["engine_errors"], serde_json::json!(["an engine thread panicked"]));
    }

    #[test]
    fn bad_input_is_refused_with_its_index() {
        let ((a, fa, sa), (b, fb, sb)) = two_shares();
        let good = doc(&a, &fa, &sa);
        assert!(merge(&[]).unwrap_err().contains("no result"));
        let plain = b.to_json(&fb, &series(&sb), false).to_string();
        let e = merge(&[&good, &plain]).unwrap_err();
        assert!(e.contains("result 1") && e.contains("histograms"), "{e}");
        let no_hist: Vec<SecondStats> = sb.iter().map(|iv| iv.stats(false)).collect();
        let e = merge(&[&good, &b.to_json(&fb, &no_hist, true).to_string()]).unwrap_err();
        assert!(e.contains("result 1") && e.contains("series[0]") && e.contains("hist"), "{e}");
        let e = merge(&["{", &good]).unwrap_err();
        assert!(e.contains("result 0") && e.contains("not JSON"), "{e}");
        let mut broken = parse(&good);
        broken["histograms"]["waiting"] = Value::String("####".into());
        let e = merge(&[&broken.to_string()]).unwrap_err();
        assert!(e.contains("result 0") && e.contains("histograms.waiting"), "{e}");
    }
}
