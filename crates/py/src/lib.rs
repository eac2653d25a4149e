//! `pounder._engine`: the load engine for Python. It converts a spec dict into the engine's
//! `Spec`, runs it in background threads, and releases the GIL while Python waits.

use std::path::PathBuf;
use std::time::Duration;

use pounder_engine::{Addr, Io, Order, Replay, Run, Spec, Stage, Target, TlsOptions, Warmup};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

mod flame;
mod scenario;

fn bad(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

/// `dict[key]`, or `None` when missing or None.
fn item<'py>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(d.get_item(key)?.filter(|v| !v.is_none()))
}

fn opt<'py, T>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<T>>
where
    T: for<'a> FromPyObject<'a, 'py>,
{
    match item(d, key)? {
        Some(v) => v.extract::<T>().map(Some).map_err(|_| bad(format!("spec: {key} has the wrong type"))),
        None => Ok(None),
    }
}

fn req<'py, T>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T>
where
    T: for<'a> FromPyObject<'a, 'py>,
{
    opt(d, key)?.ok_or_else(|| bad(format!("spec: {key} is required")))
}

fn seconds(s: f64, key: &str) -> PyResult<Duration> {
    Duration::try_from_secs_f64(s).map_err(|_| bad(format!("spec: {key} must be a non-negative number of seconds")))
}

fn target(d: &Bound<'_, PyDict>) -> PyResult<Target> {
    let addr = match (opt::<String>(d, "tcp")?, opt::<String>(d, "unix")?) {
        (Some(tcp), None) => Addr::Tcp(
            tcp.split(',')
                .map(|a| a.trim().parse().map_err(|_| bad(format!("spec: bad tcp address {tcp:?}"))))
                .collect::<PyResult<_>>()?,
        ),
        (None, Some(path)) => Addr::Unix(PathBuf::from(path)),
        _ => return Err(bad("spec: a target needs exactly one of tcp and unix")),
    };
    Ok(Target {
        addr,
        request: req::<Vec<u8>>(d, "request")?,
        head: opt(d, "head")?.unwrap_or(false),
        weight: opt(d, "weight")?.unwrap_or(1),
        tls_name: opt(d, "tls_name")?,
    })
}

/// `{"insecure", "ca_pem", "cert_pem", "key_pem", "resume"}` (PEM contents as bytes).
fn tls_options(d: &Bound<'_, PyDict>) -> PyResult<TlsOptions> {
    Ok(TlsOptions {
        insecure: opt(d, "insecure")?.unwrap_or(false),
        ca_pem: opt(d, "ca_pem")?,
        cert_pem: opt(d, "cert_pem")?,
        key_pem: opt(d, "key_pem")?,
        resume: opt(d, "resume")?.unwrap_or(true),
    })
}

/// One TLS handshake to `tcp` (comma-separated addresses, tried in order) as a run would make
/// it, without a request: None when it succeeds, else a one-line reason. ValueError when the
/// options are bad (naming the field).
#[pyfunction]
fn tls_probe(
    py: Python<'_>,
    tcp: String,
    tls_name: String,
    tls: &Bound<'_, PyDict>,
    timeout_s: f64,
) -> PyResult<Option<String>> {
    let addrs = tcp
        .split(',')
        .map(|a| a.trim().parse().map_err(|_| bad(format!("tls_probe: bad tcp address {tcp:?}"))))
        .collect::<PyResult<Vec<_>>>()?;
    let options = tls_options(tls)?;
    let timeout = seconds(timeout_s, "timeout_s")?;
    py.detach(|| pounder_engine::tls_probe(&addrs, &tls_name, &options, timeout)).map_err(bad)
}

/// `{"times_us": [...], "targets": [...]}`: request i at times_us[i] µs, to targets[targets[i]].
fn replay(r: &Bound<'_, PyDict>, spec: &Bound<'_, PyDict>) -> PyResult<Replay> {
    if item(spec, "order")?.is_some() {
        return Err(bad("spec: replay excludes order (each request names its target)"));
    }
    let times_us: Vec<u64> = req(r, "times_us")?;
    let targets: Vec<u32> = req(r, "targets")?;
    Ok(Replay { times_us: times_us.into(), targets: targets.into() })
}

