//! Logged-in virtual users against a real (tiny, in-process) HTTP server on loopback that keeps
//! sessions: a login form with a CSRF token and cookie, a login POST that sets the session cookie
//! and hands out a token, and a private page that answers 200 only to both.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pounder_engine::{merge, run, Addr, Capture, Encoding, Io, Piece, Scenario, Source, Spec, Stage, Step, Target};
use serde_json::Value;

#[derive(Default)]
struct Site {
    forms: AtomicU64,
    logins: AtomicU64,
    private_ok: AtomicU64,
    private_refused: AtomicU64,
    /// Answer this private request (1-based, of all) with a 500.
    fail_private: Option<u64>,
    /// Leave the private requests after this many unanswered (for 5 s).
    hang_private_after: Option<u64>,
    privates: AtomicU64,
    /// sid → token, of the logged-in sessions
    sessions: Mutex<HashMap<String, String>>,
}

struct Request {
    line: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

fn read_request<R: BufRead>(r: &mut R) -> Option<Request> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).ok()? == 0 {
            return None;
        }
        if h == "\r\n" {
            break;
        }
        let (name, value) = h.split_once(':')?;
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    let mut body = vec![0; headers.get("content-length").map_or(0, |l| l.parse().unwrap())];
    r.read_exact(&mut body).ok()?;
    Some(Request { line, headers, body })
}

fn cookie(req: &Request, name: &str) -> Option<String> {
    let jar = req.headers.get("cookie")?;
    jar.split("; ").find_map(|c| c.strip_prefix(&format!("{name}=")).map(str::to_string))
}

