//! The unit tests of a virtual user (`session.rs`).

use super::*;
use crate::scenario::{Capture, Encoding};
use std::cell::Cell;
use std::time::Duration;

fn text(s: &str) -> Piece {
    Piece::Text(s.as_bytes().to_vec())
}

fn var(i: usize, enc: Encoding) -> Piece {
    Piece::Var { var: i, enc }
}

fn step(name: &str, head: Vec<Piece>, body: Option<Vec<Piece>>, captures: Vec<Capture>) -> Step {
    Step { name: name.into(), target: 0, head, body, is_head: false, expect: None, think: Duration::ZERO, captures }
}

/// A login form (token from the body, cookie set), its POST (a redirect setting the
/// session), and a page behind it.
fn scenario() -> Scenario {
    let token = Capture::new(0, Source::Body, None, Some(r#"name="csrf" value="([^"]+)""#)).unwrap();
    let session = Capture::new(1, Source::Cookie, Some("sid".into()), None).unwrap();
    let location = Capture::new(2, Source::Header, Some("location".into()), Some("^/(.*)$")).unwrap();
    Scenario {
        vars: vec!["token".into(), "sid".into(), "next".into()],
        login: 2,
        steps: vec![
            step("form", vec![text("GET /login/ HTTP/1.1\r\nHost: h\r\n")], None, vec![token]),
            step(
                "post",
                vec![
                    text("POST /login/ HTTP/1.1\r\nHost: h\r\nX-Token: "),
                    var(0, Encoding::Raw),
                    text("\r\nContent-Type: application/x-www-form-urlencoded\r\n"),
                ],
                Some(vec![text("csrf="), var(0, Encoding::Form), text("&user=a+b")]),
                vec![session, location],
            ),
            step(
                "page",
                vec![text("GET /"), var(2, Encoding::Raw), text(" HTTP/1.1\r\nHost: h\r\n")],
                None,
                vec![],
            ),
        ],
    }
}

/// Feeds a response to the session as the connection does.
fn respond(s: &mut Session<'_>, head: &str, body: &str) {
    let (_, user) = s.parts();
    user.head(head.as_bytes(), head.len());
    if user.wants_body() {
        for piece in body.as_bytes().chunks(7) {
            user.body(piece);
        }
    }
}

fn render(s: &mut Session<'_>) -> String {
    String::from_utf8(s.render(false).to_vec()).unwrap()
}

#[test]
fn a_session_logs_in_and_loops() {
    let sc = scenario();
    let mut s = Session::new(&sc);
    assert_eq!(render(&mut s), "GET /login/ HTTP/1.1\r\nHost: h\r\n\r\n");
    respond(
        &mut s,
        "HTTP/1.1 200 OK\r\nSet-Cookie: csrftoken=c1; Path=/\r\nContent-Length: 40\r\n\r\n",
        r#"<input name="csrf" value="t/k n">"#,
    );
    assert_eq!(s.finish(Some(200)), Outcome::Done);
    assert_eq!(s.var(0), b"t/k n");
    let body = "csrf=t%2Fk+n&user=a+b";
    assert_eq!(
        render(&mut s),
        format!(
            "POST /login/ HTTP/1.1\r\nHost: h\r\nX-Token: t/k n\r\nContent-Type: application/x-www-form-urlencoded\r\n\
             Cookie: csrftoken=c1\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    );
    respond(
        &mut s,
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 302 Found\r\nLocation: /home/\r\nset-cookie: sid=S1; HttpOnly\r\n\
         Content-Length: 0\r\n\r\n",
        "",
    );
    assert_eq!(s.finish(Some(302)), Outcome::Done);
    assert_eq!((s.var(1), s.var(2)), (&b"S1"[..], &b"home/"[..]));
    // sid was set for /login/'s default path, /login: not sent to /home/
    for _ in 0..3 {
        assert_eq!(s.next_step(), 2);
        assert_eq!(render(&mut s), "GET /home/ HTTP/1.1\r\nHost: h\r\nCookie: csrftoken=c1\r\n\r\n");
        respond(&mut s, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "");
        assert_eq!(s.finish(Some(200)), Outcome::Done);
    }
}

#[test]
fn a_failure_starts_the_session_over_with_nothing() {
    let sc = scenario();
    let mut s = Session::new(&sc);
    s.render(false);
    respond(&mut s, "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\n\r\n", "no token here");
    assert_eq!(s.finish(Some(200)), Outcome::CaptureMissed);
    assert_eq!(s.next_step(), 0);
    assert_eq!(render(&mut s), "GET /login/ HTTP/1.1\r\nHost: h\r\n\r\n");
    respond(&mut s, "HTTP/1.1 200 OK\r\n\r\n", r#"name="csrf" value="x""#);
    assert_eq!(s.finish(Some(200)), Outcome::Done);
    s.render(false);
    // the POST's response lacks the cookie capture
    respond(&mut s, "HTTP/1.1 302 Found\r\nLocation: /x\r\n\r\n", "");
    assert_eq!(s.finish(Some(302)), Outcome::CaptureMissed);
    assert_eq!((s.next_step(), s.var(0)), (0, &b""[..]));
    s.render(false);
    assert_eq!(s.finish(Some(500)), Outcome::UnexpectedStatus);
    s.render(false);
    assert_eq!(s.finish(None), Outcome::Failed);
    assert_eq!(s.next_step(), 0);
}

#[test]
fn a_value_with_cr_lf_or_nul_never_goes_raw_into_a_head() {
    let sc = scenario();
    let mut s = Session::new(&sc);
    for bad in ["t\r\nX-Injected: 1", "t\nx", "t\0"] {
        s.render(false);
        respond(&mut s, "HTTP/1.1 200 OK\r\n\r\n", &format!(r#"name="csrf" value="{bad}""#));
        assert_eq!(s.finish(Some(200)), Outcome::CaptureUnsafe, "{bad:?}");
        assert_eq!((s.next_step(), s.var(0)), (0, &b""[..]));
    }
    // the same value in a body only (form or JSON encoded there) is taken
    let body_only = Capture::new(0, Source::Body, None, Some("(?s)v=(.*)")).unwrap();
    let sc = Scenario {
        vars: vec!["v".into()],
        login: 1,
        steps: vec![
            step("get", vec![text("GET / HTTP/1.1\r\n")], None, vec![body_only]),
            step("post", vec![text("POST / HTTP/1.1\r\n")], Some(vec![var(0, Encoding::Form)]), vec![]),
        ],
    };
    let mut s = Session::new(&sc);
    s.render(false);
    respond(&mut s, "HTTP/1.1 200 OK\r\n\r\n", "v=a\r\nb");
    assert_eq!(s.finish(Some(200)), Outcome::Done);
    assert!(render(&mut s).ends_with("\r\n\r\na%0D%0Ab"));
}

#[test]
fn a_head_that_does_not_parse_again_misses_the_captures() {
    let sc = scenario();
    let mut s = Session::new(&sc);
    s.render(false);
    let (_, user) = s.parts();
    let head = b"HTTP/1.1 200 OK\r\nbad header\r\n\r\n";
    user.head(head, head.len());
    assert_eq!(s.finish(Some(200)), Outcome::CaptureMissed);
}

#[test]
fn a_body_capture_reads_at_most_a_mebibyte() {
    let c = Capture::new(0, Source::Body, None, Some("(END)")).unwrap();
    let sc = Scenario {
        vars: vec!["v".into()],
        login: 0,
        steps: vec![step("s", vec![text("GET / HTTP/1.1\r\n")], None, vec![c])],
    };
    let mut s = Session::new(&sc);
    s.render(false);
    let big = format!("{}END", "x".repeat(MAX_BODY - 3));
    respond(&mut s, "HTTP/1.1 200 OK\r\n\r\n", &big);
    assert_eq!(s.finish(Some(200)), Outcome::Done);
    s.render(false);
    respond(&mut s, "HTTP/1.1 200 OK\r\n\r\n", &format!("x{big}"));
    assert_eq!(s.finish(Some(200)), Outcome::CaptureMissed);
}

#[test]
fn json_bodies_and_an_empty_body_have_a_length() {
    let sc = Scenario {
        vars: vec!["v".into()],
        login: 0,
        steps: vec![
            step(
                "j",
                vec![text("POST /api HTTP/1.1\r\n")],
                Some(vec![text("{\"v\":\""), var(0, Encoding::Json), text("\"}")]),
                vec![],
            ),
            step("e", vec![text("POST /e HTTP/1.1\r\n")], Some(vec![]), vec![]),
        ],
    };
    let mut s = Session::new(&sc);
    s.user.vars[0] = b"a\"b\\c\n".to_vec();
    assert_eq!(render(&mut s), "POST /api HTTP/1.1\r\nContent-Length: 17\r\n\r\n{\"v\":\"a\\\"b\\\\c\\n\"}");
    s.finish(Some(200));
    assert_eq!(render(&mut s), "POST /e HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
}

// Counts this thread's allocations, to show that a warm session makes none.
struct Counting;
thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, size: usize) -> *mut u8 {
        ALLOCATIONS.with(|a| a.set(a.get() + 1));
        unsafe { std::alloc::System.realloc(ptr, layout, size) }
    }
}
#[global_allocator]
static COUNTING: Counting = Counting;

#[test]
fn a_warm_session_allocates_nothing() {
    let sc = scenario();
    let mut s = Session::new(&sc);
    let login = |s: &mut Session<'_>| {
        s.render(false);
        respond(s, "HTTP/1.1 200 OK\r\nSet-Cookie: csrftoken=c1; Max-Age=60\r\n\r\n", r#"name="csrf" value="tok""#);
        assert_eq!(s.finish(Some(200)), Outcome::Done);
        s.render(false);
        respond(s, "HTTP/1.1 302 Found\r\nLocation: /home/\r\nSet-Cookie: sid=S1; Path=/\r\n\r\n", "");
        assert_eq!(s.finish(Some(302)), Outcome::Done);
    };
    let page = |s: &mut Session<'_>| {
        s.render(false);
        respond(s, "HTTP/1.1 200 OK\r\nSet-Cookie: sid=S2; Path=/\r\n\r\n", "");
        assert_eq!(s.finish(Some(200)), Outcome::Done);
    };
    // warm up: every buffer grows, every regex gets its match positions, then a restart
    login(&mut s);
    page(&mut s);
    s.render(false);
    assert_eq!(s.finish(Some(500)), Outcome::UnexpectedStatus);
    let before = ALLOCATIONS.with(Cell::get);
    login(&mut s);
    for _ in 0..10 {
        page(&mut s);
    }
    s.render(false);
    s.finish(None);
    login(&mut s);
    assert_eq!(ALLOCATIONS.with(Cell::get) - before, 0);
}