fn spec(d: &Bound<'_, PyDict>) -> PyResult<Spec> {
    let targets: Bound<'_, PyList> = req(d, "targets")?;
    let targets = targets
        .iter()
        .map(|t| target(t.cast::<PyDict>().map_err(|_| bad("spec: each target must be a dict"))?))
        .collect::<PyResult<Vec<_>>>()?;
    let mut s = Spec::new(targets);
    s.order = match opt::<String>(d, "order")?.as_deref() {
        None | Some("sequential") => Order::Sequential,
        Some("random") => Order::Random,
        Some(o) => return Err(bad(format!("spec: unknown order {o:?}"))),
    };
    s.connections = req(d, "connections")?;
    s.threads = opt(d, "threads")?.unwrap_or(1);
    s.requests = opt(d, "requests")?;
    s.duration = opt::<f64>(d, "duration_s")?.map(|v| seconds(v, "duration_s")).transpose()?;
    let warm_n: u64 = opt(d, "warmup_requests")?.unwrap_or(0);
    let warm_s: f64 = opt(d, "warmup_s")?.unwrap_or(0.0);
    s.warmup = match (warm_n, warm_s) {
        (0, 0.0) => Warmup::None,
        (n, 0.0) => Warmup::Requests(n),
        (0, s) => Warmup::Time(seconds(s, "warmup_s")?),
        _ => return Err(bad("spec: warmup_requests and warmup_s exclude each other")),
    };
    s.stages = opt::<Vec<Vec<f64>>>(d, "stages")?
        .map(|v| {
            v.into_iter()
                .map(|st| match st[..] {
                    [dur, r0, r1] => Ok(Stage { duration: seconds(dur, "stages")?, start_rate: r0, end_rate: r1 }),
                    _ => Err(bad("spec: each stage is [duration_s, start_rate, end_rate]")),
                })
                .collect::<PyResult<Vec<_>>>()
        })
        .transpose()?;
    s.replay = opt::<Bound<'_, PyDict>>(d, "replay")?.map(|r| replay(&r, d)).transpose()?;
    s.scenario = opt::<Bound<'_, PyDict>>(d, "scenario")?.map(|sc| scenario::scenario(&sc)).transpose()?;
    s.tls = opt::<Bound<'_, PyDict>>(d, "tls")?.map(|t| tls_options(&t)).transpose()?;
    s.keepalive = opt(d, "keepalive")?.unwrap_or(true);
    s.calls_per_conn = opt(d, "calls_per_conn")?.unwrap_or(0);
    s.timeout = seconds(opt(d, "timeout_s")?.unwrap_or(30.0), "timeout_s")?;
    s.throttle_bps = opt(d, "throttle_bps")?;
    s.tsv_path = opt::<PathBuf>(d, "tsv_path")?;
    s.hdr_log_path = opt::<PathBuf>(d, "hdr_log_path")?;
    s.start_at_unix_us = opt(d, "start_at_unix_us")?;
    s.slot_offset = opt(d, "slot_offset")?.unwrap_or(0);
    s.slot_stride = opt(d, "slot_stride")?.unwrap_or(1);
    s.export_histograms = opt(d, "export_histograms")?.unwrap_or(false);
    s.io = match opt::<String>(d, "io")?.as_deref() {
        None | Some("auto") => Io::Auto,
        Some("uring") => Io::Uring,
        Some("epoll") => Io::Epoll,
        Some(o) => return Err(bad(format!("spec: unknown io {o:?} (auto, uring or epoll)"))),
    };
    Ok(s)
}

/// A run in flight.
#[pyclass(name = "Run", module = "pounder._engine", frozen)]
struct PyRun {
    inner: Run,
}

