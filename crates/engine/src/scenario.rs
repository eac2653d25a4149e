//! What a logged-in virtual user does: the steps of a scenario, each a request template of text
//! pieces and variable slots, and the captures that fill the variables from responses.
//!
//! The caller (Python) builds the templates; the engine only copies pieces and variable values
//! into each virtual user's request buffer (`session.rs`).

use std::time::Duration;

use regex::bytes::Regex;

/// Logged-in users: each runs the first `login` steps once, then the others round and round.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Variable names (pieces and captures refer to them by index).
    pub vars: Vec<String>,
    /// The first `login` steps run once per session; the rest loop.
    pub login: usize,
    pub steps: Vec<Step>,
}

/// One request of a scenario.
#[derive(Clone, Debug)]
pub struct Step {
    pub name: String,
    /// Index into the spec's targets: where the request goes (its `request` bytes are unused).
    pub target: usize,
    /// Request line and headers, each ending "\r\n", without the blank line, `Cookie` and
    /// `Content-Length` (the engine adds those).
    pub head: Vec<Piece>,
    /// The body; `Some` (even empty) sends a `Content-Length`.
    pub body: Option<Vec<Piece>>,
    /// A HEAD request: the response has no body whatever its headers say.
    pub is_head: bool,
    /// The statuses that continue the session; `None`: 200 to 399.
    pub expect: Option<Vec<u16>>,
    /// Closed loop: the pause after this step (not measured); open loop: ignored.
    pub think: Duration,
    pub captures: Vec<Capture>,
}

/// A piece of a request template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    Text(Vec<u8>),
    /// The virtual user's current value of variable `var`, encoded.
    Var {
        var: usize,
        enc: Encoding,
    },
}

/// How a variable's value is written into a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// As it is.
    Raw,
    /// `application/x-www-form-urlencoded` value: RFC 3986's unreserved (letters, digits, `-._~`)
    /// as they are, space as `+`, every other byte as `%XX` (as Python's `quote_plus`).
    Form,
    /// In a request target's path: unreserved, sub-delims (`!$&'()*+,;=`), `:@/?` and a `%`
    /// followed by two hex digits as they are (a captured link or `Location` goes in unchanged);
    /// every other byte as `%XX` (space `%20`; never CR, LF or NUL).
    Path,
    /// Inside a JSON string: `"`, `\` and control characters escaped.
    Json,
}

impl Encoding {
    /// Whether a value written this way goes into the head as it is (CR, LF and NUL included).
    pub fn is_raw(self) -> bool {
        self == Encoding::Raw
    }
}

/// Where a capture looks in a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The first response header of this name (case-insensitive) whose value matches.
    Header,
    /// The value of the named cookie in the response's `Set-Cookie` headers (the last one).
    Cookie,
    /// The first match of the regex in the body's first `MAX_BODY` bytes.
    Body,
}

/// Bytes of a response body a capture looks at.
pub const MAX_BODY: usize = 1 << 20;

/// Fills variable `var` from a response; finding nothing ends the session.
#[derive(Clone, Debug)]
pub struct Capture {
    pub var: usize,
    pub from: Source,
    /// The header or cookie name (`Header`, `Cookie`).
    pub name: Option<String>,
    /// The value is its first group (the whole match when it has none). Required for `Body`;
    /// optional on header and cookie values.
    pub regex: Option<Regex>,
}

impl Capture {
    /// A capture with its regex compiled (Rust `regex` syntax); the error says why it does not.
    pub fn new(var: usize, from: Source, name: Option<String>, regex: Option<&str>) -> Result<Capture, String> {
        let regex = regex.map(|r| Regex::new(r).map_err(|e| one_line(&e.to_string()))).transpose()?;
        Ok(Capture { var, from, name, regex })
    }

    /// The captured value in `haystack`: its first group, or the whole match without groups,
    /// or all of it without a regex.
    pub fn find<'h>(&self, haystack: &'h [u8], locs: &mut Option<regex::bytes::CaptureLocations>) -> Option<&'h [u8]> {
        let Some(re) = &self.regex else { return Some(haystack) };
        let locs = locs.get_or_insert_with(|| re.capture_locations());
        re.captures_read(locs, haystack)?;
        let group = usize::from(locs.len() > 1);
        let (a, b) = locs.get(group)?;
        Some(&haystack[a..b])
    }
}

/// The number of groups of `pattern` (not counting the whole match) as the engine compiles a
/// capture's regex; the regex crate's error, on one line, when it does not compile.
pub fn regex_groups(pattern: &str) -> Result<usize, String> {
    Regex::new(pattern).map(|re| re.captures_len() - 1).map_err(|e| one_line(&e.to_string()))
}

