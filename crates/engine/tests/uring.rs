//! What a careless io_uring driver would get wrong, on both I/O paths, against tiny in-process
//! servers on loopback: bodies and heads larger than any one receive buffer, servers that close
//! or reset under the client, bytes past a response, answers that never come, more connections
//! than a thread's buffer ring has buffers, connection reuse limits, Unix sockets, and the
//! fallback from a refused address. The servers and what they exchange are in `wire/`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixListener;
use std::sync::Arc;
use std::time::Duration;

use pounder_engine::{Addr, Spec};

mod common;
mod wire;
use common::{result, temp_dir};
use wire::*;

both_paths! {
fn a_body_of_megabytes_is_counted_to_the_byte(io: Io) {
    let payload = 3 * 1024 * 1024 + 17;
    let mut response = format!("HTTP/1.1 200 OK\r\nContent-Length: {payload}\r\n\r\n").into_bytes();
    response.extend_from_slice(&letters(payload));
    let len = response.len() as u64;
    let (addr, seen) = server(always(response));
    // 4 connections on one thread receive at once: more than its receive buffers hold
    let mut s = spec(addr, io, 4, 8);
    s.threads = 1;
    let r = result(s);
    assert_eq!(count(&r, &["requests", "complete"]), 8, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 0);
    assert_eq!(count(&r, &["status", "200"]), 8);
    assert_eq!(count(&r, &["bytes", "total"]), 8 * len);
    assert_eq!(count(&r, &["bytes", "body"]), 8 * payload as u64);
    assert_eq!(count(&r, &["bytes", "sent"]), 8 * REQUEST.len() as u64);
    assert_eq!(count(&r, &["connections", "opened"]), 4);
    assert_eq!(seen.requests(), 8);
}

fn a_chunked_body_of_megabytes_is_counted_to_the_byte(io: Io) {
    let payload = 3 * 1024 * 1024 + 17;
    let response = chunked(&letters(payload));
    let len = response.len() as u64;
    let (addr, seen) = server(always(response));
    let r = result(spec(addr, io, 2, 8));
    assert_eq!(count(&r, &["requests", "complete"]), 8, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 0);
    assert_eq!(count(&r, &["bytes", "total"]), 8 * len);
    assert_eq!(count(&r, &["bytes", "body"]), 8 * payload as u64);
    assert_eq!(count(&r, &["connections", "opened"]), 2);
    assert_eq!(seen.requests(), 8);
}

fn a_head_of_40_kb_is_read_whole(io: Io) {
    let response = big_head(100, 400);
    let len = response.len() as u64;
    assert!(len > 40_000);
    let (addr, seen) = server(always(response));
    let r = result(spec(addr, io, 2, 20));
    assert_eq!(count(&r, &["requests", "complete"]), 20, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 0);
    assert_eq!(count(&r, &["bytes", "total"]), 20 * len);
    assert_eq!(count(&r, &["bytes", "body"]), 20 * 5);
    assert_eq!(count(&r, &["connections", "opened"]), 2);
    assert_eq!(seen.requests(), 20);
}

fn a_head_over_64_kib_is_a_bad_response(io: Io) {
    let response = big_head(120, 600);
    assert!(response.len() > 64 * 1024 + 5);
    let (addr, seen) = server(always(response));
    let r = result(spec(addr, io, 2, 6));
    assert_eq!(count(&r, &["errors", "bad_response"]), 6, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 6);
    assert_eq!(count(&r, &["requests", "complete"]), 0);
    // a connection that gave a bad response is not used again
    assert_eq!(count(&r, &["connections", "opened"]), 6);
    assert_eq!(seen.requests(), 6);
    assert!(seen.all_closed());
}

fn a_server_closing_idle_connections_unannounced_costs_no_request(io: Io) {
    // after every 3rd response the server closes (no Connection: close): the next request on
    // that connection fails before any byte of an answer and is sent again on a new one
    let every_third = |s: &mut TcpStream, nth: u64, _: &[u8]| s.write_all(HELLO).is_ok() && !nth.is_multiple_of(3);
    let (addr, seen) = server(every_third);
    let r = result(spec(addr, io, 1, 30));
    assert_eq!(count(&r, &["requests", "complete"]), 30, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 0);
    assert_eq!(count(&r, &["connections", "opened"]), 10);
    assert_eq!((seen.requests(), seen.accepted()), (30, 10));
    // 4 connections: each opens ceil(its requests / 3)
    let (addr, seen) = server(every_third);
    let r = result(spec(addr, io, 4, 300));
    assert_eq!(count(&r, &["requests", "complete"]), 300, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 0);
    assert_eq!(count(&r, &["bytes", "body"]), 300 * 5);
    let opened = count(&r, &["connections", "opened"]);
    assert!((100..=102).contains(&opened), "{opened}");
    assert_eq!((seen.requests(), seen.accepted()), (300, opened));
    assert!(seen.all_closed());
    let served = seen.served.lock().unwrap().clone();
    assert!(served.iter().all(|&n| (1..=3).contains(&n)), "{served:?}");
    assert!(served.iter().filter(|&&n| n < 3).count() <= 4, "{served:?}");
}

fn bytes_past_a_response_leave_the_connection_unused(io: Io) {
    let response = [HELLO, b"EXTRA!"].concat();
    let len = response.len() as u64;
    let (addr, seen) = server(always(response));
    let r = result(spec(addr, io, 2, 40));
    assert_eq!(count(&r, &["requests", "complete"]), 40, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 0);
    assert_eq!(count(&r, &["status", "200"]), 40);
    assert_eq!(count(&r, &["bytes", "body"]), 40 * 5);
    // the extra bytes came in the response's one segment: received, so counted
    assert_eq!(count(&r, &["bytes", "total"]), 40 * len);
    // out of step: each connection carries one exchange
    assert_eq!(count(&r, &["connections", "opened"]), 40);
    assert_eq!((seen.requests(), seen.accepted()), (40, 40));
    assert!(seen.all_closed());
}

fn a_server_that_never_answers_times_out_each_request(io: Io) {
    // the server reads each request and waits for the client to close
    let (addr, seen) = server(|s, _, _| {
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let _ = s.read(&mut [0u8; 64]);
        false
    });
    let mut s = spec(addr, io, 2, 6);
    s.threads = 1;
    s.timeout = Duration::from_millis(200);
    let r = result(s);
    assert_eq!(count(&r, &["errors", "timeout"]), 6, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 6);
    assert_eq!(count(&r, &["requests", "complete"]), 0);
    assert_eq!(count(&r, &["bytes", "sent"]), 6 * REQUEST.len() as u64);
    assert_eq!(count(&r, &["bytes", "total"]), 0);
    // a timed-out connection is closed, not used again
    assert_eq!(count(&r, &["connections", "opened"]), 6);
    assert_eq!((seen.requests(), seen.accepted()), (6, 6));
    assert!(seen.all_closed());
}

fn a_reset_in_the_middle_of_a_response_is_a_reset(io: Io) {
    let (addr, seen) = server(|s, _, _| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial");
        std::thread::sleep(Duration::from_millis(20));
        reset_on_close(s);
        false
    });
    let mut s = spec(addr, io, 2, 10);
    s.threads = 1;
    let r = result(s);
    assert_eq!(count(&r, &["errors", "reset"]), 10, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 10);
    assert_eq!(count(&r, &["requests", "complete"]), 0);
    assert_eq!(count(&r, &["bytes", "sent"]), 10 * REQUEST.len() as u64);
    // a fresh connection's request is not sent again
    assert_eq!(count(&r, &["connections", "opened"]), 10);
    assert_eq!((seen.requests(), seen.accepted()), (10, 10));
}

