//! The in-process servers of the io_uring tests (tests/uring.rs), scripted per request, and the
//! requests and responses they exchange: what a server saw, how it answers, bodies and heads
//! larger than any receive buffer, resets.

// each test file uses its own part of this module
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pounder_engine::{Addr, Io, Spec, Target};

/// What a server saw.
#[derive(Default)]
pub struct Seen {
    pub accepted: AtomicU64,
    pub requests: AtomicU64,
    /// Connections the server holds open now.
    pub open: AtomicI64,
    /// Responses written on each connection, as each ended.
    pub served: Mutex<Vec<u64>>,
}

impl Seen {
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Waits (at most 5 s) until the server holds no connection open: the client closed them all.
    pub fn all_closed(&self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.open.load(Ordering::SeqCst) != 0 {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }
}

/// How a server answers the `nth` (1-based) request of a connection, whose head is `head`:
/// false closes the connection.
pub type Answer<S> = dyn Fn(&mut S, u64, &[u8]) -> bool + Send + Sync;

/// Reads one request head (the tests' requests have no body) into `buf`'s front, returning its
/// length; None at the connection's end.
pub fn read_head<S: Read>(s: &mut S, buf: &mut Vec<u8>) -> Option<usize> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(end + 4);
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

pub fn connection<S: Read + Write>(mut s: S, seen: &Seen, answer: &Answer<S>) {
    let mut buf = Vec::new();
    let mut nth = 0;
    while let Some(len) = read_head(&mut s, &mut buf) {
        nth += 1;
        seen.requests.fetch_add(1, Ordering::SeqCst);
        let head: Vec<u8> = buf.drain(..len).collect();
        if !answer(&mut s, nth, &head) {
            break;
        }
    }
    seen.served.lock().unwrap().push(nth);
    drop(s);
    seen.open.fetch_sub(1, Ordering::SeqCst);
}

/// Accepts connections from `incoming`, a thread for each (small stacks: hundreds of them).
pub fn accept<S: Read + Write + Send + 'static>(
    incoming: impl Iterator<Item = S> + Send + 'static,
    answer: Arc<Answer<S>>,
) -> Arc<Seen> {
    let seen = Arc::new(Seen::default());
    let s = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in incoming {
            s.accepted.fetch_add(1, Ordering::SeqCst);
            s.open.fetch_add(1, Ordering::SeqCst);
            let (s, answer) = (Arc::clone(&s), Arc::clone(&answer));
            std::thread::Builder::new()
                .stack_size(128 * 1024)
                .spawn(move || connection(stream, &s, &*answer))
                .unwrap();
        }
    });
    seen
}

/// A TCP server on a free loopback port (a listen backlog of 1024: hundreds connect at once).
pub fn server(
    answer: impl Fn(&mut TcpStream, u64, &[u8]) -> bool + Send + Sync + 'static,
) -> (SocketAddr, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    // SAFETY: listen on the socket we own (again: a longer queue).
    assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 1024) }, 0);
    let addr = listener.local_addr().unwrap();
    let seen = accept(
        std::iter::from_fn(move || listener.accept().ok().map(|(s, _)| s)),
        Arc::new(answer),
    );
    (addr, seen)
}

/// Answers every request with `response`, keeping the connection.
pub fn always(
    response: Vec<u8>,
) -> impl Fn(&mut TcpStream, u64, &[u8]) -> bool + Send + Sync + 'static {
    move |s, _, _| s.write_all(&response).is_ok()
}

pub const HELLO: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
pub const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: test\r\n\r\n";

pub fn target(addr: Addr) -> Target {
    Target {
        addr,
        request: REQUEST.to_vec(),
        head: false,
        weight: 1,
        tls_name: None,
    }
}

/// `requests` over `connections` (threads: 2 when there are 2 connections or more) on path `io`.
pub fn spec(addr: SocketAddr, io: Io, connections: usize, requests: u64) -> Spec {
    let mut s = Spec::new(vec![target(Addr::Tcp(vec![addr]))]);
    s.connections = connections;
    s.threads = connections.min(2);
    s.requests = Some(requests);
    s.timeout = Duration::from_secs(10);
    s.io = io;
    s
}

/// A body of `len` bytes that is not one byte repeated.
pub fn letters(len: usize) -> Vec<u8> {
    (0..len).map(|i| b'a' + (i % 26) as u8).collect()
}

/// `payload` chunked in pieces of many sizes (1 byte to 1 MB, none a power of two but one).
pub fn chunked(payload: &[u8]) -> Vec<u8> {
    let mut out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    let sizes = [1, 7, 4096, 16_383, 65_537, 100_000, 1_000_003];
    let (mut at, mut k) = (0, 0);
    while at < payload.len() {
        let n = sizes[k % sizes.len()].min(payload.len() - at);
        out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
        out.extend_from_slice(&payload[at..at + n]);
        out.extend_from_slice(b"\r\n");
        at += n;
        k += 1;
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// A response whose head has `headers` headers of `size` bytes each (and a 5-byte body).
pub fn big_head(headers: usize, size: usize) -> Vec<u8> {
    let mut out = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n".to_vec();
    for i in 0..headers {
        let name = format!("X-Filler-{i:03}: ");
        out.extend_from_slice(name.as_bytes());
        out.extend(std::iter::repeat_n(b'v', size - name.len() - 2));
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\nhello");
    out
}

/// Makes the socket's close send a reset (SO_LINGER 0).
pub fn reset_on_close(s: &TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let size = std::mem::size_of::<libc::linger>() as libc::socklen_t;
    // SAFETY: a plain setsockopt on the socket we own, with a value of its size.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            size,
        )
    };
    assert_eq!(rc, 0);
}

/// A POST of `len` body bytes (a Content-Length body).
pub fn post(len: usize) -> Vec<u8> {
    let mut request =
        format!("POST / HTTP/1.1\r\nHost: test\r\nContent-Length: {len}\r\n\r\n").into_bytes();
    request.resize(request.len() + len, b'x');
    request
}

/// A result's counts, for a failed assertion's message.
pub fn brief(r: &serde_json::Value) -> String {
    let keys = ["io", "requests", "errors", "bytes", "connections", "status"];
    keys.iter()
        .map(|k| format!("{k}: {}", r[*k]))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn count(r: &serde_json::Value, path: &[&str]) -> u64 {
    path.iter()
        .fold(r, |v, k| &v[*k])
        .as_u64()
        .unwrap_or_else(|| panic!("{path:?} in {r}"))
}
