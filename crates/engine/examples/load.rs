//! A minimal driver of the engine, for profiling it without Python (e.g. under callgrind):
//!
//!     cargo run --release --example load -- 127.0.0.1:8080 /path CONNECTIONS REQUESTS
//!
//! The I/O path is the engine's choice (`auto`) unless `POUNDER_IO` says `epoll` or `uring`.
//!
//! Prints the result JSON's request counts and the engine's CPU per request.

use pounder_engine::{run, Addr, Io, Spec, Target};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: load HOST:PORT PATH CONNECTIONS REQUESTS");
        std::process::exit(2);
    }
    let addr = args[1].parse().expect("HOST:PORT");
    let request = format!("GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: pounder\r\nAccept: */*\r\n\r\n", args[2], args[1]);
    let mut spec = Spec::new(vec![Target { addr: Addr::Tcp(vec![addr]), request: request.into_bytes(), head: false, weight: 1, tls_name: None }]);
    spec.connections = args[3].parse().expect("CONNECTIONS");
    spec.requests = Some(args[4].parse().expect("REQUESTS"));
    spec.io = match std::env::var("POUNDER_IO").as_deref() {
        Ok("epoll") => Io::Epoll,
        Ok("uring") => Io::Uring,
        _ => Io::Auto,
    };
    let result: serde_json::Value = serde_json::from_str(&run(spec).expect("a valid spec")).expect("JSON");
    let n = result["requests"]["complete"].as_f64().unwrap_or(0.0);
    let cpu = &result["client_cpu"];
    let us = (cpu["user_s"].as_f64().unwrap_or(0.0) + cpu["sys_s"].as_f64().unwrap_or(0.0)) * 1e6 / n.max(1.0);
    println!("complete {} failed {} cpu {us:.2} us/request io {}", result["requests"]["complete"], result["requests"]["failed"], result["io"]["path"]);
}
