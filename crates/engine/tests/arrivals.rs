//! Open loop's one rule at its boundaries (docs/reference/engine-contract.md, "Overload"): an
//! arrival is sent or counted unsent, never lost and never made up. At the end of a run (an
//! arrival due the instant it ends; a schedule whose count is whole) and at the shares' boundaries
//! (shares of one schedule take each of its arrivals once). Exact counts, on both I/O paths.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pounder_engine::{Addr, Io, Replay, Run, Spec, Stage, Target, Warmup};
use serde_json::Value;

mod common;
use common::{recording_server, result, temp_dir, wait_result};

/// Serves keep-alive requests, each answered `delay` after it was read; how many it read.
fn server(delay: Duration) -> (String, Seen) {
    let (addr, lines) = recording_server(delay);
    (addr, Seen(lines))
}

/// The requests a [`server`] read.
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn count(&self) -> u64 {
        self.0.lock().unwrap().len() as u64
    }
}

fn spec(addr: &str, io: Io) -> Spec {
    let target = Target {
        addr: Addr::Tcp(vec![addr.parse().unwrap()]),
        request: b"GET / HTTP/1.1\r\nHost: test\r\n\r\n".to_vec(),
        head: false,
        weight: 1,
        tls_name: None,
    };
    let mut s = Spec::new(vec![target]);
    s.connections = 8;
    s.threads = 2;
    s.io = io;
    s
}

fn constant(duration: Duration, rate: f64) -> Option<Vec<Stage>> {
    Some(vec![Stage { duration, start_rate: rate, end_rate: rate }])
}

fn count(r: &Value, key: &str) -> u64 {
    r["requests"][key].as_u64().unwrap()
}

/// The intended send offsets (µs from the start) of a TSV's rows.
fn offsets(path: &std::path::Path) -> Vec<u64> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().skip(1).map(|l| l.split('\t').nth(1).unwrap().parse().unwrap()).collect()
}

/// The slot of each row at a constant `rate` (its intended offset, truncated to the µs, times the rate).
fn slots(offsets: &[u64], rate: f64) -> Vec<u64> {
    offsets.iter().map(|&us| (us as f64 * rate / 1e6).round() as u64).collect()
}

fn now_unix_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as u64
}