fn six_hundred_connections_on_two_threads(io: Io) {
    // more receives in flight than a thread's buffer ring may hold buffers
    let (addr, seen) = server(always(HELLO.to_vec()));
    let r = result(spec(addr, io, 600, 6000));
    assert_eq!(count(&r, &["requests", "complete"]), 6000, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 0);
    assert_eq!(count(&r, &["status", "200"]), 6000);
    assert_eq!(count(&r, &["bytes", "total"]), 6000 * HELLO.len() as u64);
    assert_eq!(count(&r, &["bytes", "sent"]), 6000 * REQUEST.len() as u64);
    assert_eq!(count(&r, &["connections", "opened"]), 600);
    assert_eq!((seen.requests(), seen.accepted()), (6000, 600));
    assert!(seen.all_closed());
}

fn calls_per_conn_closes_after_that_many_responses(io: Io) {
    let (addr, seen) = server(always(HELLO.to_vec()));
    let mut s = spec(addr, io, 1, 100);
    s.calls_per_conn = 5;
    let r = result(s);
    assert_eq!(count(&r, &["requests", "complete"]), 100, "{}", brief(&r));
    assert_eq!(count(&r, &["connections", "opened"]), 20);
    assert_eq!((seen.requests(), seen.accepted()), (100, 20));
    assert!(seen.all_closed());
    assert_eq!(*seen.served.lock().unwrap(), vec![5; 20]);
    // 4 connections: each opens ceil(its requests / 5)
    let (addr, seen) = server(always(HELLO.to_vec()));
    let mut s = spec(addr, io, 4, 200);
    s.calls_per_conn = 5;
    let r = result(s);
    assert_eq!(count(&r, &["requests", "complete"]), 200, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 0);
    let opened = count(&r, &["connections", "opened"]);
    assert!((40..=43).contains(&opened), "{opened}");
    assert_eq!((seen.requests(), seen.accepted()), (200, opened));
    assert!(seen.all_closed());
    let served = seen.served.lock().unwrap().clone();
    assert!(served.iter().all(|&n| (1..=5).contains(&n)), "{served:?}");
}

