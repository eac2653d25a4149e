//! pounder's load engine: HTTP/1.1 over TCP or Unix sockets, closed or open loop, with
//! latency in HDR histograms measured from each request's intended send time.

pub mod connection;
pub mod histogram;
pub mod http;
pub mod pacer;
pub mod spec;
pub mod stats;
pub mod timer;
pub mod runner;

pub use runner::{run, Progress, Run};
pub use spec::{Addr, Order, Spec, Stage, Target, Warmup};
