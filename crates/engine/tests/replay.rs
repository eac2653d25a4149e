//! A timed replay (explicit send times) against a real (tiny, in-process) HTTP server on loopback.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use pounder_engine::{Addr, Io, Order, Replay, Run, Spec, Stage, Target, Warmup};
use serde_json::Value;

mod common;
use common::{recording_server, result, temp_dir, wait_result};

/// Serves keep-alive requests with a 2-byte body; records each request line it read.
fn server() -> (String, Arc<Mutex<Vec<String>>>) {
    recording_server(Duration::ZERO)
}

fn replay_spec(addr: &str, times_us: Vec<u64>, targets: Vec<u32>, io: Io) -> Spec {
    let sock = Addr::Tcp(vec![addr.parse().unwrap()]);
    let t = |path: &str| Target {
        addr: sock.clone(),
        request: format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").into_bytes(),
        head: false,
        weight: 1,
        tls_name: None,
    };
    let mut s = Spec::new(vec![t("/a"), t("/b"), t("/c")]);
    s.connections = 8;
    s.threads = 2;
    s.replay = Some(Replay { times_us: times_us.into(), targets: targets.into() });
    s.io = io;
    s
}

fn tsv_rows(path: &std::path::Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().skip(1).map(|l| l.split('\t').map(str::to_string).collect()).collect()
}

/// The run's elapsed time is from its start to its last answer, to the microsecond: the TSV's
/// intended send offset (µs from the start) plus the corrected latency (from that time to the
/// answer), at its largest. Not a wall-clock bound: the controller's poll (10 ms) is not in it.
fn assert_ends_with_last_answer(r: &Value, rows: &[Vec<String>]) {
    let last_us = rows.iter().map(|row| row[1].parse::<u64>().unwrap() + row[4].parse::<u64>().unwrap()).max().unwrap();
    let elapsed_us = r["elapsed_s"].as_f64().unwrap() * 1e6;
    // both truncated to whole µs from the same instants
    assert!((elapsed_us - last_us as f64).abs() <= 3.0, "elapsed {elapsed_us} µs, last answer at {last_us} µs");
}