fn answer(site: &Site, req: &Request) -> String {
    let target = req.line.split(' ').nth(1).unwrap_or("");
    let path = target.split('?').next().unwrap_or("");
    let response = |status: &str, headers: &str, body: &str| {
        format!("HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\n\r\n{body}", body.len())
    };
    match (req.line.split(' ').next().unwrap_or(""), path) {
        ("GET", "/login") => {
            let n = site.forms.fetch_add(1, Ordering::SeqCst) + 1;
            // the token needs form encoding: the server expects it encoded in the POST
            let body = format!(r#"<form><input type="hidden" name="csrf" value="C{n}/x y"></form>"#);
            response("200 OK", &format!("Set-Cookie: csrf=C{n}; Path=/login\r\n"), &body)
        }
        ("POST", "/login") => {
            let Some(c) = cookie(req, "csrf") else { return response("403 Forbidden", "", "no csrf cookie") };
            if req.body != format!("csrf={}%2Fx+y&user=u", c).as_bytes() {
                return response("403 Forbidden", "", "bad csrf");
            }
            let n = site.logins.fetch_add(1, Ordering::SeqCst) + 1;
            let (sid, token) = (format!("S{n}"), format!("T{n}"));
            site.sessions.lock().unwrap().insert(sid.clone(), token.clone());
            let headers =
                format!("Location: /private\r\nSet-Cookie: sid={sid}; Path=/; HttpOnly\r\nX-Token: {token}\r\n");
            response("302 Found", &headers, "")
        }
        ("GET", "/private") => {
            let k = site.privates.fetch_add(1, Ordering::SeqCst) + 1;
            if site.hang_private_after.is_some_and(|n| k > n) {
                std::thread::sleep(std::time::Duration::from_secs(5));
            }
            if site.fail_private == Some(k) {
                return response("500 Internal Server Error", "", "oops");
            }
            let sid = cookie(req, "sid").unwrap_or_default();
            let token = site.sessions.lock().unwrap().get(&sid).cloned();
            let ok = token.is_some()
                && req.headers.get("x-token") == token.as_ref()
                && req.headers.get("x-sid") == Some(&sid)
                && cookie(req, "csrf").is_none(); // its path is /login
            if ok {
                site.private_ok.fetch_add(1, Ordering::SeqCst);
                response("200 OK", "", "secret")
            } else {
                site.private_refused.fetch_add(1, Ordering::SeqCst);
                response("302 Found", "Location: /login\r\n", "")
            }
        }
        _ => response("404 Not Found", "", ""),
    }
}

fn server(site: Site) -> (String, Arc<Site>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let site = Arc::new(site);
    let s = Arc::clone(&site);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream);
                while let Some(req) = read_request(&mut reader) {
                    let out = answer(&s, &req);
                    if reader.get_mut().write_all(out.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, site)
}

fn text(s: &str) -> Piece {
    Piece::Text(s.as_bytes().to_vec())
}

fn var(i: usize, enc: Encoding) -> Piece {
    Piece::Var { var: i, enc }
}

fn step(name: &str, head: Vec<Piece>, body: Option<Vec<Piece>>, captures: Vec<Capture>) -> Step {
    Step { name: name.into(), target: 0, head, body, is_head: false, expect: None, think: Duration::ZERO, captures }
}

/// Vars: 0 csrf (from the form's body), 1 token (a header of the login's answer), 2 sid (its cookie).
fn scenario() -> Scenario {
    let csrf = Capture::new(0, Source::Body, None, Some(r#"name="csrf" value="([^"]+)""#)).unwrap();
    let token = Capture::new(1, Source::Header, Some("x-token".into()), None).unwrap();
    let sid = Capture::new(2, Source::Cookie, Some("sid".into()), Some("^(S[0-9]+)$")).unwrap();
    let mut login = step(
        "login",
        vec![text("POST /login HTTP/1.1\r\nHost: test\r\nContent-Type: application/x-www-form-urlencoded\r\n")],
        Some(vec![text("csrf="), var(0, Encoding::Form), text("&user=u")]),
        vec![token, sid],
    );
    login.expect = Some(vec![302]);
    let mut private = step(
        "private",
        vec![
            text("GET /private HTTP/1.1\r\nHost: test\r\nX-Token: "),
            var(1, Encoding::Raw),
            text("\r\nX-Sid: "),
            var(2, Encoding::Raw),
            text("\r\n"),
        ],
        None,
        vec![],
    );
    private.expect = Some(vec![200]);
    Scenario {
        vars: vec!["csrf".into(), "token".into(), "sid".into()],
        login: 2,
        steps: vec![
            step("form", vec![text("GET /login HTTP/1.1\r\nHost: test\r\n")], None, vec![csrf]),
            login,
            private,
        ],
    }
}

fn spec(addr: &str, connections: usize, threads: usize) -> Spec {
    let target = Target {
        addr: Addr::Tcp(vec![addr.parse().unwrap()]),
        request: Vec::new(), // a scenario's targets are addresses only
        head: false,
        weight: 1,
        tls_name: None,
    };
    let mut s = Spec::new(vec![target]);
    s.connections = connections;
    s.threads = threads;
    s.scenario = Some(scenario());
    s
}

fn result(s: Spec) -> Value {
    serde_json::from_str(&run(s).unwrap()).unwrap()
}

fn counts(step: &Value) -> [u64; 4] {
    ["complete", "failed", "unexpected_status", "capture_missed"].map(|k| step[k].as_u64().unwrap())
}

#[test]
fn every_virtual_user_logs_in_once_and_then_sees_the_private_page() {
    let (addr, site) = server(Site::default());
    let mut s = spec(&addr, 4, 2);
    s.requests = Some(2000);
    let r = result(s);
    assert_eq!(r["requests"]["complete"], 2000);
    assert_eq!(r["requests"]["failed"], 0);
    let steps = r["steps"].as_array().unwrap();
    let names: Vec<(&str, &str)> =
        steps.iter().map(|s| (s["name"].as_str().unwrap(), s["part"].as_str().unwrap())).collect();
    assert_eq!(names, [("form", "login"), ("login", "login"), ("private", "loop")]);
    assert_eq!(counts(&steps[0]), [4, 0, 0, 0]);
    assert_eq!(counts(&steps[1]), [4, 0, 0, 0]);
    assert_eq!(counts(&steps[2]), [1992, 0, 0, 0]);
    assert_eq!(steps[2]["latency"]["count"], 1992);
    assert_eq!((r["status"]["200"].as_u64(), r["status"]["302"].as_u64()), (Some(1996), Some(4)));
    assert_eq!(site.forms.load(Ordering::SeqCst), 4);
    assert_eq!(site.logins.load(Ordering::SeqCst), 4);
    assert_eq!(site.private_ok.load(Ordering::SeqCst), 1992);
    assert_eq!(site.private_refused.load(Ordering::SeqCst), 0);
    assert_eq!(r["connections"]["opened"], 4);
    assert!(r.get("histograms").is_none() && steps[0].get("histogram").is_none());
}

#[test]
fn a_step_still_in_flight_at_the_end_counts_as_failed_in_its_step() {
    // both users hang on a private page after 10 of them: the run's end aborts them after its drain
    let (addr, _site) = server(Site { hang_private_after: Some(10), ..Site::default() });
    let mut s = spec(&addr, 2, 1);
    s.duration = Some(std::time::Duration::from_millis(300));
    let r = result(s);
    assert_eq!(r["errors"]["aborted"], 2);
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(counts(&steps[2]), [10, 2, 0, 0]);
    let sent: u64 = steps.iter().map(|step| counts(step)[0] + counts(step)[1]).sum();
    assert_eq!(sent, r["requests"]["complete"].as_u64().unwrap() + r["requests"]["failed"].as_u64().unwrap());
}

#[test]
fn an_unexpected_status_starts_the_session_over() {
    let (addr, site) = server(Site { fail_private: Some(5), ..Site::default() });
    let mut s = spec(&addr, 1, 1);
    s.requests = Some(20);
    let tsv = std::env::temp_dir().join(format!("pounder-scenario-{}.tsv", std::process::id()));
    s.tsv_path = Some(tsv.clone());
    let r = result(s);
    let steps = r["steps"].as_array().unwrap();
    // form, login, 4 private, the 5th a 500; then form, login again and 12 private
    assert_eq!(counts(&steps[0]), [2, 0, 0, 0]);
    assert_eq!(counts(&steps[1]), [2, 0, 0, 0]);
    assert_eq!(counts(&steps[2]), [16, 0, 1, 0]);
    assert_eq!(site.logins.load(Ordering::SeqCst), 2);
    assert_eq!(site.private_ok.load(Ordering::SeqCst), 15);
    assert_eq!(site.private_refused.load(Ordering::SeqCst), 0);
    // the TSV's target column is the step
    let text = std::fs::read_to_string(&tsv).unwrap();
    std::fs::remove_file(&tsv).unwrap();
    let mut by_step = [0; 3];
    for line in text.lines().skip(1) {
        by_step[line.split('\t').nth(2).unwrap().parse::<usize>().unwrap()] += 1;
    }
    assert_eq!(by_step, [2, 2, 16]);
}

#[test]
fn a_capture_that_finds_nothing_starts_the_session_over() {
    let (addr, site) = server(Site::default());
    let mut s = spec(&addr, 1, 1);
    let sc = s.scenario.as_mut().unwrap();
    // the login's answer has no such header: every session ends there
    sc.steps[1].captures[0] = Capture::new(1, Source::Header, Some("x-missing".into()), None).unwrap();
    s.requests = Some(10);
    let r = result(s);
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(counts(&steps[0]), [5, 0, 0, 0]);
    assert_eq!(counts(&steps[1]), [5, 0, 0, 5]);
    assert_eq!(counts(&steps[2]), [0, 0, 0, 0]);
    assert_eq!(site.logins.load(Ordering::SeqCst), 5);
}

#[test]
fn open_loop_virtual_users_are_made_as_the_schedule_needs_them() {
    let (addr, site) = server(Site::default());
    let mut s = spec(&addr, 8, 2);
    s.stages = Some(vec![Stage { duration: Duration::from_millis(600), start_rate: 500.0, end_rate: 500.0 }]);
    let r = result(s);
    let steps = r["steps"].as_array().unwrap();
    let complete = r["requests"]["complete"].as_u64().unwrap();
    assert_eq!(complete, 300);
    assert_eq!(r["requests"]["failed"], 0);
    // each virtual user is one connection task, with one keep-alive connection
    let users = r["connections"]["opened"].as_u64().unwrap();
    assert!((1..=8).contains(&users), "{users}");
    assert_eq!(counts(&steps[0]), [users, 0, 0, 0]);
    assert_eq!(counts(&steps[1]), [users, 0, 0, 0]);
    assert_eq!(counts(&steps[2]), [300 - 2 * users, 0, 0, 0]);
    assert_eq!(site.private_ok.load(Ordering::SeqCst), 300 - 2 * users);
    assert_eq!(site.private_refused.load(Ordering::SeqCst), 0);
}

#[test]
fn think_time_paces_a_closed_loop_user_without_being_measured() {
    let (addr, _) = server(Site::default());
    let mut s = spec(&addr, 1, 1);
    s.scenario.as_mut().unwrap().steps[2].think = Duration::from_millis(40);
    s.requests = Some(7); // login (2) and 5 private: 4 pauses between them (none after the last)
    let start = std::time::Instant::now();
    let r = result(s);
    let wall = start.elapsed();
    assert!(wall >= Duration::from_millis(160), "{wall:?}");
    assert!(r["elapsed_s"].as_f64().unwrap() >= 0.16);
    assert_eq!(counts(&r["steps"][2]), [5, 0, 0, 0]);
    // The pauses are not in the latency: one user's requests and pauses follow each other, so
    // its 7 latencies and the 4 pauses fit in the run's wall time (a histogram's mean is within
    // 0.1 % of the true one).
    let latency_us: f64 = (0..3)
        .map(|i| {
            let l = &r["steps"][i]["latency"];
            l["mean_us"].as_f64().unwrap() * l["count"].as_f64().unwrap()
        })
        .sum();
    assert!(latency_us * 0.99 + 160_000.0 <= wall.as_micros() as f64, "{latency_us} µs in {wall:?}");
}

#[test]
fn shares_of_a_scenario_run_merge_step_by_step() {
    let (addr, _) = server(Site::default());
    let results: Vec<String> = (0..2)
        .map(|offset| {
            let mut s = spec(&addr, 2, 1);
            s.requests = Some(100);
            s.slot_offset = offset;
            s.slot_stride = 2;
            s.export_histograms = true;
            run(s).unwrap()
        })
        .collect();
    let docs: Vec<Value> = results.iter().map(|t| serde_json::from_str(t).unwrap()).collect();
    assert!(docs[0]["steps"][2]["histogram"].is_string());
    let merged: Value = serde_json::from_str(&merge(&[&results[0], &results[1]]).unwrap()).unwrap();
    assert_eq!(merged["requests"]["complete"], 100);
    for i in 0..3 {
        let sum: u64 = docs.iter().map(|d| d["steps"][i]["complete"].as_u64().unwrap()).sum();
        assert_eq!(merged["steps"][i]["complete"], sum);
        assert_eq!(merged["steps"][i]["latency"]["count"], sum);
    }
    assert_eq!(counts(&merged["steps"][0]), [4, 0, 0, 0]); // 2 users in each share
    // a user whose share's budget ran out between its two first steps never took its second (which
    // user gets there first is the scheduler's choice): the second and third steps share the rest
    let (second, third) = (counts(&merged["steps"][1]), counts(&merged["steps"][2]));
    assert!((1..=4).contains(&second[0]) && second[1..] == [0, 0, 0], "{second:?}");
    assert_eq!(third, [96 - second[0], 0, 0, 0]);
    // shares of another scenario do not merge
    let mut other = docs[1].clone();
    other["steps"][0]["name"] = Value::from("renamed");
    let e = merge(&[&results[0], &other.to_string()]).unwrap_err();
    assert!(e.contains("result 1") && e.contains("steps"), "{e}");
}

#[test]
fn a_bad_scenario_is_refused_naming_its_field() {
    let mut s = spec("127.0.0.1:1", 1, 1);
    s.requests = Some(1);
    s.scenario.as_mut().unwrap().steps[1].target = 3;
    let e = run(s).unwrap_err();
    assert!(e.starts_with("scenario.steps[1].target"), "{e}");
}

#[test]
fn a_scenario_takes_the_epoll_path_and_the_ring_is_refused() {
    let (addr, site) = server(Site::default());
    let mut s = spec(&addr, 2, 1);
    s.requests = Some(10);
    s.io = Io::Auto;
    let r = result(s.clone());
    let reason = "auto: logged-in users (a scenario) run on the epoll path only";
    assert_eq!(r["io"], serde_json::json!({"path": "epoll", "reason": reason}));
    assert_eq!(r["requests"]["complete"], 10);
    // asked for, the ring is refused at the start in one line, before anything is sent
    s.io = Io::Uring;
    let e = pounder_engine::Run::start(s).err().expect("a scenario on the ring is refused");
    assert_eq!(e, "io_uring: logged-in users (a scenario) run on the epoll path only");
    assert_eq!(site.forms.load(Ordering::SeqCst), 2);
}
