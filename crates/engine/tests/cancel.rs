//! A run cancelled on each I/O path: the requests in flight are counted aborted, and nothing of
//! the run stays open (the server sees every connection closed; this process has the descriptors
//! it had before). Alone in its test binary: it counts the process's descriptors.

use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pounder_engine::{Addr, Io, Run, Spec, Target};

mod common;
use common::checked;

const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: test\r\n\r\n";

/// A server that reads each connection's request and never answers; it counts the requests and
/// the connections it holds open (until the client closes them).
fn silent_server() -> (SocketAddr, Arc<AtomicU64>, Arc<AtomicI64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (requests, open) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicI64::new(0)));
    let (r, o) = (Arc::clone(&requests), Arc::clone(&open));
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            o.fetch_add(1, Ordering::SeqCst);
            let (r, o) = (Arc::clone(&r), Arc::clone(&o));
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while let Ok(n @ 1..) = stream.read(&mut chunk) {
                    buf.extend_from_slice(&chunk[..n]);
                    if buf.ends_with(b"\r\n\r\n") {
                        r.fetch_add(1, Ordering::SeqCst);
                    }
                }
                drop(stream);
                o.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (addr, requests, open)
}

fn fds() -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .map(|e| {
            std::fs::read_link(e.path())
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        })
        .collect()
}

/// Waits (at most 5 s) for `done`.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

fn cancel_on(io: Io) {
    let (addr, requests, open) = silent_server();
    let before = fds().len();
    let mut s = Spec::new(vec![Target {
        addr: Addr::Tcp(vec![addr]),
        request: REQUEST.to_vec(),
        head: false,
        weight: 1,
        tls_name: None,
    }]);
    s.connections = 8;
    s.threads = 2;
    s.duration = Some(Duration::from_secs(60));
    s.io = io;
    let run = Run::start(s).unwrap();
    assert!(
        eventually(|| requests.load(Ordering::SeqCst) == 8),
        "{} requests arrived, {} open",
        requests.load(Ordering::SeqCst),
        open.load(Ordering::SeqCst)
    );
    // the ring path really runs on rings (one per engine thread), the epoll path on none
    let rings = fds()
        .iter()
        .filter(|f| f.as_str() == "anon_inode:[io_uring]")
        .count();
    assert_eq!(
        rings,
        if io == Io::Uring { 2 } else { 0 },
        "{io:?}: {:?}",
        fds()
    );
    run.cancel();
    assert!(
        run.wait(Duration::from_secs(5)),
        "{io:?}: the cancelled run did not end"
    );
    let r = checked(&run.result().unwrap(), io);
    let n = |a: &str, b: &str| r[a][b].as_u64().unwrap();
    assert_eq!(n("errors", "aborted"), 8, "{io:?}: {r}");
    assert_eq!(
        (n("requests", "failed"), n("requests", "complete")),
        (8, 0),
        "{io:?}"
    );
    assert_eq!(n("bytes", "sent"), 8 * REQUEST.len() as u64, "{io:?}");
    assert_eq!(n("connections", "opened"), 8, "{io:?}");
    assert!(r["elapsed_s"].as_f64().unwrap() < 5.0, "{io:?}");
    drop(run);
    assert!(
        eventually(|| open.load(Ordering::SeqCst) == 0),
        "{io:?}: {} connections left open",
        open.load(Ordering::SeqCst)
    );
    assert!(
        eventually(|| fds().len() == before),
        "{io:?}: {} descriptors before, now {:?}",
        before,
        fds()
    );
}

#[test]
fn a_cancelled_run_counts_aborted_and_leaves_nothing_open() {
    // one path after the other: the descriptor count is the process's
    cancel_on(Io::Uring);
    cancel_on(Io::Epoll);
}