fn no_keepalive_over_a_unix_socket(io: Io) {
    let dir = temp_dir("uring-unix", io);
    let path = dir.join("s.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let answer: Arc<Answer<std::os::unix::net::UnixStream>> = Arc::new(|s, _, head| {
        let close = String::from_utf8_lossy(head).to_ascii_lowercase().contains("connection: close");
        s.write_all(HELLO).is_ok() && !close
    });
    let seen = accept(std::iter::from_fn(move || listener.accept().ok().map(|(s, _)| s)), answer);
    let mut s = Spec::new(vec![target(Addr::Unix(path.clone()))]);
    s.targets[0].request = b"GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n".to_vec();
    s.keepalive = false;
    s.connections = 2;
    s.threads = 2;
    s.requests = Some(50);
    s.io = io;
    let r = result(s);
    assert_eq!(count(&r, &["requests", "complete"]), 50, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 0);
    assert_eq!(count(&r, &["connections", "opened"]), 50);
    assert_eq!(count(&r, &["phases", "connect", "count"]), 50);
    assert_eq!((seen.requests(), seen.accepted()), (50, 50));
    assert!(seen.all_closed());
}

fn each_new_connection_falls_back_from_a_refused_address(io: Io) {
    let (addr, seen) = server(|s, _, _| {
        let _ = s.write_all(HELLO);
        false
    });
    // bound then dropped: nothing listens there
    let refused = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let mut s = spec(addr, io, 2, 20);
    s.targets = vec![target(Addr::Tcp(vec![refused, addr]))];
    s.targets[0].request = b"GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n".to_vec();
    s.keepalive = false;
    let r = result(s);
    assert_eq!(count(&r, &["requests", "complete"]), 20, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 0);
    assert_eq!(count(&r, &["errors", "refused"]), 0);
    assert_eq!(count(&r, &["connections", "opened"]), 20);
    assert_eq!((seen.requests(), seen.accepted()), (20, 20));
}

