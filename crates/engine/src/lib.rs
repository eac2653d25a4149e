//! pounder's load engine: HTTP/1.1 over TCP (plain or TLS) or Unix sockets, closed or open loop
//! (a rate schedule or the explicit times of a replay), plain requests or logged-in virtual
//! users, with latency in HDR histograms measured from each request's intended send time.

mod connection;
mod cookies;
mod error_map;
mod histogram;
mod http;
mod merge;
mod pacer;
mod response;
mod runner;
mod scenario;
mod session;
mod spec;
mod stats;
mod steps;
mod timer;
mod tls;
mod uring;

pub use merge::{merge, sum_seconds};
pub use runner::{run, Progress, Run};
pub use scenario::{regex_groups, Capture, Encoding, Piece, Scenario, Source, Step};
pub use tls::{probe as tls_probe, TlsOptions};
pub use spec::{tcp_addrs, Addr, Io, Order, Replay, Spec, Stage, Target, Warmup};
pub use uring::{choose as choose_io, IoChoice, IoPath};
