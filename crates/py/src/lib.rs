//! `pounder._engine`: the load engine for Python. It reads a spec dict into the engine's `Spec`
//! (with serde: `Spec::from_dict`), runs it in background threads, and releases the GIL while Python waits.

use std::time::Duration;

use pounder_engine::{Run, Spec, TlsOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pythonize::Depythonizer;

mod flame;

fn bad(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

/// The spec of a dict (`EngineSpec` in _engine.pyi), read by serde: a key it does not know is
/// refused, each missing key (or None) takes its default; ValueError naming the key.
fn spec(d: &Bound<'_, PyDict>) -> PyResult<Spec> {
    let d = fs_paths(d)?;
    Spec::from_dict(&mut Depythonizer::from_object(d.as_any())).map_err(bad)
}

/// The dict with its file names (str or os.PathLike) as the bytes `os.fsencode` makes of them,
/// which the engine takes as they are (a name need not be UTF-8); a value `os.fsencode` refuses
/// is left for the spec's reader to refuse.
fn fs_paths<'py>(d: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let mut out = d.clone();
    for key in ["tsv_path", "hdr_log_path"] {
        let Some(path) = d.get_item(key)?.filter(|v| !v.is_none()) else { continue };
        if let Ok(bytes) = d.py().import("os")?.getattr("fsencode")?.call1((path,)) {
            if out.is(d) {
                out = d.copy()?;
            }
            out.set_item(key, bytes)?;
        }
    }
    Ok(out)
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
    let addrs = pounder_engine::tcp_addrs(&tcp).ok_or_else(|| bad(format!("tls_probe: bad tcp address {tcp:?}")))?;
    let options = TlsOptions::from_dict(&mut Depythonizer::from_object(tls.as_any())).map_err(bad)?;
    let timeout = Duration::try_from_secs_f64(timeout_s)
        .map_err(|_| bad("spec: timeout_s must be a non-negative number of seconds"))?;
    py.detach(|| pounder_engine::tls_probe(&addrs, &tls_name, &options, timeout)).map_err(bad)
}

/// The number of groups of a capture's regex as the engine compiles it (Rust `regex` syntax);
/// ValueError with the regex crate's message (one line) when it does not compile.
#[pyfunction]
fn regex_groups(pattern: &str) -> PyResult<usize> {
    pounder_engine::regex_groups(pattern).map_err(PyValueError::new_err)
}

/// A run in flight.
#[pyclass(name = "Run", module = "pounder._engine", frozen)]
struct PyRun {
    inner: Run,
}

#[pymethods]
impl PyRun {
    /// Live counters: phase, elapsed_s, complete, failed, rate, in_flight.
    fn progress<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = self.inner.progress();
        let d = PyDict::new(py);
        d.set_item("phase", p.phase)?;
        d.set_item("elapsed_s", p.elapsed_s)?;
        d.set_item("complete", p.complete)?;
        d.set_item("failed", p.failed)?;
        d.set_item("rate", p.rate)?;
        d.set_item("in_flight", p.in_flight)?;
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
    m.add_function(wrap_pyfunction!(regex_groups, m)?)?;
    m.add_function(wrap_pyfunction!(sum_seconds, m)?)?;
    m.add_function(wrap_pyfunction!(flamegraph_svg, m)?)?;
    m.add_function(wrap_pyfunction!(collapse_perf, m)?)?;
    m.add_class::<PyRun>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