/// The regex crate's multi-line error, on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Scenario {
    /// Checks what the engine relies on; the message names the offending field.
    pub fn validate(&self, targets: usize) -> Result<(), String> {
        let vars = self.vars.len();
        if let Some(i) = self.vars.iter().position(String::is_empty) {
            return Err(format!("scenario.vars[{i}]: a name may not be empty"));
        }
        if self.steps.is_empty() {
            return Err("scenario.steps: at least one step is needed".into());
        }
        if self.login >= self.steps.len() {
            return Err("scenario.login: at least one step must loop after the login steps".into());
        }
        for (i, step) in self.steps.iter().enumerate() {
            let at = |e: &str| format!("scenario.steps[{i}].{e}");
            if step.name.is_empty() {
                return Err(at("name: may not be empty"));
            }
            if step.target >= targets {
                return Err(at("target: beyond the targets"));
            }
            if step.head.is_empty() {
                return Err(at("head: the request line is needed"));
            }
            let pieces = step.head.iter().chain(step.body.iter().flatten());
            if pieces.into_iter().any(|p| matches!(p, Piece::Var { var, .. } if *var >= vars)) {
                return Err(at("head/body: a piece names a variable beyond vars"));
            }
            if step.expect.iter().flatten().any(|s| !(100..=999).contains(s)) {
                return Err(at("expect: statuses are 100 to 999"));
            }
            for (j, c) in step.captures.iter().enumerate() {
                let at = |e: &str| format!("scenario.steps[{i}].captures[{j}].{e}");
                if c.var >= vars {
                    return Err(at("var: beyond vars"));
                }
                match c.from {
                    Source::Body if c.regex.is_none() => return Err(at("regex: a body capture needs one")),
                    Source::Body if step.is_head => return Err(at("from: the answer to a HEAD has no body")),
                    Source::Header | Source::Cookie if c.name.as_deref().is_none_or(str::is_empty) => {
                        return Err(at("name: a header or cookie capture needs one"))
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

impl Step {
    /// Whether `status` continues the session.
    pub fn expects(&self, status: u16) -> bool {
        match &self.expect {
            Some(list) => list.contains(&status),
            None => (200..400).contains(&status),
        }
    }

    /// Whether a capture of this step reads the body.
    pub fn reads_body(&self) -> bool {
        !self.is_head && self.captures.iter().any(|c| c.from == Source::Body)
    }
}

/// Appends `value` to `out` in the encoding.
pub fn encode(out: &mut Vec<u8>, value: &[u8], enc: Encoding) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    match enc {
        Encoding::Raw => out.extend_from_slice(value),
        Encoding::Form => {
            for &b in value {
                match b {
                    b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(b),
                    b' ' => out.push(b'+'),
                    _ => out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]),
                }
            }
        }
        Encoding::Path => {
            for (i, &b) in value.iter().enumerate() {
                let escape = value.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
                match b {
                    b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(b),
                    b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' => out.push(b),
                    b':' | b'@' | b'/' | b'?' => out.push(b),
                    b'%' if escape => out.push(b),
                    _ => out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]),
                }
            }
        }
        Encoding::Json => {
            for &b in value {
                match b {
                    b'"' => out.extend_from_slice(b"\\\""),
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    0..=0x1f | 0x7f => {
                        out.extend_from_slice(b"\\u00");
                        out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
                    }
                    _ => out.push(b),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(value: &str, e: Encoding) -> String {
        let mut out = Vec::new();
        encode(&mut out, value.as_bytes(), e);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn encodings() {
        let v = "a b&c=d/é\"\\\n\u{1}";
        assert_eq!(enc(v, Encoding::Raw), v);
        assert_eq!(enc(v, Encoding::Form), "a+b%26c%3Dd%2F%C3%A9%22%5C%0A%01");
        assert_eq!(enc("Az09*-._~", Encoding::Form), "Az09%2A-._~");
        // a captured link goes into a path as it is; what a target cannot hold is escaped
        assert_eq!(enc("/a/b?x=1&y=%2F:@!$'()*+,;~", Encoding::Path), "/a/b?x=1&y=%2F:@!$'()*+,;~");
        assert_eq!(enc("a b%zz%4\r\n\0#\"<>é", Encoding::Path), "a%20b%25zz%254%0D%0A%00%23%22%3C%3E%C3%A9");
        assert_eq!(enc("100%", Encoding::Path), "100%25");
        assert_eq!(enc(v, Encoding::Json), "a b&c=d/é\\\"\\\\\\n\\u0001");
        // what the JSON encoding makes parses back to the value
        let json = format!("\"{}\"", enc(v, Encoding::Json));
        assert_eq!(serde_json::from_str::<String>(&json).unwrap(), v);
    }

    #[test]
    fn capture_finds_its_first_group_or_the_whole_match() {
        let mut locs = None;
        let c = Capture::new(0, Source::Body, None, Some(r#"name="csrf" value="([^"]*)""#)).unwrap();
        assert_eq!(c.find(br#"<input name="csrf" value="t0k">"#, &mut locs), Some(&b"t0k"[..]));
        assert_eq!(c.find(b"nothing", &mut locs), None);
        let whole = Capture::new(0, Source::Header, Some("x".into()), Some("[0-9]+")).unwrap();
        assert_eq!(whole.find(b"id 42 here", &mut None), Some(&b"42"[..]));
        let plain = Capture::new(0, Source::Header, Some("x".into()), None).unwrap();
        assert_eq!(plain.find(b"all of it", &mut None), Some(&b"all of it"[..]));
        // an optional group that took no part finds nothing
        let optional = Capture::new(0, Source::Body, None, Some("a(b)?")).unwrap();
        assert_eq!(optional.find(b"ac", &mut None), None);
        let e = Capture::new(0, Source::Body, None, Some("(unclosed")).unwrap_err();
        assert!(!e.contains('\n') && e.contains("unclosed"), "{e}");
        assert_eq!(regex_groups("a(b)(?:c)(?P<d>d)"), Ok(2));
        assert_eq!(regex_groups("[[:alpha:]](a)"), Ok(1));
        for unsupported in [r"x(\d+)\Z", "(a)(?#c)", "(?=a)(b)", r"(a)\1"] {
            let e = regex_groups(unsupported).unwrap_err();
            assert!(!e.contains('\n') && e.starts_with("regex parse error"), "{unsupported}: {e}");
        }
    }

    fn step(name: &str) -> Step {
        Step {
            name: name.into(),
            target: 0,
            head: vec![Piece::Text(b"GET / HTTP/1.1\r\n".to_vec())],
            body: None,
            is_head: false,
            expect: None,
            think: Duration::ZERO,
            captures: vec![],
        }
    }

    #[test]
    fn validation_names_the_field() {
        let ok = Scenario { vars: vec!["token".into()], login: 1, steps: vec![step("login"), step("home")] };
        ok.validate(1).unwrap();
        let check = |f: &dyn Fn(&mut Scenario), field: &str| {
            let mut s = ok.clone();
            f(&mut s);
            let e = s.validate(1).unwrap_err();
            assert!(e.starts_with(field), "{e} (wanted {field})");
        };
        check(&|s| s.login = 2, "scenario.login");
        check(&|s| s.steps.clear(), "scenario.steps");
        check(&|s| s.vars[0].clear(), "scenario.vars[0]");
        check(&|s| s.steps[1].name.clear(), "scenario.steps[1].name");
        check(&|s| s.steps[1].target = 1, "scenario.steps[1].target");
        check(&|s| s.steps[0].head.clear(), "scenario.steps[0].head");
        check(
            &|s| s.steps[0].body = Some(vec![Piece::Var { var: 1, enc: Encoding::Form }]),
            "scenario.steps[0].head/body",
        );
        check(&|s| s.steps[0].expect = Some(vec![20]), "scenario.steps[0].expect");
        check(
            &|s| s.steps[0].captures = vec![Capture::new(1, Source::Body, None, Some("x")).unwrap()],
            "scenario.steps[0].captures[0].var",
        );
        check(
            &|s| s.steps[0].captures = vec![Capture::new(0, Source::Body, None, None).unwrap()],
            "scenario.steps[0].captures[0].regex",
        );
        check(
            &|s| {
                s.steps[0].is_head = true;
                s.steps[0].captures = vec![Capture::new(0, Source::Body, None, Some("x")).unwrap()];
            },
            "scenario.steps[0].captures[0].from",
        );
        check(
            &|s| s.steps[0].captures = vec![Capture::new(0, Source::Cookie, None, None).unwrap()],
            "scenario.steps[0].captures[0].name",
        );
    }

    #[test]
    fn expected_statuses() {
        let mut s = step("a");
        assert!(s.expects(200) && s.expects(302) && s.expects(399));
        assert!(!s.expects(400) && !s.expects(199));
        s.expect = Some(vec![404]);
        assert!(s.expects(404) && !s.expects(200));
    }
}
