//! What a run is: targets with pre-serialized requests, the load model and its limits.
//!
//! The engine does no URL parsing or name resolution: its caller hands it resolved addresses and
//! the exact bytes of each request, so the hot path only copies bytes into a socket.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

mod dict;
pub use dict::tcp_addrs;

/// Where a target listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addr {
    /// The addresses of one host name, tried in this order until one accepts the connection, as
    /// a browser falls back from one address of a name to the next (`localhost` may be both
    /// 127.0.0.1 and ::1 while the server listens on one of them). Never empty.
    Tcp(Vec<SocketAddr>),
    Unix(PathBuf),
}

/// One request the engine sends, byte for byte.
#[derive(Clone, Debug)]
pub struct Target {
    pub addr: Addr,
    /// The complete HTTP/1.1 request: request line, headers, blank line, body.
    pub request: Vec<u8>,
    /// The request is HEAD: the response has no body whatever its headers say.
    pub head: bool,
    /// Relative weight when targets are picked at random.
    pub weight: u32,
    /// HTTPS: the server name (SNI and the certificate's name; an IP address is checked against
    /// the certificate's addresses and sends no SNI). None: plain HTTP.
    pub tls_name: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Sequential,
    Random,
}

/// A stage of an open-loop schedule: the global rate ramps linearly from `start_rate` to
/// `end_rate` (requests per second, all threads together) over `duration`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stage {
    pub duration: Duration,
    pub start_rate: f64,
    pub end_rate: f64,
}

/// A timed replay: request `i` is sent `times_us[i]` microseconds after the run's start, to
/// `targets[i]` (an index into the spec's targets). Shared, not copied: a log of a million
/// requests is two arrays, its distinct requests are the targets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replay {
    pub times_us: Arc<[u64]>,
    pub targets: Arc<[u32]>,
}

/// Which I/O path the engine threads take (`uring::choose` decides `Auto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Io {
    /// io_uring when the kernel allows it and the run needs nothing only epoll has, else epoll.
    Auto,
    /// io_uring or an error saying why not.
    Uring,
    /// tokio's epoll reactor.
    Epoll,
}

/// What ends the warm-up phase (not measured).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Warmup {
    None,
    Requests(u64),
    Time(Duration),
}

#[derive(Clone, Debug)]
pub struct Spec {
    pub targets: Vec<Target>,
    pub order: Order,
    /// Closed loop: concurrent users. Open loop: cap on connections in flight.
    pub connections: usize,
    pub threads: usize,
    /// Measured requests to run (warm-up excluded).
    pub requests: Option<u64>,
    /// Length of the measured phase.
    pub duration: Option<Duration>,
    pub warmup: Warmup,
    /// `None`: closed loop. `Some`: open loop on this schedule.
    pub stages: Option<Vec<Stage>>,
    /// `Some`: open loop at these explicit times (excludes `stages`, random order, warm-up).
    pub replay: Option<Replay>,
    /// Logged-in virtual users: each connection task runs the scenario's steps (the targets give
    /// the steps' addresses only).
    pub scenario: Option<crate::scenario::Scenario>,
    pub keepalive: bool,
    /// Close a connection after this many responses (0: no limit).
    pub calls_per_conn: u32,
    /// Per request, from the start of the attempt (connect included) to the last byte.
    pub timeout: Duration,
    /// Receive bandwidth per connection, bytes per second.
    pub throttle_bps: Option<u64>,
    pub tsv_path: Option<PathBuf>,
    pub hdr_log_path: Option<PathBuf>,
    /// Start at this moment (microseconds since the Unix epoch, this machine's clock) instead of
    /// at once: agents on several machines start one run together. A moment in the past starts
    /// at once.
    pub start_at_unix_us: Option<u64>,
    /// This run is share `slot_offset` of `slot_stride`: it takes the slots `slot_offset`,
    /// `slot_offset + slot_stride`, ... of one global sequence, so that `slot_stride` runs with
    /// offsets 0 to `slot_stride - 1` together send exactly the requests of one (`requests` and
    /// the warm-up count stay global), and in open loop exactly the arrivals of one schedule.
    pub slot_offset: u64,
    pub slot_stride: u64,
    /// Put the raw histograms (encoded) in the result, as a whole and per second, so that the
    /// results of several shares can be merged exactly (`merge`).
    pub export_histograms: bool,
    /// How HTTPS targets are trusted and resumed (None: the system's roots, resumption on).
    pub tls: Option<crate::tls::TlsOptions>,
    /// The I/O path asked for.
    pub io: Io,
}

