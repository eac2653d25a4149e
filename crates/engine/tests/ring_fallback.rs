//! A thread whose ring cannot be set up after the probe said yes (here: its fixed-file table is
//! larger than the descriptor limit) runs on epoll, and the result says so: never "uring" for a
//! run that did not take it. Alone in its test binary: it lowers the process's descriptor limit.

use pounder_engine::{run, Addr, Io, Spec, Target};
use serde_json::Value;

mod common;
use common::tcp_server;

#[test]
fn a_thread_that_cannot_set_up_its_ring_runs_on_epoll_and_says_so() {
    let (addr, _) = tcp_server();
    let addr = addr.parse().unwrap();
    // SAFETY: getrlimit/setrlimit on structs we own.
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) }, 0);
    let low = libc::rlimit { rlim_cur: 128, rlim_max: limit.rlim_max };
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &low) }, 0);
    let target = Target {
        addr: Addr::Tcp(vec![addr]),
        request: b"GET / HTTP/1.1\r\nHost: test\r\n\r\n".to_vec(),
        head: false,
        weight: 1,
        tls_name: None,
    };
    let io = |connections: usize| {
        // only 20 requests: the threads on epoll open few sockets
        let mut s = Spec::new(vec![target.clone()]);
        s.connections = connections;
        s.threads = 2;
        s.requests = Some(20);
        s.io = Io::Uring;
        let r: Value = serde_json::from_str(&run(s).unwrap()).unwrap();
        assert_eq!(r["requests"]["complete"], 20, "{r}");
        (r["io"]["path"].as_str().unwrap().to_string(), r["io"]["reason"].as_str().unwrap().to_string())
    };
    // 2 threads of 200 connections: both tables over the limit
    let (all, all_reason) = io(400);
    // 129 and 128 connections: the first thread's table is over the limit, the second's is not
    let (some, some_reason) = io(257);
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
    assert_eq!(all, "epoll");
    assert!(all_reason.starts_with("asked for; 2 of 2 threads could not set up their ring (io_uring: "), "{all_reason}");
    assert!(all_reason.ends_with(") and ran on epoll"), "{all_reason}");
    assert_eq!(some, "mixed");
    assert!(some_reason.starts_with("asked for; 1 of 2 threads could not set up their ring"), "{some_reason}");
}