both_paths! {
fn a_whole_schedule_has_no_arrival_on_its_end(io: Io) {
    // 300/s for 140 ms is 42 arrivals, 42.00000000000001 in floating point: slot 42 would fall
    // on the end itself (the run sent 43)
    let (addr, seen) = server(Duration::ZERO);
    let dir = temp_dir("whole", io);
    let mut s = spec(&addr, io);
    s.stages = constant(Duration::from_millis(140), 300.0);
    s.tsv_path = Some(dir.join("r.tsv"));
    let r = result(s);
    assert_eq!(count(&r, "complete") + count(&r, "failed") + count(&r, "unsent"), 42, "{}", r["requests"]);
    assert_eq!(seen.count(), count(&r, "complete"));
    let sent = offsets(&dir.join("r.tsv"));
    assert!(sent.iter().all(|&us| us < 140_000), "an arrival at {} µs", sent.iter().max().unwrap());
    // a warm-up of 100 ms at 600/s is 60 arrivals (60.00000000000001), then 170 ms are 102
    // (102.00000000000001): the first measured arrival is due as the measured phase starts
    let before = seen.count();
    let mut s = spec(&addr, io);
    s.stages = constant(Duration::from_millis(170), 600.0);
    s.warmup = Warmup::Time(Duration::from_millis(100));
    s.tsv_path = Some(dir.join("w.tsv"));
    let r = result(s);
    let warm = r["warmup"]["complete"].as_u64().unwrap() + r["warmup"]["failed"].as_u64().unwrap();
    assert_eq!(warm, 60, "{}", r["warmup"]);
    assert_eq!(count(&r, "complete") + count(&r, "failed") + count(&r, "unsent"), 102, "{}", r["requests"]);
    assert_eq!(seen.count() - before, warm + count(&r, "complete"));
    let measured = offsets(&dir.join("w.tsv"));
    assert_eq!(measured.iter().min(), Some(&100_000), "the first measured arrival");
    assert!(measured.iter().all(|&us| us < 270_000));
    // a warm-up of 10 requests at 600/s lasts 10/600 s to the nanosecond (16,666,667 ns, which
    // hold 10.0000002 arrivals): 10 of them, and the 11th is the first measured
    let before = seen.count();
    let mut s = spec(&addr, io);
    s.stages = constant(Duration::from_millis(170), 600.0);
    s.warmup = Warmup::Requests(10);
    s.tsv_path = Some(dir.join("n.tsv"));
    let r = result(s);
    let warm = r["warmup"]["complete"].as_u64().unwrap() + r["warmup"]["failed"].as_u64().unwrap();
    assert_eq!(warm, 10, "{}", r["warmup"]);
    assert_eq!(count(&r, "complete") + count(&r, "failed") + count(&r, "unsent"), 102, "{}", r["requests"]);
    assert_eq!(seen.count() - before, warm + count(&r, "complete"));
    assert_eq!(offsets(&dir.join("n.tsv")).iter().min(), Some(&16_666), "the first measured arrival");
}

fn an_arrival_due_as_the_run_ends_is_sent_or_counted_unsent(io: Io) {
    // a replay without a cut ends at its last request's time: that request is due the instant the
    // run ends. Rounds of it, each counted exactly
    let (addr, seen) = server(Duration::ZERO);
    let dir = temp_dir("end", io);
    for round in 0..8 {
        let before = seen.count();
        let mut s = spec(&addr, io);
        s.replay = Some(Replay { times_us: vec![0, 5_000, 10_000, 15_000, 20_000].into(), targets: vec![0; 5].into() });
        s.tsv_path = Some(dir.join(format!("{round}.tsv")));
        let r = result(s);
        let (complete, failed, unsent) = (count(&r, "complete"), count(&r, "failed"), count(&r, "unsent"));
        assert_eq!(complete + failed + unsent, 5, "round {round}: {}", r["requests"]);
        assert_eq!(seen.count() - before, complete, "round {round}");
        let rows = offsets(&dir.join(format!("{round}.tsv")));
        assert_eq!(rows.len() as u64, complete + failed, "round {round}");
        assert_eq!(rows.iter().copied().collect::<BTreeSet<_>>().len(), rows.len(), "round {round}: {rows:?}");
    }
    // its one connection busy at the end (answers after 150 ms): the request due then waits, and
    // the end counts it unsent; a cut on a request's time leaves that request out
    let (slow, seen) = server(Duration::from_millis(150));
    for (times, cut) in [(vec![0, 10_000], None), (vec![0, 5_000, 10_000], Some(Duration::from_millis(10)))] {
        let mut s = spec(&slow, io);
        (s.connections, s.threads) = (1, 1);
        let n = times.len();
        s.replay = Some(Replay { times_us: times.into(), targets: vec![0; n].into() });
        s.duration = cut;
        let before = seen.count();
        let r = result(s);
        assert_eq!((count(&r, "complete"), count(&r, "failed"), count(&r, "unsent")), (1, 0, 1), "cut {cut:?}: {}", r["requests"]);
        assert_eq!(seen.count() - before, 1);
    }
}

fn shares_take_each_arrival_of_the_one_schedule_once(io: Io) {
    // three shares of 300/s for 140 ms (42 arrivals, the last share boundary at the end): with
    // room, their rows are the schedule, each arrival once; with one connection each against
    // answers of 25 ms (more arrive than they can send), what a share did not send it counted
    // unsent, and the rows are still its own arrivals only, each once
    for (delay, connections) in [(Duration::ZERO, 4), (Duration::from_millis(25), 1)] {
        let (addr, seen) = server(delay);
        let dir = temp_dir(&format!("shares-{connections}"), io);
        let at = now_unix_us() + 200_000;
        let runs: Vec<Run> = (0..3u64)
            .map(|offset| {
                let mut s = spec(&addr, io);
                (s.connections, s.threads) = (connections, 1);
                s.stages = constant(Duration::from_millis(140), 300.0);
                (s.slot_offset, s.slot_stride, s.start_at_unix_us) = (offset, 3, Some(at));
                s.tsv_path = Some(dir.join(format!("{offset}.tsv")));
                Run::start(s).unwrap()
            })
            .collect();
        let mut all = BTreeSet::new();
        let (mut sent, mut unsent) = (0, 0);
        for (offset, run) in runs.iter().enumerate() {
            let r = wait_result(run, io);
            let mine = slots(&offsets(&dir.join(format!("{offset}.tsv"))), 300.0);
            let (complete, failed) = (count(&r, "complete"), count(&r, "failed"));
            assert_eq!(complete + failed + count(&r, "unsent"), 14, "share {offset}: {}", r["requests"]);
            assert_eq!(mine.len() as u64, complete + failed, "share {offset}");
            for slot in mine {
                assert!(slot < 42 && slot % 3 == offset as u64, "share {offset} sent slot {slot}");
                assert!(all.insert(slot), "slot {slot} sent twice");
            }
            sent += complete;
            unsent += count(&r, "unsent");
        }
        assert_eq!(seen.count(), sent);
        assert_eq!(all.len() as u64 + unsent, 42);
        if connections == 4 {
            assert_eq!(all, (0..42).collect::<BTreeSet<u64>>(), "the one schedule");
        } else {
            assert!(unsent > 0, "the slow server left nothing waiting");
        }
    }
}
}