fn a_body_until_close_ends_with_the_connection(io: Io) {
    // no length, not chunked: the body is what comes until the server closes
    let (addr, seen) = server(|s, _, _| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\nuntil close");
        false
    });
    let r = result(spec(addr, io, 2, 20));
    assert_eq!(count(&r, &["requests", "complete"]), 20, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 0);
    assert_eq!(count(&r, &["bytes", "body"]), 20 * 11);
    assert_eq!(count(&r, &["connections", "opened"]), 20);
    assert_eq!((seen.requests(), seen.accepted()), (20, 20));
}

fn a_head_request_reads_no_body_whatever_the_length_says(io: Io) {
    let (addr, seen) = server(always(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".to_vec()));
    // both connections on one thread: on two, one thread may take all 30 before the other starts
    let mut s = spec(addr, io, 2, 30);
    s.threads = 1;
    s.targets[0].request = b"HEAD / HTTP/1.1\r\nHost: test\r\n\r\n".to_vec();
    s.targets[0].head = true;
    let r = result(s);
    assert_eq!(count(&r, &["requests", "complete"]), 30, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 0);
    assert_eq!(count(&r, &["bytes", "body"]), 0);
    assert_eq!(count(&r, &["connections", "opened"]), 2, "{}", brief(&r));
    assert_eq!(seen.requests(), 30);
}

fn a_response_dribbled_in_pieces_is_framed_right(io: Io) {
    // chunked, written 3 bytes at a time: head and chunk lines split across receives
    let response = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
    let (addr, seen) = server(move |s, _, _| {
        let _ = s.set_nodelay(true);
        response.chunks(3).all(|piece| {
            std::thread::sleep(Duration::from_micros(200));
            s.write_all(piece).is_ok()
        })
    });
    let r = result(spec(addr, io, 2, 20));
    assert_eq!(count(&r, &["requests", "complete"]), 20, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 0);
    assert_eq!(count(&r, &["bytes", "body"]), 20 * 11);
    assert_eq!(count(&r, &["bytes", "total"]), 20 * response.len() as u64);
    assert_eq!(count(&r, &["connections", "opened"]), 2);
    assert_eq!(seen.requests(), 20);
}

fn no_keepalive_closes_a_connection_the_server_would_keep(io: Io) {
    let (addr, seen) = server(always(HELLO.to_vec()));
    let mut s = spec(addr, io, 2, 30);
    s.keepalive = false;
    let r = result(s);
    assert_eq!(count(&r, &["requests", "complete"]), 30, "{}", brief(&r));
    assert_eq!(count(&r, &["connections", "opened"]), 30);
    assert_eq!((seen.requests(), seen.accepted()), (30, 30));
    assert!(seen.all_closed());
    assert_eq!(*seen.served.lock().unwrap(), vec![1; 30]);
}

fn open_loop_requests_that_get_no_answer_time_out(io: Io) {
    let (addr, seen) = server(|s, _, _| {
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let _ = s.read(&mut [0u8; 64]);
        false
    });
    // 100 req/s for 0.5 s: 50 arrivals, each timed out after 200 ms (within the run's drain)
    let mut s = spec(addr, io, 64, 1);
    s.requests = None;
    s.stages = Some(vec![pounder_engine::Stage {
        duration: Duration::from_millis(500),
        start_rate: 100.0,
        end_rate: 100.0,
    }]);
    s.timeout = Duration::from_millis(200);
    let r = result(s);
    assert_eq!(count(&r, &["errors", "timeout"]), 50, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 50);
    assert_eq!(count(&r, &["requests", "unsent"]), 0);
    assert_eq!(count(&r, &["bytes", "sent"]), 50 * REQUEST.len() as u64);
    assert_eq!((seen.requests(), seen.accepted()), (50, 50));
    assert!(seen.all_closed());
}

fn a_large_request_reset_part_way_is_a_reset_at_once(io: Io) {
    // the server reads 64 KB of a 16 MB request, then resets: the send fails part-way
    let (addr, seen) = server(|s, _, _| {
        let mut chunk = [0u8; 16 * 1024];
        let mut read = 0;
        while read < 64 * 1024 {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => read += n,
            }
        }
        reset_on_close(s);
        false
    });
    let mut s = spec(addr, io, 1, 1);
    s.targets[0].request = post(16 * 1024 * 1024);
    let r = result(s);
    assert_eq!(count(&r, &["errors", "reset"]), 1, "{}", brief(&r));
    assert_eq!(count(&r, &["errors", "timeout"]), 0);
    assert_eq!(count(&r, &["requests", "failed"]), 1);
    // not all of it went: unsent
    assert_eq!(count(&r, &["bytes", "sent"]), 0);
    assert_eq!(count(&r, &["connections", "opened"]), 1);
    // no wait for the run's 10 s timeout (a bound on a hang, not a speed target)
    let elapsed = r["elapsed_s"].as_f64().unwrap();
    assert!(elapsed < 5.0, "{elapsed} s");
    assert_eq!((seen.requests(), seen.accepted()), (1, 1));
}

fn an_answer_after_the_timeout_is_a_timeout(io: Io) {
    // each answer comes 230 ms after its request was read: 30 ms past the 200 ms timeout (a
    // margin a loaded machine keeps; an answer under ~10 ms late races its timeout)
    let (addr, seen) = server(|s, _, _| {
        std::thread::sleep(Duration::from_millis(230));
        s.write_all(HELLO).is_ok()
    });
    let mut s = spec(addr, io, 2, 4);
    s.timeout = Duration::from_millis(200);
    let r = result(s);
    assert_eq!(count(&r, &["errors", "timeout"]), 4, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 4);
    assert_eq!(count(&r, &["requests", "complete"]), 0);
    assert_eq!(count(&r, &["bytes", "sent"]), 4 * REQUEST.len() as u64);
    assert_eq!(count(&r, &["connections", "opened"]), 4);
    assert_eq!((seen.requests(), seen.accepted()), (4, 4));
}

fn calls_per_conn_counts_afresh_after_the_server_ends_a_connection(io: Io) {
    // every 3rd response of a connection says Connection: close (and the server closes): with
    // calls_per_conn 5 each connection serves 3, the count starting again on the next one
    let (addr, seen) = server(|s, nth, _| {
        if nth.is_multiple_of(3) {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello");
            return false;
        }
        s.write_all(HELLO).is_ok()
    });
    let mut s = spec(addr, io, 1, 30);
    s.calls_per_conn = 5;
    let r = result(s);
    assert_eq!(count(&r, &["requests", "complete"]), 30, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 0);
    assert_eq!(count(&r, &["connections", "opened"]), 10);
    assert_eq!((seen.requests(), seen.accepted()), (30, 10));
    assert!(seen.all_closed());
    assert_eq!(*seen.served.lock().unwrap(), vec![3; 10]);
}

fn a_large_request_still_going_out_at_its_timeout_is_unsent(io: Io) {
    // the server accepts and never reads: a 16 MB request cannot all go out
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        let held = listener.accept();
        // held until the run ended (or 10 s)
        let _ = wait.recv_timeout(Duration::from_secs(10));
        held.is_ok()
    });
    let mut s = spec(addr, io, 1, 1);
    s.targets[0].request = post(16 * 1024 * 1024);
    s.timeout = Duration::from_millis(300);
    let r = result(s);
    let _ = done.send(());
    assert!(server.join().unwrap());
    assert_eq!(count(&r, &["errors", "timeout"]), 1, "{}", brief(&r));
    assert_eq!(count(&r, &["requests", "failed"]), 1);
    assert_eq!(count(&r, &["bytes", "sent"]), 0);
    assert_eq!(count(&r, &["bytes", "total"]), 0);
    assert_eq!(count(&r, &["connections", "opened"]), 1);
}
}