both_paths! {
fn a_replay_sends_each_request_at_its_time_to_its_target(io: Io) {
    let (addr, seen) = server();
    let dir = temp_dir("replay", io);
    let times: Vec<u64> = vec![0, 0, 0, 100_000, 250_000, 250_000, 400_000, 700_000];
    let targets: Vec<u32> = vec![0, 1, 2, 2, 1, 0, 0, 2];
    let mut s = replay_spec(&addr, times.clone(), targets.clone(), io);
    s.tsv_path = Some(dir.join("r.tsv"));
    let r = result(s);
    assert_eq!(r["requests"]["complete"], 8);
    assert_eq!(r["requests"]["unsent"], 0);
    assert_eq!(seen.lock().unwrap().len(), 8);
    // the run ends with its last answer (no stage length to wait for)
    assert_ends_with_last_answer(&r, &tsv_rows(&dir.join("r.tsv")));
    let mut rows: Vec<(u64, u32)> =
        tsv_rows(&dir.join("r.tsv")).iter().map(|row| (row[1].parse().unwrap(), row[2].parse().unwrap())).collect();
    rows.sort_unstable();
    let mut expected: Vec<(u64, u32)> = times.into_iter().zip(targets).collect();
    expected.sort_unstable();
    assert_eq!(rows, expected);
}

fn a_run_whose_requests_run_out_ends_with_its_last_answer(io: Io) {
    let (addr, _) = server();
    let dir = temp_dir("last-answer", io);
    let with_tsv = |mut s: Spec, name: &str| {
        s.tsv_path = Some(dir.join(name));
        let r = result(s);
        (r, tsv_rows(&dir.join(name)))
    };
    // a replay of one request
    let (r, rows) = with_tsv(replay_spec(&addr, vec![0], vec![0], io), "one.tsv");
    assert_eq!((r["requests"]["complete"].as_u64(), rows.len()), (Some(1), 1));
    assert_ends_with_last_answer(&r, &rows);
    // open loop cut by -n
    let mut s = replay_spec(&addr, vec![0], vec![0], io);
    s.replay = None;
    s.stages = Some(vec![Stage { duration: Duration::from_secs(10), start_rate: 100.0, end_rate: 100.0 }]);
    s.requests = Some(5);
    let (r, rows) = with_tsv(s, "open.tsv");
    assert_eq!((r["requests"]["complete"].as_u64(), rows.len()), (Some(5), 5));
    assert_ends_with_last_answer(&r, &rows);
    // closed loop cut by -n
    let mut s = replay_spec(&addr, vec![0], vec![0], io);
    s.replay = None;
    s.requests = Some(20);
    let (r, rows) = with_tsv(s, "closed.tsv");
    assert_eq!((r["requests"]["complete"].as_u64(), rows.len()), (Some(20), 20));
    assert_ends_with_last_answer(&r, &rows);
}

fn requests_and_duration_cut_a_replay_short(io: Io) {
    let (addr, seen) = server();
    let times: Vec<u64> = (0..20).map(|i| i * 50_000).collect();
    let mut s = replay_spec(&addr, times.clone(), vec![0; 20], io);
    s.requests = Some(5);
    assert_eq!(result(s)["requests"]["complete"], 5);
    let mut s = replay_spec(&addr, times, vec![1; 20], io);
    s.duration = Some(Duration::from_millis(300)); // the times 0, 50, ..., 250 ms
    let r = result(s);
    assert_eq!(r["requests"]["complete"], 6);
    assert_eq!(seen.lock().unwrap().len(), 11);
}

fn an_overloaded_replay_counts_each_arrival_once_and_ends_on_time(io: Io) {
    // 40 arrivals 10 ms apart, 2 connections, answers after 100 ms: most arrivals find both busy.
    // They wait (late); those still waiting at the end (the last arrival's time, or -d) are
    // unsent; the run ends then plus the drain, not when the backlog would have been served.
    let (addr, seen) = recording_server(Duration::from_millis(100));
    let times: Vec<u64> = (0..40).map(|i| i * 10_000).collect();
    for (cut, arrivals) in [(None, 40u64), (Some(Duration::from_millis(200)), 20)] {
        let before = seen.lock().unwrap().len() as u64;
        let mut s = replay_spec(&addr, times.clone(), vec![0; 40], io);
        (s.connections, s.threads, s.duration) = (2, 1, cut);
        let clock = std::time::Instant::now();
        let r = result(s);
        let wall = clock.elapsed();
        let q = &r["requests"];
        let (complete, failed, unsent, late) =
            (q["complete"].as_u64().unwrap(), q["failed"].as_u64().unwrap(), q["unsent"].as_u64().unwrap(), q["late"].as_u64().unwrap());
        assert_eq!(failed, 0, "{r}");
        // every arrival sent or unsent, once; the server saw exactly those sent
        assert_eq!(complete + unsent, arrivals, "{q}");
        assert_eq!(seen.lock().unwrap().len() as u64 - before, complete);
        assert!(unsent >= arrivals / 2 && late >= 1, "{q}");
        // the end: 390 ms (the last arrival) or 200 ms, plus what was in flight (100 ms < the 1 s drain)
        let length = cut.unwrap_or(Duration::from_millis(390)).as_secs_f64();
        let elapsed = r["elapsed_s"].as_f64().unwrap();
        assert!(elapsed >= length && elapsed <= length + 0.15, "elapsed {elapsed} s for {length} s");
        assert!(wall.as_secs_f64() <= length + 1.0, "the run took {wall:?}");
    }
}

fn shares_of_a_replay_take_every_nth_request(io: Io) {
    let (addr, seen) = server();
    let times: Vec<u64> = (0..30).map(|i| i * 10_000).collect();
    let targets: Vec<u32> = (0..30).map(|i| i % 3).collect();
    let at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as u64 + 200_000;
    let runs: Vec<Run> = (0..3u64)
        .map(|offset| {
            let mut s = replay_spec(&addr, times.clone(), targets.clone(), io);
            s.slot_offset = offset;
            s.slot_stride = 3;
            s.start_at_unix_us = Some(at);
            Run::start(s).unwrap()
        })
        .collect();
    for r in &runs {
        let v = wait_result(r, io);
        assert_eq!(v["requests"]["complete"], 10);
    }
    // share k took requests k, k+3, ...: all of target k
    let lines = seen.lock().unwrap().clone();
    assert_eq!(lines.len(), 30);
    for path in ["/a", "/b", "/c"] {
        assert_eq!(lines.iter().filter(|l| l.starts_with(&format!("GET {path} "))).count(), 10);
    }
}
}

#[test]
fn a_bad_replay_is_refused() {
    let addr = "127.0.0.1:9";
    let check = |s: Spec, needle: &str| {
        let e = s.validate().unwrap_err();
        assert!(e.contains(needle), "{e}");
    };
    check(replay_spec(addr, vec![], vec![], Io::Epoll), "at least one");
    check(replay_spec(addr, vec![0, 1], vec![0], Io::Epoll), "same length");
    check(replay_spec(addr, vec![5, 1], vec![0, 0], Io::Epoll), "must not decrease (request 1 is before request 0)");
    check(replay_spec(addr, vec![0, 1], vec![0, 3], Io::Epoll), "request 1 names target 3");
    let mut s = replay_spec(addr, vec![0], vec![0], Io::Epoll);
    s.stages = Some(vec![Stage { duration: Duration::from_secs(1), start_rate: 1.0, end_rate: 1.0 }]);
    check(s, "excludes stages");
    let mut s = replay_spec(addr, vec![0], vec![0], Io::Epoll);
    s.order = Order::Random;
    check(s, "excludes order");
    let mut s = replay_spec(addr, vec![0], vec![0], Io::Epoll);
    s.warmup = Warmup::Requests(3);
    check(s, "warm-up");
    assert!(replay_spec(addr, vec![0, 0, 7], vec![0, 1, 2], Io::Epoll).validate().is_ok());
}
