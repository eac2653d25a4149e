use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use super::super::{Addr, Io, Order, Spec, Warmup};
use crate::tls::TlsOptions;

fn parse(v: Value) -> Result<Spec, String> {
    Spec::from_dict(v)
}

fn minimal() -> Value {
    json!({"targets": [{"tcp": "127.0.0.1:8080", "request": [71, 69, 84]}], "connections": 4})
}

fn with(key: &str, value: Value) -> Value {
    let mut v = minimal();
    v[key] = value;
    v
}

fn err(v: Value) -> String {
    parse(v).expect_err("refused")
}

/// Every key but the required ones at its default, whether missing or None.
fn assert_defaults(s: &Spec) {
    assert_eq!(s.connections, 4);
    assert_eq!(s.order, Order::Sequential);
    assert_eq!(s.threads, 1);
    assert_eq!((s.requests, s.duration), (None, None));
    assert_eq!(s.warmup, Warmup::None);
    assert!(s.stages.is_none() && s.replay.is_none() && s.scenario.is_none() && s.tls.is_none());
    assert!(s.keepalive);
    assert_eq!(s.calls_per_conn, 0);
    assert_eq!(s.timeout, Duration::from_secs(30));
    assert_eq!(s.throttle_bps, None);
    assert_eq!((s.tsv_path.as_ref(), s.hdr_log_path.as_ref()), (None, None));
    assert_eq!(s.start_at_unix_us, None);
    assert_eq!((s.slot_offset, s.slot_stride), (0, 1));
    assert!(!s.export_histograms);
    assert_eq!(s.io, Io::Auto);
    let t = &s.targets[0];
    assert_eq!(t.addr, Addr::Tcp(vec!["127.0.0.1:8080".parse().unwrap()]));
    assert_eq!(t.request, b"GET");
    assert!(!t.head);
    assert_eq!(t.weight, 1);
    assert_eq!(t.tls_name, None);
}

#[test]
fn missing_keys_and_none_take_the_defaults() {
    assert_defaults(&parse(minimal()).unwrap());
    let mut v = minimal();
    for key in [
        "order", "threads", "requests", "duration_s", "warmup_requests", "warmup_s", "stages", "replay", "scenario",
        "tls", "keepalive", "calls_per_conn", "timeout_s", "throttle_bps", "tsv_path", "hdr_log_path",
        "start_at_unix_us", "slot_offset", "slot_stride", "export_histograms", "io",
    ] {
        v[key] = Value::Null;
    }
    for key in ["unix", "head", "weight", "tls_name"] {
        v["targets"][0][key] = Value::Null;
    }
    assert_defaults(&parse(v).unwrap());
}

#[test]
fn every_key_is_read() {
    let mut v = minimal();
    v["targets"] = json!([
        {"tcp": "127.0.0.1:1, [::1]:1", "request": [1], "head": true, "weight": 3, "tls_name": "a.test"},
        {"unix": "/tmp/s.sock", "request": [2]},
    ]);
    for (key, value) in [
        ("order", json!("random")), ("threads", json!(2)), ("requests", json!(9)), ("duration_s", json!(1.5)),
        ("warmup_s", json!(0.25)), ("stages", json!([[1, 0, 10.5]])), ("keepalive", json!(false)),
        ("calls_per_conn", json!(7)), ("timeout_s", json!(2)), ("throttle_bps", json!(1000)),
        ("tsv_path", json!("/tmp/a.tsv")), ("hdr_log_path", json!("/tmp/a.hlog")), ("start_at_unix_us", json!(5)),
        ("slot_offset", json!(1)), ("slot_stride", json!(3)), ("export_histograms", json!(true)), ("io", json!("epoll")),
        ("tls", json!({"insecure": true, "ca_pem": [65], "resume": false})),
    ] {
        v[key] = value;
    }
    let s = parse(v).unwrap();
    assert_eq!(s.targets[0].addr, Addr::Tcp(vec!["127.0.0.1:1".parse().unwrap(), "[::1]:1".parse().unwrap()]));
    assert!(s.targets[0].head);
    assert_eq!((s.targets[0].weight, s.targets[0].tls_name.as_deref()), (3, Some("a.test")));
    assert_eq!(s.targets[1].addr, Addr::Unix(PathBuf::from("/tmp/s.sock")));
    assert_eq!((s.order, s.threads, s.requests), (Order::Random, 2, Some(9)));
    assert_eq!(s.duration, Some(Duration::from_millis(1500)));
    assert_eq!(s.warmup, Warmup::Time(Duration::from_millis(250)));
    let stage = s.stages.as_ref().unwrap()[0];
    assert_eq!((stage.duration, stage.start_rate, stage.end_rate), (Duration::from_secs(1), 0.0, 10.5));
    assert!(!s.keepalive);
    assert_eq!((s.calls_per_conn, s.timeout, s.throttle_bps), (7, Duration::from_secs(2), Some(1000)));
    assert_eq!(s.tsv_path, Some(PathBuf::from("/tmp/a.tsv")));
    assert_eq!(s.hdr_log_path, Some(PathBuf::from("/tmp/a.hlog")));
    assert_eq!((s.start_at_unix_us, s.slot_offset, s.slot_stride), (Some(5), 1, 3));
    assert!(s.export_histograms);
    assert_eq!(s.io, Io::Epoll);
    let tls = TlsOptions { insecure: true, ca_pem: Some(b"A".to_vec()), resume: false, ..TlsOptions::default() };
    assert_eq!(s.tls, Some(tls));
    let s = parse(with("warmup_requests", json!(5))).unwrap();
    assert_eq!(s.warmup, Warmup::Requests(5));
    let s = parse(with("replay", json!({"times_us": [0, 10], "targets": [0, 0]}))).unwrap();
    let replay = s.replay.unwrap();
    assert_eq!((&*replay.times_us, &*replay.targets), (&[0, 10][..], &[0, 0][..]));
}

