//! A virtual user of a scenario: its variables, its cookie jar, its next step, and one request
//! buffer the step's template is rendered into. Once the buffers have grown to their size,
//! rendering a request and capturing from its response allocate nothing.

use std::io::Write as _;

use regex::bytes::CaptureLocations;

use crate::cookies::{request_path, Jar};
use crate::scenario::{encode, Piece, Scenario};

mod capture;

/// How a step ended for its session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Expected status, every capture found: the session goes on.
    Done,
    /// No complete response (an error): the session starts over.
    Failed,
    /// A status the step does not expect: the session starts over.
    UnexpectedStatus,
    /// A capture found nothing: the session starts over.
    CaptureMissed,
    /// A capture matched, but its value holds CR, LF or NUL and its variable goes raw into a
    /// request head, which the engine never writes them into: the session starts over (counted
    /// as a missed capture too, and apart, so that the user is told why).
    CaptureUnsafe,
}

/// One virtual user.
pub struct Session<'s> {
    /// The rendered request of the current step.
    request: Vec<u8>,
    user: User<'s>,
}

/// Everything of a session but its request, which is being sent while the response comes in
/// here.
pub struct User<'s> {
    sc: &'s Scenario,
    /// The step being run and the one after it.
    step: usize,
    next: usize,
    vars: Vec<Vec<u8>>,
    jar: Jar,
    /// The current request's path (where cookies it receives belong by default).
    path: Vec<u8>,
    /// The current request's body, rendered before its head is finished.
    body: Vec<u8>,
    /// The first `MAX_BODY` bytes of the response body, when a capture reads it.
    response_body: Vec<u8>,
    reads_body: bool,
    /// A header or cookie capture of the current response found nothing (or its head could not
    /// be read again), or a capture found a value the head cannot hold.
    missed: bool,
    /// Of `missed`: a capture matched a value the head cannot hold (CR, LF, NUL).
    unsafe_value: bool,
    /// Per variable: written as it is into some step's head (a header value), where a value
    /// holding CR, LF or NUL would add or cut header lines.
    in_head: Vec<bool>,
    /// Each capture's match positions (`[step][capture]`), made on first use.
    locs: Vec<Vec<Option<CaptureLocations>>>,
}

impl<'s> Session<'s> {
    pub fn new(sc: &'s Scenario) -> Session<'s> {
        Session {
            request: Vec::with_capacity(1024),
            user: User {
                sc,
                step: 0,
                next: 0,
                vars: vec![Vec::new(); sc.vars.len()],
                jar: Jar::default(),
                path: Vec::new(),
                body: Vec::new(),
                response_body: Vec::new(),
                reads_body: false,
                missed: false,
                unsafe_value: false,
                in_head: in_head(sc),
                locs: sc.steps.iter().map(|s| s.captures.iter().map(|_| None).collect()).collect(),
            },
        }
    }

    /// The step the next `render` makes.
    pub fn next_step(&self) -> usize {
        self.user.next
    }

    /// Renders the next step's request: its head, `Cookie` from the jar (Secure cookies only
    /// when `tls`), `Content-Length` when it has a body, the blank line, the body.
    pub fn render(&mut self, tls: bool) -> &[u8] {
        let u = &mut self.user;
        u.step = u.next;
        let step = &u.sc.steps[u.step];
        u.missed = false;
        u.unsafe_value = false;
        u.reads_body = step.reads_body();
        u.response_body.clear();
        let req = &mut self.request;
        req.clear();
        for p in &step.head {
            piece(req, p, &u.vars);
        }
        u.path.clear();
        u.path.extend_from_slice(request_path(req));
        u.jar.write_header(req, &u.path, tls);
        if let Some(body) = &step.body {
            u.body.clear();
            for p in body {
                piece(&mut u.body, p, &u.vars);
            }
            let _ = write!(req, "Content-Length: {}\r\n\r\n", u.body.len());
            req.extend_from_slice(&u.body);
        } else {
            req.extend_from_slice(b"\r\n");
        }
        &self.request
    }

    /// The rendered request and where its response goes (split borrows for the exchange).
    pub fn parts(&mut self) -> (&[u8], &mut User<'s>) {
        (&self.request, &mut self.user)
    }

    /// Ends the current step with its response's status (None: no complete response): runs the
    /// body captures, then moves on to the next step, or starts the session over.
    pub fn finish(&mut self, status: Option<u16>) -> Outcome {
        let u = &mut self.user;
        let step = &u.sc.steps[u.step];
        let outcome = match status {
            None => Outcome::Failed,
            Some(s) if !step.expects(s) => Outcome::UnexpectedStatus,
            Some(_) if (u.missed || !u.capture_body(step)) && u.unsafe_value => Outcome::CaptureUnsafe,
            Some(_) if u.missed => Outcome::CaptureMissed,
            Some(_) => Outcome::Done,
        };
        if outcome == Outcome::Done {
            u.next = if u.step + 1 == u.sc.steps.len() { u.sc.login } else { u.step + 1 };
        } else {
            u.restart();
        }
        outcome
    }

    /// A variable's current value.
    #[cfg(test)]
    pub fn var(&self, i: usize) -> &[u8] {
        &self.user.vars[i]
    }
}

/// Per variable of `sc`: whether some step's head has it raw (`Encoding::Raw`).
fn in_head(sc: &Scenario) -> Vec<bool> {
    let mut raw = vec![false; sc.vars.len()];
    for p in sc.steps.iter().flat_map(|s| &s.head) {
        if let Piece::Var { var, enc } = p {
            raw[*var] |= enc.is_raw();
        }
    }
    raw
}

fn piece(out: &mut Vec<u8>, p: &Piece, vars: &[Vec<u8>]) {
    match p {
        Piece::Text(t) => out.extend_from_slice(t),
        Piece::Var { var, enc } => encode(out, &vars[*var], *enc),
    }
}

impl User<'_> {
    /// A new session: the login again, no cookies, no values.
    fn restart(&mut self) {
        self.next = 0;
        self.jar.clear();
        for v in &mut self.vars {
            v.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::Sink;
    use crate::scenario::{Capture, Encoding, Source, Step, MAX_BODY};
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
}