impl Spec {
    /// A closed-loop spec with the given targets and defaults for everything else.
    pub fn new(targets: Vec<Target>) -> Spec {
        Spec {
            targets,
            order: Order::Sequential,
            connections: 1,
            threads: 1,
            requests: None,
            duration: None,
            warmup: Warmup::None,
            stages: None,
            replay: None,
            scenario: None,
            keepalive: true,
            calls_per_conn: 0,
            timeout: Duration::from_secs(30),
            throttle_bps: None,
            tsv_path: None,
            hdr_log_path: None,
            start_at_unix_us: None,
            slot_offset: 0,
            slot_stride: 1,
            export_histograms: false,
            tls: None,
            io: Io::Auto,
        }
    }

    /// Checks what the engine relies on; the message names the offending field.
    pub fn validate(&self) -> Result<(), String> {
        if self.targets.is_empty() {
            return Err("targets: at least one target is needed".into());
        }
        // a scenario's targets are addresses only: their requests are not sent
        if self.scenario.is_none() && self.targets.iter().any(|t| t.request.is_empty()) {
            return Err("targets: a request is empty".into());
        }
        if self.targets.iter().any(|t| t.tls_name.is_some() && matches!(t.addr, Addr::Unix(_))) {
            return Err("targets: tls_name needs a tcp address".into());
        }
        // sockaddr_un's sun_path holds 107 bytes and the final NUL
        if self.targets.iter().any(|t| matches!(&t.addr, Addr::Unix(p) if p.as_os_str().len() >= 108)) {
            return Err("targets: a Unix socket path must be shorter than 108 bytes".into());
        }
        if self.targets.iter().any(|t| t.weight == 0) {
            return Err("targets: weight must be at least 1".into());
        }
        if self.connections == 0 {
            return Err("connections must be at least 1".into());
        }
        if self.threads == 0 || self.threads > self.connections {
            return Err("threads must be between 1 and the number of connections".into());
        }
        if self.timeout.is_zero() {
            return Err("timeout must be positive".into());
        }
        if self.throttle_bps == Some(0) {
            return Err("throttle must be positive".into());
        }
        if self.requests == Some(0) {
            return Err("requests must be at least 1".into());
        }
        if self.duration.is_some_and(|d| d.is_zero()) {
            return Err("duration must be positive".into());
        }
        if self.slot_stride == 0 || self.slot_offset >= self.slot_stride {
            return Err("slot_offset must be below slot_stride, which must be at least 1".into());
        }
        if let Some(replay) = &self.replay {
            replay.validate(self)?;
        }
        if let Some(scenario) = &self.scenario {
            scenario.validate(self.targets.len())?;
            if self.replay.is_some() {
                return Err("scenario excludes replay".into());
            }
        }
        match &self.stages {
            None if self.replay.is_none() && self.requests.is_none() && self.duration.is_none() => {
                return Err("a closed-loop run needs requests or duration".into())
            }
            Some(stages) => {
                if stages.is_empty() {
                    return Err("stages: at least one stage is needed".into());
                }
                for s in stages {
                    let ok = |r: f64| r.is_finite() && r >= 0.0;
                    if !ok(s.start_rate) || !ok(s.end_rate) || s.duration.is_zero() {
                        return Err("stages: each needs a positive duration and rates >= 0".into());
                    }
                }
                if stages.iter().all(|s| s.start_rate == 0.0 && s.end_rate == 0.0) {
                    return Err("stages: the schedule sends no request".into());
                }
                if self.warmup != Warmup::None && stages[0].start_rate == 0.0 {
                    return Err("warmup runs at the first stage's rate, which is 0".into());
                }
            }
            None => {}
        }
        Ok(())
    }
}

impl Replay {
    /// What a replay relies on: as many times as targets, non-decreasing, indexes in range, and
    /// none of the other schedules.
    fn validate(&self, spec: &Spec) -> Result<(), String> {
        if self.times_us.is_empty() {
            return Err("replay: at least one request is needed".into());
        }
        if self.times_us.len() != self.targets.len() {
            return Err("replay: times_us and targets must have the same length".into());
        }
        if let Some(i) = self.times_us.windows(2).position(|w| w[1] < w[0]) {
            return Err(format!("replay: times_us must not decrease (request {} is before request {i})", i + 1));
        }
        if let Some(i) = self.targets.iter().position(|&t| t as usize >= spec.targets.len()) {
            return Err(format!("replay: request {i} names target {}, beyond the targets", self.targets[i]));
        }
        if spec.stages.is_some() {
            return Err("replay excludes stages".into());
        }
        if spec.order != Order::Sequential {
            return Err("replay excludes order: each request names its target".into());
        }
        if spec.warmup != Warmup::None {
            return Err("replay excludes a warm-up".into());
        }
        Ok(())
    }
}
