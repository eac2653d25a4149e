//! The supervisor of a run's threads and the collector of their seconds: the series (and the HDR
//! log) as each second completes on every thread, the result when the last thread ends.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::interval_log::IntervalLogWriterError;
use tokio::time::Instant;

use super::{work, Shared, UNKNOWN};
use crate::stats::{Interval, RunFacts, SecondStats, Stats};

pub(super) enum Msg {
    Interval(Interval),
    /// The thread has handed over every second before this one.
    Passed { thread: usize, second: u64 },
}

pub(super) struct ThreadOutput {
    pub(super) stats: Stats,
    pub(super) cpu: (f64, f64),
    /// When its last measured request ended, or it stopped issuing requests if later.
    pub(super) last_end: Option<Instant>,
    /// What ended the thread's load early (its ring broke), reported in `engine_errors`.
    pub(super) error: Option<String>,
}

pub(super) fn supervise(sh: Arc<Shared>, hdr_log: Option<File>, warmup_slots: u64) {
    let (tx, rx) = mpsc::channel::<Msg>();
    let threads = sh.spec.threads;
    let collector = {
        let sh = Arc::clone(&sh);
        std::thread::Builder::new()
            .name("pounder-collector".into())
            .spawn(move || collect(&sh, rx, threads, hdr_log))
    };
    let workers: Vec<_> = (0..threads)
        .map(|id| {
            let sh = Arc::clone(&sh);
            let tx = tx.clone();
            std::thread::Builder::new()
                .name(format!("pounder-{id}"))
                .spawn(move || work(id, sh, tx, warmup_slots))
        })
        .collect();
    drop(tx);
    let mut total = Stats::new();
    let mut facts = RunFacts::default();
    let mut last_end: Option<Instant> = None;
    let mut errors = Vec::new();
    for w in workers {
        match w.map_err(|e| e.to_string()).and_then(|h| h.join().map_err(|_| "an engine thread panicked".into())) {
            Ok(out) => {
                total.merge(&out.stats);
                facts.cpu_user_s += out.cpu.0;
                facts.cpu_sys_s += out.cpu.1;
                last_end = last_end.max(out.last_end);
                errors.extend(out.error);
            }
            Err(e) => errors.push(e),
        }
    }
    let series = match collector {
        Ok(h) => h.join().unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    facts.start_unix_us = sh.start_unix_us;
    facts.began_unix_us = Some(sh.began_unix_us.load(Ordering::Relaxed)).filter(|&t| t != UNKNOWN);
    if let Some(m) = sh.measure_start() {
        let end = last_end.unwrap_or(m);
        let warmup = m.saturating_duration_since(sh.start);
        facts.elapsed_s = end.saturating_duration_since(m).as_secs_f64();
        facts.warmup_s = warmup.as_secs_f64();
        facts.measure_start_unix_us = Some(sh.start_unix_us + warmup.as_micros() as u64);
    }
    let mut doc = total.to_json(&facts, &series, sh.spec.export_histograms);
    doc["io"] = io_json(&sh);
    if !errors.is_empty() {
        doc["engine_errors"] = serde_json::json!(errors);
    }
    let written = sh.write_errors.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if !written.is_empty() {
        doc["write_errors"] = serde_json::json!(written);
    }
    let mut done = sh.done.lock().unwrap_or_else(|e| e.into_inner());
    *done = Some(doc.to_string());
    sh.done_cv.notify_all();
}

/// The result's `io`: the path taken and why; threads that could not set up their ring ran on
/// epoll (all of them: the path is epoll; some: mixed), and the reason says why.
fn io_json(sh: &Shared) -> serde_json::Value {
    let failures = sh.ring_failures.lock().unwrap_or_else(|p| p.into_inner());
    if failures.is_empty() {
        return serde_json::json!({"path": sh.io.path.name(), "reason": sh.io.reason});
    }
    let path = if failures.len() >= sh.spec.threads { "epoll" } else { "mixed" };
    let reason = format!(
        "{}; {} of {} threads could not set up their ring ({}) and ran on epoll",
        sh.io.reason,
        failures.len(),
        sh.spec.threads,
        failures[0]
    );
    serde_json::json!({"path": path, "reason": reason})
}

/// Merges the threads' seconds into the series (and the HDR log) as each second completes.
fn collect(sh: &Shared, rx: mpsc::Receiver<Msg>, threads: usize, hdr_log: Option<File>) -> Vec<SecondStats> {
    let mut pending: BTreeMap<u64, Interval> = BTreeMap::new();
    let mut passed = vec![0u64; threads];
    let mut series = Vec::new();
    let mut file = hdr_log.map(std::io::BufWriter::new);
    let mut serializer = hdrhistogram::serialization::V2DeflateSerializer::new();
    let mut log = file.as_mut().and_then(|f| {
        let base = SystemTime::UNIX_EPOCH + Duration::from_micros(sh.start_unix_us);
        hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder::new()
            .add_comment("pounder: corrected latency (from the intended send time) in microseconds")
            .with_start_time(base)
            .with_base_time(base)
            .begin_log_with(f, &mut serializer)
            .map_err(|e| sh.write_failed("hdr log", &e))
            .ok()
    });
    let mut finish = |iv: Interval, series: &mut Vec<SecondStats>, whole: bool| {
        let s = iv.stats(sh.spec.export_histograms);
        if whole {
            sh.last_rate.store((s.complete as f64).to_bits(), Ordering::Relaxed);
        }
        if let (Some(writer), Some(m)) = (log.as_mut(), sh.measure_start()) {
            let offset = m.saturating_duration_since(sh.start) + Duration::from_secs(iv.second);
            if let Err(e) = writer.write_histogram(iv.hist.inner(), offset, Duration::from_secs(1), None) {
                let error = match e {
                    IntervalLogWriterError::IoError(io) => io,
                    IntervalLogWriterError::SerializeError(other) => std::io::Error::other(format!("{other:?}")),
                };
                sh.write_failed("hdr log", &error);
                log = None; // the file stops at its last whole interval
            }
        }
        // every run keeps its finished seconds for `Run::seconds` (an agent's driver, --metrics-out)
        if let Ok(text) = serde_json::to_string(&s) {
            sh.finished.lock().unwrap_or_else(|e| e.into_inner()).push(text);
        }
        series.push(s);
    };
    for msg in rx.iter() {
        match msg {
            Msg::Interval(iv) => {
                passed[iv.thread] = passed[iv.thread].max(iv.second);
                let second = iv.second;
                pending.entry(second).or_insert_with(|| Interval::new(0, second)).add(&iv);
            }
            Msg::Passed { thread, second } => passed[thread] = passed[thread].max(second),
        }
        let done_below = passed.iter().copied().min().unwrap_or(0);
        while let Some(entry) = pending.first_entry() {
            if *entry.key() >= done_below {
                break;
            }
            finish(entry.remove(), &mut series, true);
        }
    }
    // All threads are gone: what is left is complete (the last second may be partial).
    for (_, iv) in std::mem::take(&mut pending) {
        finish(iv, &mut series, false);
    }
    drop(log);
    if let Some(mut f) = file {
        // the buffer's last bytes: a full disk shows here at the latest
        if let Err(e) = f.flush() {
            sh.write_failed("hdr log", &e);
        }
    }
    series
}