#[pymethods]
impl PyRun {
    /// Live counters: phase, elapsed_s, complete, failed, rate.
    fn progress<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = self.inner.progress();
        let d = PyDict::new(py);
        d.set_item("phase", p.phase)?;
        d.set_item("elapsed_s", p.elapsed_s)?;
        d.set_item("complete", p.complete)?;
        d.set_item("failed", p.failed)?;
        d.set_item("rate", p.rate)?;
        Ok(d)
    }

    /// Waits up to `timeout_s` seconds for the end, without holding the GIL; True when done.
    fn wait(&self, py: Python<'_>, timeout_s: f64) -> bool {
        let timeout = Duration::try_from_secs_f64(timeout_s).unwrap_or(Duration::ZERO);
        py.detach(|| self.inner.wait(timeout))
    }

    /// Stops issuing requests; the result still comes with what was measured.
    fn cancel(&self) {
        self.inner.cancel();
    }

    /// The result JSON, or None while the run is in flight.
    fn result(&self) -> Option<String> {
        self.inner.result()
    }

    /// The finished seconds of the series from the `start`-th on, as JSON (with
    /// `export_histograms`; else none).
    fn seconds(&self, start: usize) -> Vec<String> {
        self.inner.seconds(start)
    }
}

/// Validates `spec` and starts the run in background threads.
#[pyfunction]
fn start(spec_dict: &Bound<'_, PyDict>) -> PyResult<PyRun> {
    let s = spec(spec_dict)?;
    Run::start(s).map(|inner| PyRun { inner }).map_err(bad)
}

/// The I/O path `spec` would take and why: ("uring" | "epoll", reason); ValueError (one line)
/// when io_uring was asked for and cannot be taken, or the spec is invalid.
#[pyfunction]
fn choose_io(spec_dict: &Bound<'_, PyDict>) -> PyResult<(&'static str, String)> {
    let s = spec(spec_dict)?;
    s.validate().map_err(bad)?;
    let choice = pounder_engine::choose_io(&s).map_err(bad)?;
    Ok((choice.path.name(), choice.reason))
}

/// Merges the result JSONs of the shares of one run (made with `export_histograms`) into one
/// result JSON; ValueError naming the bad result's index.
#[pyfunction]
fn merge(py: Python<'_>, results: Vec<String>) -> PyResult<String> {
    py.detach(|| pounder_engine::merge(&results.iter().map(String::as_str).collect::<Vec<_>>())).map_err(bad)
}

/// Adds up series entries of one share (from `Run.seconds`): counts and latency percentiles, as
/// JSON; ValueError naming the bad entry's index.
#[pyfunction]
fn sum_seconds(py: Python<'_>, entries: Vec<String>) -> PyResult<String> {
    py.detach(|| pounder_engine::sum_seconds(&entries.iter().map(String::as_str).collect::<Vec<_>>())).map_err(bad)
}

/// The SVG of the flame graph of folded stacks (`outer;...;leaf COUNT` lines), colours from the
/// names' hashes; ValueError (one line) on a malformed line or no samples.
#[pyfunction]
fn flamegraph_svg(py: Python<'_>, folded: String, title: String, count_name: String) -> PyResult<String> {
    py.detach(|| flame::flamegraph_svg(&folded, &title, &count_name)).map_err(bad)
}

/// `perf script` text folded into `comm-PID;outer;...;leaf COUNT` lines; ValueError (one line).
#[pyfunction]
fn collapse_perf(py: Python<'_>, script: String) -> PyResult<String> {
    py.detach(|| flame::collapse_perf(&script)).map_err(bad)
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(start, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(choose_io, m)?)?;
    m.add_function(wrap_pyfunction!(tls_probe, m)?)?;
    m.add_function(wrap_pyfunction!(scenario::regex_groups, m)?)?;
    m.add_function(wrap_pyfunction!(sum_seconds, m)?)?;
    m.add_function(wrap_pyfunction!(flamegraph_svg, m)?)?;
    m.add_function(wrap_pyfunction!(collapse_perf, m)?)?;
    m.add_class::<PyRun>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
