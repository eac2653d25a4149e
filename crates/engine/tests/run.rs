//! The engine against a real (tiny, in-process) HTTP server on loopback.

use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pounder_engine::{merge, run, sum_seconds, Addr, Io, Order, Run, Spec, Stage, Target, Warmup};
use serde_json::Value;

mod common;
use common::{checked, recording_server, result, serve, tcp_server, temp_dir, wait_result};

fn target(addr: Addr) -> Target {
    Target { addr, request: b"GET / HTTP/1.1\r\nHost: test\r\n\r\n".to_vec(), head: false, weight: 1, tls_name: None }
}

fn spec(addr: &str, io: Io) -> Spec {
    let mut s = Spec::new(vec![target(Addr::Tcp(vec![addr.parse().unwrap()]))]);
    s.connections = 4;
    s.threads = 2;
    s.io = io;
    s
}

/// The failures of kind `name` in a result's series, added up.
fn series_errors(r: &Value, name: &str) -> u64 {
    r["series"].as_array().unwrap().iter().map(|s| s["errors"][name].as_u64().unwrap_or(0)).sum()
}

fn now_unix_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as u64
}

/// Runs `shares` specs made by `make(offset)` together (one share each, the same start time)
/// and returns that start time and their results.
fn shares(shares: u64, make: impl Fn(u64) -> Spec) -> (u64, Vec<Value>) {
    let at = now_unix_us() + 200_000;
    let runs: Vec<(Run, Io)> = (0..shares)
        .map(|offset| {
            let mut s = make(offset);
            s.slot_offset = offset;
            s.slot_stride = shares;
            s.start_at_unix_us = Some(at);
            let io = s.io;
            (Run::start(s).unwrap(), io)
        })
        .collect();
    let results = runs.iter().map(|(r, io)| wait_result(r, *io)).collect();
    (at, results)
}

both_paths! {
fn closed_loop_counts_are_exact(io: Io) {
    let (addr, count) = tcp_server();
    let mut s = spec(&addr, io);
    s.requests = Some(1000);
    let r = result(s);
    assert_eq!(r["requests"]["complete"], 1000);
    assert_eq!(r["requests"]["failed"], 0);
    assert_eq!(count.load(Ordering::SeqCst), 1000);
    assert_eq!(r["status"]["200"], 1000);
    assert_eq!(r["bytes"]["body"], 5000);
    assert_eq!(r["connections"]["opened"], 4);
    let series: u64 = r["series"].as_array().unwrap().iter().map(|s| s["complete"].as_u64().unwrap()).sum();
    assert_eq!(series, 1000);
}

fn a_host_with_several_addresses_falls_back_to_the_one_that_accepts(io: Io) {
    let (addr, count) = tcp_server();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap(); // dropped: refuses
    let mut s = spec(&addr, io);
    s.targets = vec![target(Addr::Tcp(vec![closed, addr.parse().unwrap()]))];
    s.requests = Some(100);
    let r = result(s);
    assert_eq!(r["requests"]["complete"], 100);
    assert_eq!(r["requests"]["failed"], 0);
    assert_eq!(count.load(Ordering::SeqCst), 100);
}

fn a_host_whose_addresses_all_refuse_reports_the_refusal(io: Io) {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let mut s = spec(&closed.to_string(), io);
    s.targets = vec![target(Addr::Tcp(vec![closed, closed]))];
    s.requests = Some(10);
    let r = result(s);
    assert_eq!(r["errors"]["refused"], 10);
    // each second says its failures by kind: here all refused, 10 in all
    let refused: u64 = series_errors(&r, "refused");
    assert_eq!(refused, 10);
    assert!(r["series"].as_array().unwrap().iter().all(|s| s["errors"].as_object().unwrap().len() == 1));
}

fn requests_sent_and_aborted_at_the_end_count_their_bytes_sent(io: Io) {
    // A server that reads each request and never answers: every request is aborted at the end.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for mut stream in listener.incoming().flatten().take(2) {
            let mut buf = [0u8; 1024];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            held.push(stream);
        }
        std::thread::sleep(Duration::from_secs(5));
    });
    let mut s = spec(&addr.to_string(), io);
    s.connections = 2;
    s.threads = 1;
    s.duration = Some(Duration::from_millis(500));
    let len = s.targets[0].request.len() as u64;
    let r = result(s);
    assert_eq!(r["errors"]["aborted"], 2);
    assert_eq!(r["bytes"]["sent"], 2 * len);
}