#[test]
fn an_unknown_key_is_refused_naming_it() {
    let e = err(with("tread", json!(2)));
    assert!(e.starts_with("spec: tread: unknown field `tread`, expected one of `targets`"), "{e}");
    let mut v = minimal();
    v["targets"][0]["wieght"] = json!(2);
    let e = err(v);
    assert!(e.starts_with("spec: targets[0].wieght: unknown field `wieght`"), "{e}");
    let e = err(with("tls", json!({"insecure": true, "resumption": false})));
    assert!(e.starts_with("spec: tls.resumption: unknown field `resumption`"), "{e}");
    let e = err(with("replay", json!({"times_us": [0], "targets": [0], "speed": 2})));
    assert!(e.starts_with("spec: replay.speed: unknown field `speed`"), "{e}");
    let e = TlsOptions::from_dict(json!({"insecure": true, "ca": null})).unwrap_err();
    assert!(e.starts_with("tls: ca: unknown field `ca`"), "{e}");
    assert_eq!(TlsOptions::from_dict(json!({"insecure": null})).unwrap(), TlsOptions::default());
}

#[test]
fn a_value_of_the_wrong_type_is_refused_naming_its_key() {
    for (key, value) in [
        ("threads", json!("2")),
        ("threads", json!(-1)),
        ("keepalive", json!(1)),
        ("duration_s", json!("1s")),
        ("stages", json!([1, 2, 3])),
        ("order", json!(1)),
    ] {
        let e = err(with(key, value.clone()));
        assert!(e.starts_with(&format!("spec: {key}")), "{key}={value}: {e}");
    }
    let mut v = minimal();
    v["targets"][0]["request"] = json!("GET /");
    assert!(err(v).starts_with("spec: targets[0].request: "));
}

#[test]
fn each_key_is_checked_as_before() {
    assert_eq!(err(json!({"connections": 1})), "spec: targets is required");
    assert_eq!(err(json!({"targets": [], "connections": null})), "spec: connections is required");
    assert_eq!(err(with("order", json!("reverse"))), "spec: unknown order \"reverse\"");
    assert_eq!(err(with("io", json!("poll"))), "spec: unknown io \"poll\" (auto, uring or epoll)");
    assert_eq!(err(with("duration_s", json!(-1))), "spec: duration_s must be a non-negative number of seconds");
    assert_eq!(err(with("timeout_s", json!(-1))), "spec: timeout_s must be a non-negative number of seconds");
    assert_eq!(err(with("stages", json!([[-1, 1, 1]]))), "spec: stages must be a non-negative number of seconds");
    assert_eq!(err(with("stages", json!([[1, 1]]))), "spec: each stage is [duration_s, start_rate, end_rate]");
    let mut v = with("warmup_requests", json!(1));
    v["warmup_s"] = json!(1.0);
    assert_eq!(err(v), "spec: warmup_requests and warmup_s exclude each other");
    let mut v = with("replay", json!({"times_us": [0], "targets": [0]}));
    v["order"] = json!("sequential");
    assert_eq!(err(v), "spec: replay excludes order (each request names its target)");
    assert_eq!(err(with("replay", json!({"targets": [0]}))), "spec: times_us is required");
    let mut v = minimal();
    v["targets"][0]["unix"] = json!("/tmp/s");
    assert_eq!(err(v), "spec: a target needs exactly one of tcp and unix");
    let mut v = minimal();
    v["targets"][0]["tcp"] = json!("localhost:80");
    assert_eq!(err(v), "spec: bad tcp address \"localhost:80\"");
    let mut v = minimal();
    v["targets"][0]["request"] = Value::Null;
    assert_eq!(err(v), "spec: request is required");
}

#[test]
fn a_scenario_is_read_with_its_paths_in_the_errors() {
    let step = json!({"name": "home", "target": 0, "head": [{"text": [71]}, {"var": 0, "enc": "form"}],
                      "body": null, "is_head": false, "expect": [200], "think_s": 0.5,
                      "captures": [{"var": 0, "from": "body", "name": null, "regex": "id=(\\d+)"}]});
    let scenario = json!({"vars": ["id"], "login": 0, "steps": [step.clone()]});
    let s = parse(with("scenario", scenario.clone())).unwrap();
    let sc = s.scenario.unwrap();
    assert_eq!((sc.vars.len(), sc.login, sc.steps.len()), (1, 0, 1));
    assert_eq!(sc.steps[0].think, Duration::from_millis(500));
    assert_eq!((sc.steps[0].head.len(), sc.steps[0].captures.len()), (2, 1));
    let bad = |path: &str, value: Value| {
        let mut v = scenario.clone();
        *v.pointer_mut(path).unwrap() = value;
        err(with("scenario", v))
    };
    assert_eq!(bad("/steps/0/captures/0/regex", json!("(")).split(':').next(), Some("spec"));
    assert!(bad("/steps/0/captures/0/regex", json!("(")).starts_with("spec: scenario.steps[0].captures[0].regex: "));
    assert_eq!(
        bad("/steps/0/head/1/enc", json!("url")),
        "spec: scenario.steps[0].head[1].enc: unknown encoding \"url\" (raw, form, json or path)"
    );
    assert_eq!(bad("/steps/0/think_s", json!(-1)), "spec: scenario.steps[0].think_s must be a non-negative number of seconds");
    assert_eq!(bad("/login", Value::Null), "spec: scenario.login is required");
    let e = bad("/steps/0/captures/0", json!({"var": 0, "from": "body", "regx": "x"}));
    assert!(e.starts_with("spec: scenario.steps[0].captures[0].regx: unknown field `regx`"), "{e}");
}
