//! What a virtual user takes from a response: its cookies into the jar, its header, cookie and
//! body captures into the variables (`Sink`, fed by the connection while the response comes in).

use std::time::Instant;

use super::User;
use crate::connection::Sink;
use crate::cookies::{parse_set_cookie, unix_now};
use crate::scenario::{Source, Step, MAX_BODY};

impl User<'_> {
    /// The body captures of `step`; false when one finds nothing.
    pub(super) fn capture_body(&mut self, step: &Step) -> bool {
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