fn non_2xx_responses_are_counted_per_second_too(io: Io) {
    let (addr, _) = tcp_server();
    let mut s = spec(&addr, io);
    let mut missing = target(Addr::Tcp(vec![addr.parse().unwrap()]));
    missing.request = b"GET /missing HTTP/1.1\r\nHost: test\r\n\r\n".to_vec();
    s.targets.push(missing);
    s.order = Order::Sequential;
    s.requests = Some(1000);
    let r = result(s);
    assert_eq!((r["status"]["200"].as_u64(), r["status"]["404"].as_u64()), (Some(500), Some(500)));
    assert_eq!(r["requests"]["non_2xx"], 500);
    let sum = |key: &str| -> u64 { r["series"].as_array().unwrap().iter().map(|s| s[key].as_u64().unwrap()).sum() };
    assert_eq!((sum("complete"), sum("non_2xx"), sum("failed")), (1000, 500, 0));
}

fn warmup_requests_are_run_but_not_measured(io: Io) {
    let (addr, count) = tcp_server();
    let mut s = spec(&addr, io);
    s.requests = Some(300);
    s.warmup = Warmup::Requests(100);
    let r = result(s);
    assert_eq!(r["requests"]["complete"], 300);
    assert_eq!(r["warmup"]["complete"], 100);
    assert_eq!(count.load(Ordering::SeqCst), 400);
}

fn a_time_warmup_does_not_use_up_the_requests(io: Io) {
    let (addr, count) = tcp_server();
    let mut s = spec(&addr, io);
    s.requests = Some(300);
    s.warmup = Warmup::Time(Duration::from_millis(300));
    let r = result(s);
    assert_eq!(r["requests"]["complete"], 300);
    let warm = r["warmup"]["complete"].as_u64().unwrap();
    assert!(warm > 0);
    assert_eq!(count.load(Ordering::SeqCst), 300 + warm);
}

fn no_keepalive_opens_a_connection_per_request(io: Io) {
    let (addr, count) = tcp_server();
    let mut s = spec(&addr, io);
    s.requests = Some(50);
    s.keepalive = false;
    s.targets[0].request = b"GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n".to_vec();
    let r = result(s);
    assert_eq!(r["requests"]["complete"], 50);
    assert_eq!(r["connections"]["opened"], 50);
    assert_eq!(r["phases"]["connect"]["count"], 50);
    assert_eq!(count.load(Ordering::SeqCst), 50);
}

fn open_loop_sends_the_schedule(io: Io) {
    let (addr, count) = tcp_server();
    let mut s = spec(&addr, io);
    // 50 -> 150 req/s over 2 s: 200 requests.
    s.stages = Some(vec![Stage { duration: Duration::from_secs(2), start_rate: 50.0, end_rate: 150.0 }]);
    let t0 = Instant::now();
    let r = result(s);
    assert!(t0.elapsed() < Duration::from_secs(4));
    assert_eq!(r["requests"]["complete"].as_u64().unwrap() + r["requests"]["unsent"].as_u64().unwrap(), 200);
    assert_eq!(count.load(Ordering::SeqCst), r["requests"]["complete"].as_u64().unwrap());
    assert_eq!(r["latency"]["schedule_lag"]["count"], r["requests"]["complete"]);
}

fn refused_connections_are_counted(io: Io) {
    // Bind then drop: nothing listens on this port any more.
    let addr = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let mut s = spec(&addr, io);
    s.requests = Some(20);
    let r = result(s);
    assert_eq!(r["requests"]["failed"], 20);
    assert_eq!(r["errors"]["refused"], 20);
    assert_eq!(r["bytes"]["sent"], 0);
}

fn unix_socket_target(io: Io) {
    let dir = temp_dir("unix", io);
    let path = dir.join("s.sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).unwrap();
    let count = Arc::new(AtomicU64::new(0));
    let c = Arc::clone(&count);
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let c = Arc::clone(&c);
            std::thread::spawn(move || serve(s, &c));
        }
    });
    let mut s = Spec::new(vec![target(Addr::Unix(path.clone()))]);
    s.io = io;
    s.connections = 2;
    s.requests = Some(100);
    let r = result(s);
    assert_eq!(r["requests"]["complete"], 100);
    assert_eq!(count.load(Ordering::SeqCst), 100);
}

