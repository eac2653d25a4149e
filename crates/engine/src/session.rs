//! A virtual user of a scenario: its variables, its cookie jar, its next step, and one request
//! buffer the step's template is rendered into. Once the buffers have grown to their size,
//! rendering a request and capturing from its response allocate nothing.

use std::io::Write as _;
use std::time::Instant;

use regex::bytes::CaptureLocations;

use crate::connection::Sink;
use crate::cookies::{parse_set_cookie, request_path, unix_now, Jar};
use crate::scenario::{encode, Piece, Scenario, Source, Step, MAX_BODY};

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

    /// The body captures of `step`; false when one finds nothing.
    fn capture_body(&mut self, step: &Step) -> bool {
        for (j, c) in step.captures.iter().enumerate() {
            if c.from != Source::Body {
                continue;
            }
            let Some(v) = c.find(&self.response_body, &mut self.locs[self.step][j]) else {
                self.missed = true;
                return false;
            };
            if !store(&mut self.vars[c.var], v, self.in_head[c.var]) {
                (self.missed, self.unsafe_value) = (true, true);
                return false;
            }
        }
        true
    }

    /// Stores the response's cookies and runs its header and cookie captures.
    fn headers(&mut self, headers: &[httparse::Header<'_>]) {
        let set_cookies = || headers.iter().filter(|h| h.name.eq_ignore_ascii_case("set-cookie"));
        if set_cookies().next().is_some() {
            let (now, now_unix) = (Instant::now(), unix_now());
            for h in set_cookies() {
                if let Some(c) = parse_set_cookie(h.value) {
                    self.jar.set(&c, &self.path, now, now_unix);
                }
            }
        }
        let step = &self.sc.steps[self.step];
        for (j, c) in step.captures.iter().enumerate() {
            let name = c.name.as_deref().unwrap_or("");
            let locs = &mut self.locs[self.step][j];
            let found = match c.from {
                Source::Body => continue,
                Source::Header => {
                    headers.iter().filter(|h| h.name.eq_ignore_ascii_case(name)).find_map(|h| c.find(h.value, locs))
                }
                Source::Cookie => set_cookies()
                    .filter_map(|h| parse_set_cookie(h.value))
                    .rfind(|k| k.name == name.as_bytes())
                    .and_then(|k| c.find(k.value, locs)),
            };
            match found {
                None => self.missed = true,
                Some(v) if !store(&mut self.vars[c.var], v, self.in_head[c.var]) => {
                    (self.missed, self.unsafe_value) = (true, true);
                }
                Some(_) => {}
            }
        }
    }
}

/// Sets a variable to a captured `value`; false (a missed capture: the session starts over)
/// when the variable goes raw into a head and `value` holds CR, LF or NUL, which the engine never
/// writes there.
fn store(var: &mut Vec<u8>, value: &[u8], in_head: bool) -> bool {
    if in_head && value.iter().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
        return false;
    }
    var.clear();
    var.extend_from_slice(value);
    true
}

impl Sink for User<'_> {
    fn head(&mut self, buf: &[u8], len: usize) {
        let head = &buf[..len];
        let mut offset = 0;
        while offset < head.len() {
            let mut headers = [httparse::EMPTY_HEADER; 128];
            let mut res = httparse::Response::new(&mut headers);
            // The connection parsed this head already; should it not parse here, the step's
            // captures cannot have found their values.
            let Ok(httparse::Status::Complete(len)) = res.parse(&head[offset..]) else {
                self.missed = !self.sc.steps[self.step].captures.is_empty();
                return;
            };
            if res.code.is_some_and(|c| (100..200).contains(&c) && c != 101) {
                offset += len;
                continue;
            }
            self.headers(res.headers);
            return;
        }
    }

    fn wants_body(&self) -> bool {
        self.reads_body
    }

    fn body(&mut self, payload: &[u8]) {
        let room = MAX_BODY - self.response_body.len();
        self.response_body.extend_from_slice(&payload[..payload.len().min(room)]);
    }
}

#[cfg(test)]
mod tests;
