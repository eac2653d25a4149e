//! What the engine's integration tests share: each plain-HTTP test runs on both I/O paths, and
//! every result says it ran on the path asked for.

// each test file uses its own part of this module
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pounder_engine::{Io, Run, Spec};
use serde_json::Value;

/// `both_paths! { fn name(io: Io) { ... } }` makes the tests `name::uring` and `name::epoll`,
/// which run the body with `Io::Uring` and `Io::Epoll` (`cargo test uring` runs the ring's).
#[macro_export]
macro_rules! both_paths {
    ($($(#[$meta:meta])* fn $name:ident($io:ident: Io) $body:block)*) => {$(
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            fn on_path($io: pounder_engine::Io) $body

            #[test]
            fn uring() {
                on_path(pounder_engine::Io::Uring)
            }

            #[test]
            fn epoll() {
                on_path(pounder_engine::Io::Epoll)
            }
        }
    )*};
}

/// The result's name of the path `io` asks for.
pub fn path(io: Io) -> &'static str {
    match io {
        Io::Uring => "uring",
        Io::Epoll => "epoll",
        Io::Auto => panic!("a test asks for a path"),
    }
}

/// A result's text parsed, checked to have run on the path `io` asks for.
pub fn checked(text: &str, io: Io) -> Value {
    let r: Value = serde_json::from_str(text).unwrap();
    assert_eq!(r["io"]["path"], path(io), "the result's io: {}", r["io"]);
    r
}

/// Runs `s` to its end: its result, checked to have run on the path it asked for.
pub fn result(s: Spec) -> Value {
    let io = s.io;
    checked(&pounder_engine::run(s).unwrap(), io)
}

/// The result of a started run, waited for (checked as `result`).
pub fn wait_result(run: &Run, io: Io) -> Value {
    while !run.wait(std::time::Duration::from_secs(1)) {}
    checked(&run.result().unwrap(), io)
}

/// A fresh directory of this process's for a test on path `io` (tests on both paths run at once).
pub fn temp_dir(name: &str, io: Io) -> TempDir {
    let dir = std::env::temp_dir().join(format!(
        "pounder-engine-{name}-{}-{}",
        std::process::id(),
        path(io)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// A test's directory, removed when dropped: also when an assertion fails first.
pub struct TempDir(std::path::PathBuf);

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Serves keep-alive requests with a 5-byte body (404 for `/missing`, else 200); counts the
/// requests it read.
pub fn serve<S: std::io::Read + Write>(stream: S, count: &AtomicU64) {
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut close = false;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h.eq_ignore_ascii_case("connection: close\r\n") {
                close = true;
            }
            if h == "\r\n" {
                break;
            }
        }
        count.fetch_add(1, Ordering::SeqCst);
        let stream = reader.get_mut();
        let answer: &[u8] = if line.starts_with("GET /missing ") {
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nnope!"
        } else {
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
        };
        if stream.write_all(answer).is_err() || close {
            return;
        }
    }
}

pub fn tcp_server() -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let count = Arc::new(AtomicU64::new(0));
    let c = Arc::clone(&count);
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let c = Arc::clone(&c);
            std::thread::spawn(move || serve(s, &c));
        }
    });
    (addr, count)
}

/// Serves keep-alive requests with a 2-byte body, each answered `delay` after it was read;
/// records each request line it read (how many: their count).
pub fn recording_server(delay: Duration) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let all = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let all = Arc::clone(&all);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        if h == "\r\n" {
                            break;
                        }
                    }
                    all.lock().unwrap().push(line.trim_end().to_string());
                    std::thread::sleep(delay);
                    if reader.get_mut().write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}