fn cancel_stops_a_long_run_and_keeps_the_result(io: Io) {
    let (addr, _) = tcp_server();
    let mut s = spec(&addr, io);
    s.duration = Some(Duration::from_secs(60));
    let run = Run::start(s).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    run.cancel();
    assert!(run.wait(Duration::from_secs(5)));
    assert!(t0.elapsed() < Duration::from_secs(3));
    let r: Value = checked(&run.result().unwrap(), io);
    assert!(r["requests"]["complete"].as_u64().unwrap() > 0);
    assert!(r["elapsed_s"].as_f64().unwrap() < 2.0);
}

fn duration_run_ends_on_time_and_writes_tsv_and_hdr_log(io: Io) {
    let (addr, _) = tcp_server();
    let dir = temp_dir("out", io);
    let mut s = spec(&addr, io);
    s.duration = Some(Duration::from_millis(1500));
    s.order = Order::Random;
    s.tsv_path = Some(dir.join("r.tsv"));
    s.hdr_log_path = Some(dir.join("r.hlog"));
    let t0 = Instant::now();
    let r = result(s);
    assert!(t0.elapsed() < Duration::from_secs(3));
    let elapsed = r["elapsed_s"].as_f64().unwrap();
    assert!((1.5..1.7).contains(&elapsed), "{elapsed}");
    let complete = r["requests"]["complete"].as_u64().unwrap();
    let tsv = std::fs::read_to_string(dir.join("r.tsv")).unwrap();
    assert_eq!(tsv.lines().count() as u64, complete + 1);
    assert!(tsv.starts_with("start_unix_us\t"));
    let log = std::fs::read_to_string(dir.join("r.hlog")).unwrap();
    let intervals = log.lines().filter(|l| !l.starts_with('#') && !l.starts_with("\"")).count();
    assert_eq!(intervals, r["series"].as_array().unwrap().len());
}

fn shares_of_a_closed_loop_run_send_exactly_its_requests(io: Io) {
    let (addr, count) = tcp_server();
    let (_, results) = shares(3, |_| {
        let mut s = spec(&addr, io);
        s.requests = Some(100);
        s.warmup = Warmup::Requests(10);
        s
    });
    let complete: Vec<u64> = results.iter().map(|r| r["requests"]["complete"].as_u64().unwrap()).collect();
    let warm: Vec<u64> = results.iter().map(|r| r["warmup"]["complete"].as_u64().unwrap()).collect();
    // slots 0..10 warm up, 10..110 are measured: offsets 0, 1, 2 take 33, 34, 33 of them (and 4, 3, 3
    // of the warm-up)
    assert_eq!(complete, vec![33, 34, 33]);
    assert_eq!(warm, vec![4, 3, 3]);
    assert_eq!(count.load(Ordering::SeqCst), 110);
}

fn shares_of_an_open_loop_schedule_take_every_nth_arrival(io: Io) {
    let (addr, count) = tcp_server();
    let dir = temp_dir("shares", io);
    // 300 req/s for 1 s: 300 arrivals, 3.33 ms apart; each share sends every third
    let (_, results) = shares(3, |offset| {
        let mut s = spec(&addr, io);
        s.stages = Some(vec![Stage { duration: Duration::from_secs(1), start_rate: 300.0, end_rate: 300.0 }]);
        s.tsv_path = Some(dir.join(format!("{offset}.tsv")));
        s
    });
    let mut unsent = 0;
    for r in &results {
        let sent = r["requests"]["complete"].as_u64().unwrap() + r["requests"]["unsent"].as_u64().unwrap();
        assert_eq!(sent, 100, "requests {}, errors {}", r["requests"], r["errors"]);
        unsent += r["requests"]["unsent"].as_u64().unwrap();
    }
    // an arrival due as the schedule ends, on a thread woken late (a busy machine), is unsent
    assert!(unsent <= 3, "{unsent} unsent");
    assert_eq!(count.load(Ordering::SeqCst), 300 - unsent);
    // the union of the intended times is the one schedule: evenly spaced, no three-way bursts
    let mut intended: Vec<u64> = (0..3)
        .flat_map(|offset| {
            let tsv = std::fs::read_to_string(dir.join(format!("{offset}.tsv"))).unwrap();
            tsv.lines().skip(1).map(|l| l.split('\t').nth(1).unwrap().parse::<u64>().unwrap()).collect::<Vec<_>>()
        })
        .collect();
    intended.sort_unstable();
    assert_eq!(intended.len() as u64, 300 - unsent);
    for pair in intended.windows(2) {
        let gap = pair[1] - pair[0];
        assert!((3_000..=3_700).contains(&gap), "arrivals {} and {} us", pair[0], pair[1]);
    }
}

