//! The spec's `scenario` (`EngineScenario` in _engine.pyi) as the engine's `Scenario`; each error
//! names its field (`spec: scenario.steps[2].captures[0].regex: ...`).

use std::time::Duration;

use pounder_engine::{Capture, Encoding, Piece, Scenario, Source, Step};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::{bad, item};

/// `d[key]` of the dict at `at`, or None when missing or None.
fn get<'py, T>(d: &Bound<'py, PyDict>, at: &str, key: &str) -> PyResult<Option<T>>
where
    T: for<'a> FromPyObject<'a, 'py>,
{
    match item(d, key)? {
        Some(v) => v.extract::<T>().map(Some).map_err(|_| bad(format!("spec: {at}.{key} has the wrong type"))),
        None => Ok(None),
    }
}

fn need<'py, T>(d: &Bound<'py, PyDict>, at: &str, key: &str) -> PyResult<T>
where
    T: for<'a> FromPyObject<'a, 'py>,
{
    get(d, at, key)?.ok_or_else(|| bad(format!("spec: {at}.{key} is required")))
}

/// Each dict of the list `d[key]`, parsed by `f` with its path (`at.key[i]`).
fn each<T>(
    d: &Bound<'_, PyDict>,
    at: &str,
    key: &str,
    f: impl Fn(&Bound<'_, PyDict>, &str) -> PyResult<T>,
) -> PyResult<Option<Vec<T>>> {
    let Some(list) = get::<Bound<'_, PyList>>(d, at, key)? else { return Ok(None) };
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            let here = format!("{at}.{key}[{i}]");
            f(v.cast::<PyDict>().map_err(|_| bad(format!("spec: {here} must be a dict")))?, &here)
        })
        .collect::<PyResult<Vec<_>>>()
        .map(Some)
}

pub fn scenario(d: &Bound<'_, PyDict>) -> PyResult<Scenario> {
    let at = "scenario";
    Ok(Scenario {
        vars: need(d, at, "vars")?,
        login: need(d, at, "login")?,
        steps: each(d, at, "steps", step)?.ok_or_else(|| bad("spec: scenario.steps is required"))?,
    })
}

fn step(d: &Bound<'_, PyDict>, at: &str) -> PyResult<Step> {
    let think: f64 = get(d, at, "think_s")?.unwrap_or(0.0);
    Ok(Step {
        name: need(d, at, "name")?,
        target: need(d, at, "target")?,
        head: each(d, at, "head", piece)?.ok_or_else(|| bad(format!("spec: {at}.head is required")))?,
        body: each(d, at, "body", piece)?,
        is_head: get(d, at, "is_head")?.unwrap_or(false),
        expect: get(d, at, "expect")?,
        think: Duration::try_from_secs_f64(think)
            .map_err(|_| bad(format!("spec: {at}.think_s must be a non-negative number of seconds")))?,
        captures: each(d, at, "captures", capture)?.unwrap_or_default(),
    })
}

fn piece(d: &Bound<'_, PyDict>, at: &str) -> PyResult<Piece> {
    match (get::<Vec<u8>>(d, at, "text")?, get::<usize>(d, at, "var")?) {
        (Some(text), None) => Ok(Piece::Text(text)),
        (None, Some(var)) => {
            let enc = match get::<String>(d, at, "enc")?.as_deref() {
                None | Some("raw") => Encoding::Raw,
                Some("form") => Encoding::Form,
                Some("json") => Encoding::Json,
                Some("path") => Encoding::Path,
                Some(e) => return Err(bad(format!("spec: {at}.enc: unknown encoding {e:?} (raw, form, json or path)"))),
            };
            Ok(Piece::Var { var, enc })
        }
        _ => Err(bad(format!("spec: {at}: a piece is {{\"text\": bytes}} or {{\"var\": int, \"enc\": str}}"))),
    }
}

fn capture(d: &Bound<'_, PyDict>, at: &str) -> PyResult<Capture> {
    let from = match need::<String>(d, at, "from")?.as_str() {
        "header" => Source::Header,
        "cookie" => Source::Cookie,
        "body" => Source::Body,
        f => return Err(bad(format!("spec: {at}.from: unknown source {f:?} (header, cookie or body)"))),
    };
    let regex: Option<String> = get(d, at, "regex")?;
    Capture::new(need(d, at, "var")?, from, get(d, at, "name")?, regex.as_deref())
        .map_err(|e| bad(format!("spec: {at}.regex: {e}")))
}

/// The number of groups of a capture's regex as the engine compiles it (Rust `regex` syntax);
/// ValueError with the regex crate's message (one line) when it does not compile.
#[pyfunction]
pub fn regex_groups(pattern: &str) -> PyResult<usize> {
    pounder_engine::regex_groups(pattern).map_err(PyValueError::new_err)
}
