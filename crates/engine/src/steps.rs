//! What each step of a scenario measured: its counts and its corrected latency, merged across
//! threads and across the shares of a run like the run's totals.

use serde_json::{json, Value};

use crate::histogram::Hist;
use crate::scenario::Scenario;
use crate::session::Outcome;
use crate::stats::{count, Stats};

#[derive(Clone, Debug)]
pub struct StepStats {
    pub name: String,
    /// A login step (run once per session), else a loop step.
    pub login: bool,
    /// Whole responses (any status), as the run's `complete`.
    pub complete: u64,
    /// No whole response (an error, as the run's `failed`).
    pub failed: u64,
    /// Of `complete`: a status the step does not expect.
    pub unexpected_status: u64,
    /// Of `complete`: expected status, but a capture found nothing.
    pub capture_missed: u64,
    /// Of `capture_missed`: a capture matched a value holding CR, LF or NUL that its variable
    /// would have carried raw into a request head.
    pub capture_unsafe: u64,
    /// Corrected latency of the complete responses, µs.
    pub latency: Hist,
}

impl StepStats {
    fn new(name: &str, login: bool) -> StepStats {
        StepStats {
            name: name.into(),
            login,
            complete: 0,
            failed: 0,
            unexpected_status: 0,
            capture_missed: 0,
            capture_unsafe: 0,
            latency: Hist::new(),
        }
    }

    /// Counts one measured request of the step (`corrected`: its latency, when complete).
    pub fn record(&mut self, outcome: Outcome, corrected: u64) {
        match outcome {
            Outcome::Failed => {
                self.failed += 1;
                return;
            }
            Outcome::UnexpectedStatus => self.unexpected_status += 1,
            Outcome::CaptureMissed => self.capture_missed += 1,
            Outcome::CaptureUnsafe => {
                self.capture_missed += 1;
                self.capture_unsafe += 1;
            }
            Outcome::Done => {}
        }
        self.complete += 1;
        self.latency.record(corrected);
    }

    fn add(&mut self, o: &StepStats) {
        self.complete += o.complete;
        self.failed += o.failed;
        self.unexpected_status += o.unexpected_status;
        self.capture_missed += o.capture_missed;
        self.capture_unsafe += o.capture_unsafe;
        self.latency.add(&o.latency);
    }
}

/// A thread's empty stats, with a place for each step of the scenario.
pub fn stats_for(scenario: Option<&Scenario>) -> Stats {
    let mut s = Stats::new();
    if let Some(sc) = scenario {
        s.steps = sc.steps.iter().enumerate().map(|(i, st)| StepStats::new(&st.name, i < sc.login)).collect();
    }
    s
}

/// Adds `from` into `into` step by step (an empty `into` takes `from`'s steps).
pub fn merge(into: &mut Vec<StepStats>, from: &[StepStats]) {
    if into.is_empty() {
        into.extend_from_slice(from);
        return;
    }
    for (a, b) in into.iter_mut().zip(from) {
        a.add(b);
    }
}

/// Whether two results' steps can be added: the same steps in the same order.
pub fn check_same(a: &[StepStats], b: &[StepStats]) -> Result<(), String> {
    let names = |s: &[StepStats]| s.iter().map(|x| (x.name.clone(), x.login)).collect::<Vec<_>>();
    if !a.is_empty() && names(a) != names(b) {
        return Err("steps: not the same steps as the results before it".into());
    }
    Ok(())
}

/// The result's `"steps"`; with `export`, each with its histogram encoded (for `merge`).
pub fn to_json(steps: &[StepStats], export: bool) -> Value {
    let entries = steps.iter().map(|s| {
        let mut e = json!({
            "name": s.name,
            "part": if s.login { "login" } else { "loop" },
            "complete": s.complete,
            "failed": s.failed,
            "unexpected_status": s.unexpected_status,
            "capture_missed": s.capture_missed,
            "capture_unsafe": s.capture_unsafe,
            "latency": s.latency.summary(),
        });
        if export {
            e["histogram"] = json!(s.latency.encode());
        }
        e
    });
    Value::Array(entries.collect())
}

/// The steps of a result document made with `export` (none when it has no `"steps"`).
pub fn from_json(doc: &Value) -> Result<Vec<StepStats>, String> {
    let Some(steps) = doc.get("steps") else { return Ok(Vec::new()) };
    let steps = steps.as_array().ok_or("steps: not a list")?;
    steps
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let at = |what: &str| format!("steps[{i}]: {what}");
            let name = e.get("name").and_then(Value::as_str).ok_or_else(|| at("no name"))?;
            let login = match e.get("part").and_then(Value::as_str) {
                Some("login") => true,
                Some("loop") => false,
                _ => return Err(at("part is neither login nor loop")),
            };
            let mut s = StepStats::new(name, login);
            for (field, key) in [
                (&mut s.complete, "/complete"),
                (&mut s.failed, "/failed"),
                (&mut s.unexpected_status, "/unexpected_status"),
                (&mut s.capture_missed, "/capture_missed"),
            ] {
                *field = count(e, key).map_err(|e| at(&e))?;
            }
            // a share from before capture_unsafe counts none
            if e.get("capture_unsafe").is_some() {
                s.capture_unsafe = count(e, "/capture_unsafe").map_err(|e| at(&e))?;
            }
            let hist = e.get("histogram").and_then(Value::as_str).ok_or_else(|| at("no histogram"))?;
            s.latency = Hist::decode(hist).map_err(|e| at(&e))?;
            Ok(s)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps() -> Vec<StepStats> {
        let mut login = StepStats::new("login", true);
        login.record(Outcome::Done, 1000);
        login.record(Outcome::Failed, 0);
        let mut page = StepStats::new("page", false);
        for us in [100, 200, 300] {
            page.record(Outcome::Done, us);
        }
        page.record(Outcome::UnexpectedStatus, 5000);
        page.record(Outcome::CaptureMissed, 50);
        page.record(Outcome::CaptureUnsafe, 60);
        vec![login, page]
    }

    #[test]
    fn counts_and_json() {
        let v = to_json(&steps(), false);
        assert_eq!(v[0]["part"], "login");
        assert_eq!((v[0]["complete"].as_u64(), v[0]["failed"].as_u64()), (Some(1), Some(1)));
        assert_eq!(v[1]["part"], "loop");
        assert_eq!(v[1]["complete"], 6);
        assert_eq!((v[1]["unexpected_status"].as_u64(), v[1]["capture_missed"].as_u64()), (Some(1), Some(2)));
        // of the missed captures, the one whose value the head could not hold
        assert_eq!(v[1]["capture_unsafe"], 1);
        assert_eq!(v[1]["latency"]["count"], 6);
        assert!(v[1].get("histogram").is_none());
    }

    #[test]
    fn json_round_trips_and_merges() {
        let doc = json!({"steps": to_json(&steps(), true)});
        let back = from_json(&doc).unwrap();
        assert_eq!(to_json(&back, true), doc["steps"]);
        let mut total = Vec::new();
        merge(&mut total, &back);
        merge(&mut total, &steps());
        assert_eq!(total[1].complete, 12);
        assert_eq!(total[1].capture_unsafe, 2);
        assert_eq!(total[1].latency.count(), 12);
        assert_eq!(total[0].failed, 2);
        check_same(&total, &back).unwrap();
        assert!(check_same(&total, &back[..1]).is_err());
        assert!(from_json(&json!({})).unwrap().is_empty());
        assert!(from_json(&json!({"steps": to_json(&steps(), false)})).unwrap_err().contains("histogram"));
    }
}