fn a_start_time_starts_the_run_then(io: Io) {
    let (addr, _) = tcp_server();
    let mut s = spec(&addr, io);
    s.requests = Some(20);
    let at = now_unix_us() + 300_000;
    s.start_at_unix_us = Some(at);
    let run = Run::start(s).unwrap();
    assert_eq!(run.progress().phase, "waiting");
    while !run.wait(Duration::from_secs(1)) {}
    let r: Value = checked(&run.result().unwrap(), io);
    assert_eq!(r["start_unix_us"].as_u64().unwrap(), at);
    let measured = r["measure_start_unix_us"].as_u64().unwrap();
    assert!((at..at + 5_000).contains(&measured), "{measured} for {at}");
    assert_eq!(r["requests"]["complete"], 20);
    // a share must lie within its stride
    let mut bad = spec(&addr, io);
    bad.requests = Some(1);
    bad.slot_offset = 3;
    bad.slot_stride = 3;
    assert!(Run::start(bad).err().is_some_and(|e| e.contains("slot_offset")));
}

fn shares_merge_into_one_result(io: Io) {
    let (addr, count) = tcp_server();
    let (at, results) = shares(3, |_| {
        let mut s = spec(&addr, io);
        s.requests = Some(300);
        s.export_histograms = true;
        s
    });
    for r in &results {
        let began = r["began_unix_us"].as_u64().unwrap();
        assert!(began.abs_diff(at) <= 50_000, "began at {began}, start at {at}");
        assert!(r["histograms"]["uncorrected"].is_string());
        assert!(r["series"].as_array().unwrap().iter().all(|s| s["hist"].is_string()));
    }
    let texts: Vec<String> = results.iter().map(Value::to_string).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let m: Value = serde_json::from_str(&merge(&texts).unwrap()).unwrap();
    assert_eq!(m["requests"]["complete"], 300);
    assert_eq!(count.load(Ordering::SeqCst), 300);
    assert_eq!(m["status"]["200"], 300);
    assert_eq!(m["latency"]["corrected"]["count"], 300);
    assert_eq!(m["latency"]["uncorrected"]["count"], 300);
    for phase in ["waiting", "processing", "total"] {
        assert_eq!(m["phases"][phase]["count"], 300, "{phase}");
    }
    let series: u64 = m["series"].as_array().unwrap().iter().map(|s| s["complete"].as_u64().unwrap()).sum();
    assert_eq!(series, 300);
    let began = m["began_unix_us"].as_u64().unwrap();
    assert_eq!(Some(began), results.iter().filter_map(|r| r["began_unix_us"].as_u64()).min());
    assert_eq!(m["start_unix_us"], at);
    // without export_histograms, a result has no histograms to merge
    let mut plain = spec(&addr, io);
    plain.requests = Some(1);
    let plain = run(plain).unwrap();
    assert!(checked(&plain, io).get("histograms").is_none());
    assert!(merge(&[texts[0], &plain]).is_err_and(|e| e.contains("result 1")));
}

fn a_run_cancelled_while_waiting_never_began(io: Io) {
    let (addr, count) = tcp_server();
    let mut s = spec(&addr, io);
    s.requests = Some(20);
    s.start_at_unix_us = Some(now_unix_us() + 5_000_000);
    let run = Run::start(s).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    run.cancel();
    assert!(run.wait(Duration::from_secs(3)));
    let r: Value = checked(&run.result().unwrap(), io);
    assert!(r["began_unix_us"].is_null());
    assert_eq!(r["requests"]["complete"], 0);
    assert_eq!(count.load(Ordering::SeqCst), 0);
}

