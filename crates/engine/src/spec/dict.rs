//! The spec as its caller writes it (a Python dict, `EngineSpec` of `_engine.pyi`), read by serde
//! from any deserializer (the binding's is `pythonize`'s): records that refuse a key they do not
//! know (a misspelt key is an error, not a default), each key optional (None counts as missing);
//! `Spec::from_dict` then applies each key's default and checks it, naming the key.

use std::ffi::OsStr;
use std::fmt;
use std::net::SocketAddr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

use serde::de::{self, DeserializeOwned, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use super::{Addr, Io, Order, Replay, Spec, Stage, Target, Warmup};
use crate::scenario::{Capture, Encoding, Piece, Scenario, Source, Step};
use crate::tls::TlsOptions;

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct SpecDict {
    targets: Option<Vec<TargetDict>>,
    order: Option<String>,
    connections: Option<usize>,
    threads: Option<usize>,
    requests: Option<u64>,
    duration_s: Option<f64>,
    warmup_requests: Option<u64>,
    warmup_s: Option<f64>,
    stages: Option<Vec<Vec<f64>>>,
    replay: Option<ReplayDict>,
    scenario: Option<ScenarioDict>,
    tls: Option<TlsDict>,
    keepalive: Option<Flag>,
    calls_per_conn: Option<u32>,
    timeout_s: Option<f64>,
    throttle_bps: Option<u64>,
    tsv_path: Option<FsPath>,
    hdr_log_path: Option<FsPath>,
    start_at_unix_us: Option<u64>,
    slot_offset: Option<u64>,
    slot_stride: Option<u64>,
    export_histograms: Option<Flag>,
    io: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct TargetDict {
    tcp: Option<String>,
    unix: Option<String>,
    request: Option<Bytes>,
    head: Option<Flag>,
    weight: Option<u32>,
    tls_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct TlsDict {
    insecure: Option<Flag>,
    ca_pem: Option<Bytes>,
    cert_pem: Option<Bytes>,
    key_pem: Option<Bytes>,
    resume: Option<Flag>,
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct ReplayDict {
    times_us: Option<Vec<u64>>,
    targets: Option<Vec<u32>>,
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct ScenarioDict {
    vars: Option<Vec<String>>,
    login: Option<usize>,
    steps: Option<Vec<StepDict>>,
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct StepDict {
    name: Option<String>,
    target: Option<usize>,
    head: Option<Vec<PieceDict>>,
    body: Option<Vec<PieceDict>>,
    is_head: Option<Flag>,
    expect: Option<Vec<u16>>,
    think_s: Option<f64>,
    captures: Option<Vec<CaptureDict>>,
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct PieceDict {
    text: Option<Bytes>,
    var: Option<usize>,
    enc: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct CaptureDict {
    var: Option<usize>,
    from: Option<String>,
    name: Option<String>,
    regex: Option<String>,
}

/// The records above read from `d`; the error names the key by its path (`targets[0].weight`).
fn read<'de, T: DeserializeOwned, D: Deserializer<'de>>(d: D, what: &str) -> Result<T, String>
where
    D::Error: fmt::Display,
{
    serde_path_to_error::deserialize(d).map_err(|e| match e.path().to_string().as_str() {
        "." | "?" => format!("{what}: {}", e.inner()),
        path => format!("{what}: {path}: {}", e.inner()),
    })
}

impl Spec {
    /// The spec of a dict (`EngineSpec`): unknown keys refused, each missing key its default; the
    /// error (`spec: ...`) names the key. `Spec::validate` checks the rest.
    pub fn from_dict<'de, D: Deserializer<'de>>(d: D) -> Result<Spec, String>
    where
        D::Error: fmt::Display,
    {
        let d: SpecDict = read(d, "spec")?;
        let targets = d.targets.ok_or("spec: targets is required")?;
        let mut s = Spec::new(targets.into_iter().map(target).collect::<Result<_, _>>()?);
        s.order = match d.order.as_deref() {
            None | Some("sequential") => Order::Sequential,
            Some("random") => Order::Random,
            Some(o) => return Err(format!("spec: unknown order {o:?}")),
        };
        s.connections = d.connections.ok_or("spec: connections is required")?;
        s.threads = d.threads.unwrap_or(1);
        s.requests = d.requests;
        s.duration = d.duration_s.map(|v| seconds(v, "duration_s")).transpose()?;
        s.warmup = match (d.warmup_requests.unwrap_or(0), d.warmup_s.unwrap_or(0.0)) {
            (0, 0.0) => Warmup::None,
            (n, 0.0) => Warmup::Requests(n),
            (0, s) => Warmup::Time(seconds(s, "warmup_s")?),
            _ => return Err("spec: warmup_requests and warmup_s exclude each other".into()),
        };
        s.stages = d.stages.map(|v| v.into_iter().map(stage).collect::<Result<_, _>>()).transpose()?;
        if d.replay.is_some() && d.order.is_some() {
            return Err("spec: replay excludes order (each request names its target)".into());
        }
        s.replay = d.replay.map(replay).transpose()?;
        s.scenario = d.scenario.map(scenario).transpose()?;
        s.tls = d.tls.map(tls);
        s.keepalive = flag(d.keepalive, true);
        s.calls_per_conn = d.calls_per_conn.unwrap_or(0);
        s.timeout = seconds(d.timeout_s.unwrap_or(30.0), "timeout_s")?;
        s.throttle_bps = d.throttle_bps;
        s.tsv_path = d.tsv_path.map(|p| p.0);
        s.hdr_log_path = d.hdr_log_path.map(|p| p.0);
        s.start_at_unix_us = d.start_at_unix_us;
        s.slot_offset = d.slot_offset.unwrap_or(0);
        s.slot_stride = d.slot_stride.unwrap_or(1);
        s.export_histograms = flag(d.export_histograms, false);
        s.io = match d.io.as_deref() {
            None | Some("auto") => Io::Auto,
            Some("uring") => Io::Uring,
            Some("epoll") => Io::Epoll,
            Some(o) => return Err(format!("spec: unknown io {o:?} (auto, uring or epoll)")),
        };
        Ok(s)
    }
}

impl TlsOptions {
    /// The options of a dict (`EngineTls`): unknown keys refused, each missing key its default;
    /// the error (`tls: ...`) names the key.
    pub fn from_dict<'de, D: Deserializer<'de>>(d: D) -> Result<TlsOptions, String>
    where
        D::Error: fmt::Display,
    {
        read(d, "tls").map(tls)
    }
}

/// Comma-separated socket addresses (`127.0.0.1:8080,[::1]:8080`), in their order; None when one
/// is not an address.
pub fn tcp_addrs(tcp: &str) -> Option<Vec<SocketAddr>> {
    tcp.split(',').map(|a| a.trim().parse().ok()).collect()
}

fn seconds(s: f64, key: &str) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s).map_err(|_| format!("spec: {key} must be a non-negative number of seconds"))
}

fn flag(f: Option<Flag>, default: bool) -> bool {
    f.map_or(default, |f| f.0)
}

fn target(t: TargetDict) -> Result<Target, String> {
    let addr = match (t.tcp, t.unix) {
        (Some(tcp), None) => Addr::Tcp(tcp_addrs(&tcp).ok_or_else(|| format!("spec: bad tcp address {tcp:?}"))?),
        (None, Some(path)) => Addr::Unix(PathBuf::from(path)),
        _ => return Err("spec: a target needs exactly one of tcp and unix".into()),
    };
    Ok(Target {
        addr,
        request: t.request.ok_or("spec: request is required")?.0,
        head: flag(t.head, false),
        weight: t.weight.unwrap_or(1),
        tls_name: t.tls_name,
    })
}

fn stage(st: Vec<f64>) -> Result<Stage, String> {
    match st[..] {
        [dur, r0, r1] => Ok(Stage { duration: seconds(dur, "stages")?, start_rate: r0, end_rate: r1 }),
        _ => Err("spec: each stage is [duration_s, start_rate, end_rate]".into()),
    }
}

fn replay(r: ReplayDict) -> Result<Replay, String> {
    let times_us = r.times_us.ok_or("spec: times_us is required")?;
    let targets = r.targets.ok_or("spec: targets is required")?;
    Ok(Replay { times_us: times_us.into(), targets: targets.into() })
}

fn tls(t: TlsDict) -> TlsOptions {
    TlsOptions {
        insecure: flag(t.insecure, false),
        ca_pem: t.ca_pem.map(|b| b.0),
        cert_pem: t.cert_pem.map(|b| b.0),
        key_pem: t.key_pem.map(|b| b.0),
        resume: flag(t.resume, true),
    }
}

/// `what` of the record at `at`, or `spec: {at}.{what} is required`.
fn need<T>(v: Option<T>, at: &str, what: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("spec: {at}.{what} is required"))
}

/// Each record of a list, converted by `f` with its path (`at.key[i]`).
fn each<R, T>(list: Vec<R>, at: &str, key: &str, f: impl Fn(R, &str) -> Result<T, String>) -> Result<Vec<T>, String> {
    list.into_iter().enumerate().map(|(i, r)| f(r, &format!("{at}.{key}[{i}]"))).collect()
}

fn scenario(d: ScenarioDict) -> Result<Scenario, String> {
    let at = "scenario";
    Ok(Scenario {
        vars: need(d.vars, at, "vars")?,
        login: need(d.login, at, "login")?,
        steps: each(need(d.steps, at, "steps")?, at, "steps", step)?,
    })
}

fn step(d: StepDict, at: &str) -> Result<Step, String> {
    let think = d.think_s.unwrap_or(0.0);
    Ok(Step {
        name: need(d.name, at, "name")?,
        target: need(d.target, at, "target")?,
        head: each(need(d.head, at, "head")?, at, "head", piece)?,
        body: d.body.map(|b| each(b, at, "body", piece)).transpose()?,
        is_head: flag(d.is_head, false),
        expect: d.expect,
        think: Duration::try_from_secs_f64(think)
            .map_err(|_| format!("spec: {at}.think_s must be a non-negative number of seconds"))?,
        captures: d.captures.map(|c| each(c, at, "captures", capture)).transpose()?.unwrap_or_default(),
    })
}

fn piece(d: PieceDict, at: &str) -> Result<Piece, String> {
    match (d.text, d.var) {
        (Some(text), None) => Ok(Piece::Text(text.0)),
        (None, Some(var)) => {
            let enc = match d.enc.as_deref() {
                None | Some("raw") => Encoding::Raw,
                Some("form") => Encoding::Form,
                Some("json") => Encoding::Json,
                Some("path") => Encoding::Path,
                Some(e) => return Err(format!("spec: {at}.enc: unknown encoding {e:?} (raw, form, json or path)")),
            };
            Ok(Piece::Var { var, enc })
        }
        _ => Err(format!("spec: {at}: a piece is {{\"text\": bytes}} or {{\"var\": int, \"enc\": str}}")),
    }
}

fn capture(d: CaptureDict, at: &str) -> Result<Capture, String> {
    let from = match need(d.from, at, "from")?.as_str() {
        "header" => Source::Header,
        "cookie" => Source::Cookie,
        "body" => Source::Body,
        f => return Err(format!("spec: {at}.from: unknown source {f:?} (header, cookie or body)")),
    };
    Capture::new(need(d.var, at, "var")?, from, d.name, d.regex.as_deref())
        .map_err(|e| format!("spec: {at}.regex: {e}"))
}

/// A bool, and only a bool (serde's would take any value Python finds true).
struct Flag(bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Flag, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Flag;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a bool")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Flag, E> {
                Ok(Flag(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// Bytes (a Python `bytes`), or a list of byte values.
struct Bytes(Vec<u8>);

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
                Ok(Bytes(v.to_vec()))
            }
            fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
                Ok(Bytes(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bytes, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(b) = seq.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(Bytes(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// A file name: text, or the bytes of one (`os.fsencode`'s: a name need not be UTF-8).
struct FsPath(PathBuf);

impl<'de> Deserialize<'de> for FsPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FsPath, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = FsPath;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a path")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<FsPath, E> {
                Ok(FsPath(PathBuf::from(v)))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<FsPath, E> {
                Ok(FsPath(PathBuf::from(OsStr::from_bytes(v))))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests;