fn in_flight_is_each_connections_request_then_none(io: Io) {
    // closed loop, 4 connections, a server that answers 100 ms after it read a request: each
    // connection has its request out but for the moment between an answer and the next request
    let (addr, seen) = recording_server(Duration::from_millis(100));
    let mut s = spec(&addr, io);
    s.duration = Some(Duration::from_millis(1200));
    let run = Run::start(s).unwrap();
    let mut measured = Vec::new();
    while !run.wait(Duration::from_millis(20)) {
        let p = run.progress();
        assert!(p.in_flight <= 4, "{} in flight on 4 connections", p.in_flight);
        if p.phase == "measure" {
            measured.push(p.in_flight);
        }
    }
    let r: Value = checked(&run.result().unwrap(), io);
    assert_eq!(run.progress().in_flight, 0);
    assert!(measured.len() >= 30, "{} samples", measured.len());
    let four = measured.iter().filter(|&&n| n == 4).count();
    // fewer only between an answer and the next request (two when the ring counted two answers first)
    assert!(four * 10 >= measured.len() * 8 && measured.iter().all(|&n| n >= 2), "{measured:?}");
    // every request the server read was answered, failed or aborted: none is left in flight
    let counted = r["requests"]["complete"].as_u64().unwrap() + r["requests"]["failed"].as_u64().unwrap()
        + r["warmup"]["complete"].as_u64().unwrap_or(0);
    assert!(counted >= seen.lock().unwrap().len() as u64 - 4, "{counted}");
    // a request the end cuts off (answered after the drain) is aborted: not in flight either
    let (slow, _) = recording_server(Duration::from_secs(3));
    let mut s = spec(&slow, io);
    s.duration = Some(Duration::from_millis(300));
    let run = Run::start(s).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(run.progress().in_flight, 4);
    let r = wait_result(&run, io);
    assert_eq!(r["errors"]["aborted"], 4, "{}", r["errors"]);
    assert_eq!(series_errors(&r, "aborted"), 4);
    assert_eq!(run.progress().in_flight, 0);
}

fn finished_seconds_are_readable_while_the_run_goes_on(io: Io) {
    let (addr, count) = tcp_server();
    let mut s = spec(&addr, io);
    s.duration = Some(Duration::from_millis(2500));
    s.export_histograms = true;
    let run = Run::start(s).unwrap();
    // nothing is finished before the first second ends; then one entry per finished second
    assert!(run.seconds(0).is_empty());
    std::thread::sleep(Duration::from_millis(1600));
    let early = run.seconds(0);
    assert!(!early.is_empty() && early.len() <= 2, "{}", early.len());
    assert!(run.wait(Duration::from_secs(5)));
    let r: Value = checked(&run.result().unwrap(), io);
    let all = run.seconds(0);
    assert_eq!(run.seconds(early.len()), all[early.len()..].to_vec());
    assert!(run.seconds(all.len() + 5).is_empty());
    // the same entries as the result's series, in order (the last, partial second too)
    let series: Vec<Value> = all.iter().map(|t| serde_json::from_str(t).unwrap()).collect();
    assert_eq!(&series, r["series"].as_array().unwrap());
    // added up, they are the run's counts and latencies
    let texts: Vec<&str> = all.iter().map(String::as_str).collect();
    let sum: Value = serde_json::from_str(&sum_seconds(&texts).unwrap()).unwrap();
    assert_eq!(sum["seconds"], all.len());
    assert_eq!(sum["complete"], r["requests"]["complete"]);
    assert_eq!(sum["complete"].as_u64().unwrap(), count.load(Ordering::SeqCst));
    assert_eq!(sum["max_us"], r["latency"]["corrected"]["max_us"]);
    for p in ["50", "90", "99"] {
        assert_eq!(sum[format!("p{p}_us")], r["latency"]["corrected"]["percentiles"][p], "p{p}");
    }
    // without export_histograms the seconds are kept too, as the series' entries (no histogram)
    let mut plain = spec(&addr, io);
    plain.requests = Some(10);
    let run = Run::start(plain).unwrap();
    assert!(run.wait(Duration::from_secs(5)));
    let r: Value = checked(&run.result().unwrap(), io);
    let kept: Vec<Value> = run.seconds(0).iter().map(|t| serde_json::from_str(t).unwrap()).collect();
    assert!(!kept.is_empty() && kept.iter().all(|entry| entry.get("hist").is_none()));
    assert_eq!(&kept, r["series"].as_array().unwrap());
    assert!(sum_seconds(&["{}"]).is_err_and(|e| e.contains("entry 0")));
}
}
