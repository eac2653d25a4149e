//! A virtual user's cookie jar (RFC 6265): each `Set-Cookie` is stored with its path, expiry
//! (Max-Age, Expires) and Secure flag, and each request gets a `Cookie` header of the cookies
//! whose path matches its own. The jar serves one site: `Domain` is not looked at.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Cookies a jar keeps; a new one past this replaces the oldest.
const MAX_COOKIES: usize = 64;
/// Longest name and value together (RFC 6265 §6.1 asks for at least 4096 bytes); longer ones are
/// ignored.
const MAX_COOKIE: usize = 4096;

#[derive(Debug)]
struct Cookie {
    name: Vec<u8>,
    value: Vec<u8>,
    path: Vec<u8>,
    expires: Option<Instant>,
    secure: bool,
    created: u64,
}

/// The cookies of one virtual user, longest paths first and, among equal lengths, oldest first
/// (the order of RFC 6265 §5.4). Cookies removed are kept as spares so that their buffers are
/// used again.
#[derive(Debug, Default)]
pub struct Jar {
    cookies: Vec<Cookie>,
    spare: Vec<Cookie>,
    created: u64,
}

/// A `Set-Cookie` header's cookie and the attributes the jar uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetCookie<'a> {
    pub name: &'a [u8],
    pub value: &'a [u8],
    pub path: Option<&'a [u8]>,
    pub max_age: Option<i64>,
    /// Unix seconds.
    pub expires: Option<i64>,
    pub secure: bool,
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|b| !matches!(b, b' ' | b'\t')).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !matches!(b, b' ' | b'\t')).map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

/// Parses a `Set-Cookie` value (RFC 6265 §5.2); None when it is to be ignored (no `=`, no name).
pub fn parse_set_cookie(header: &[u8]) -> Option<SetCookie<'_>> {
    let mut parts = header.split(|&b| b == b';');
    let pair = parts.next()?;
    let eq = pair.iter().position(|&b| b == b'=')?;
    let name = trim(&pair[..eq]);
    if name.is_empty() {
        return None;
    }
    let mut c =
        SetCookie { name, value: trim(&pair[eq + 1..]), path: None, max_age: None, expires: None, secure: false };
    for attr in parts {
        let (key, value) = match attr.iter().position(|&b| b == b'=') {
            Some(i) => (trim(&attr[..i]), trim(&attr[i + 1..])),
            None => (trim(attr), &b""[..]),
        };
        if key.eq_ignore_ascii_case(b"expires") {
            if let Some(t) = cookie_date(value) {
                c.expires = Some(t);
            }
        } else if key.eq_ignore_ascii_case(b"max-age") {
            if let Some(n) = max_age(value) {
                c.max_age = Some(n);
            }
        } else if key.eq_ignore_ascii_case(b"path") {
            // an empty path or one not starting with / means the default path
            c.path = value.starts_with(b"/").then_some(value);
        } else if key.eq_ignore_ascii_case(b"secure") {
            c.secure = true;
        }
    }
    Some(c)
}

/// Max-Age's value: an optional `-` and digits (§5.2.2); a huge one saturates.
fn max_age(v: &[u8]) -> Option<i64> {
    let (negative, digits) = match v.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, v),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits.iter().fold(0i64, |n, &d| n.saturating_mul(10).saturating_add(i64::from(d - b'0')));
    Some(if negative { -n } else { n })
}

/// A cookie date (RFC 6265 §5.1.1, the lenient algorithm browsers use) in Unix seconds.
pub fn cookie_date(s: &[u8]) -> Option<i64> {
    let delimiter = |b: &u8| matches!(b, 0x09 | 0x20..=0x2f | 0x3b..=0x40 | 0x5b..=0x60 | 0x7b..=0x7e);
    let (mut time, mut day, mut month, mut year) = (None, None, None, None);
    for token in s.split(delimiter).filter(|t| !t.is_empty()) {
        if time.is_none() {
            if let Some(t) = time_of_day(token) {
                time = Some(t);
                continue;
            }
        }
        if day.is_none() {
            if let Some(d) = leading_digits(token, 1, 2) {
                day = Some(d);
                continue;
            }
        }
        if month.is_none() && token.len() >= 3 {
            const MONTHS: [&[u8]; 12] =
                [b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov", b"dec"];
            if let Some(m) = MONTHS.iter().position(|m| token[..3].eq_ignore_ascii_case(m)) {
                month = Some(m as i64 + 1);
                continue;
            }
        }
        if year.is_none() {
            if let Some(y) = leading_digits(token, 2, 4) {
                year = Some(y);
            }
        }
    }
    let ((h, mi, sec), day, month, mut year) = (time?, day?, month?, year?);
    if (70..=99).contains(&year) {
        year += 1900;
    } else if (0..=69).contains(&year) {
        year += 2000;
    }
    if !(1..=31).contains(&day) || year < 1601 || h > 23 || mi > 59 || sec > 59 || day > days_in(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + mi * 60 + sec)
}

/// `min` to `max` digits, then nothing or a non-digit and anything.
fn leading_digits(token: &[u8], min: usize, max: usize) -> Option<i64> {
    let n = token.iter().take_while(|b| b.is_ascii_digit()).count();
    (min..=max).contains(&n).then(|| token[..n].iter().fold(0, |v, &d| v * 10 + i64::from(d - b'0')))
}

/// `h:m:s`, each one or two digits, then nothing or a non-digit and anything.
fn time_of_day(token: &[u8]) -> Option<(i64, i64, i64)> {
    let mut parts = [0i64; 3];
    let mut rest = token;
    for (i, part) in parts.iter_mut().enumerate() {
        let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if !(1..=2).contains(&n) {
            return None;
        }
        *part = rest[..n].iter().fold(0, |v, &d| v * 10 + i64::from(d - b'0'));
        rest = &rest[n..];
        if i < 2 {
            rest = rest.strip_prefix(b":")?;
        }
    }
    Some((parts[0], parts[1], parts[2]))
}

fn days_in(year: i64, month: i64) -> i64 {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The path of a request line's target: `/a/b` of `GET /a/b?q HTTP/1.1` (and of an absolute
/// `http://host/a/b`); `/` when there is none.
pub fn request_path(request: &[u8]) -> &[u8] {
    let line = request.split(|&b| b == b'\r' || b == b'\n').next().unwrap_or(b"");
    let mut words = line.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let mut target = words.nth(1).unwrap_or(b"");
    if let Some(i) = target.windows(3).position(|w| w == b"://") {
        let rest = &target[i + 3..];
        target = rest.iter().position(|&b| b == b'/').map_or(b"", |j| &rest[j..]);
    }
    let end = target.iter().position(|&b| b == b'?' || b == b'#').unwrap_or(target.len());
    if target[..end].starts_with(b"/") {
        &target[..end]
    } else {
        b"/"
    }
}

/// The path a cookie set without one gets (RFC 6265 §5.1.4): the request path up to its last
/// `/`, or `/`.
pub fn default_path(request_path: &[u8]) -> &[u8] {
    match request_path.iter().rposition(|&b| b == b'/') {
        Some(i) if i > 0 && request_path.starts_with(b"/") => &request_path[..i],
        _ => b"/",
    }
}

/// Whether a cookie of `cookie_path` goes with a request for `request_path` (RFC 6265 §5.1.4).
pub fn path_matches(cookie_path: &[u8], request_path: &[u8]) -> bool {
    request_path.starts_with(cookie_path)
        && (request_path.len() == cookie_path.len()
            || cookie_path.ends_with(b"/")
            || request_path[cookie_path.len()] == b'/')
}

/// Now in Unix seconds.
pub fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

impl Jar {
    /// Stores (or replaces, or deletes) the cookie of a `Set-Cookie` received in answer to a
    /// request for `request_path`; `now` and `now_unix` are the same moment.
    pub fn set(&mut self, c: &SetCookie<'_>, request_path: &[u8], now: Instant, now_unix: i64) {
        if c.name.len() + c.value.len() > MAX_COOKIE {
            return;
        }
        let path = c.path.unwrap_or_else(|| default_path(request_path));
        // Max-Age wins over Expires; either in the past deletes the cookie
        let lifetime = match (c.max_age, c.expires) {
            (Some(s), _) => Some(s),
            (None, Some(at)) => Some(at.saturating_sub(now_unix)),
            (None, None) => None,
        };
        let existing = self.cookies.iter().position(|k| k.name == c.name && k.path == path);
        if lifetime.is_some_and(|s| s <= 0) {
            if let Some(i) = existing {
                self.spare.push(self.cookies.remove(i));
            }
            return;
        }
        // a lifetime past what an Instant holds is a session's
        let expires = lifetime.and_then(|s| now.checked_add(Duration::from_secs(s as u64)));
        if let Some(i) = existing {
            // a replaced cookie keeps its place (its creation time, §5.3 step 11)
            let k = &mut self.cookies[i];
            k.value.clear();
            k.value.extend_from_slice(c.value);
            k.expires = expires;
            k.secure = c.secure;
            return;
        }
        if self.cookies.len() >= MAX_COOKIES {
            let oldest = (0..self.cookies.len()).min_by_key(|&i| self.cookies[i].created).expect("a full jar");
            self.spare.push(self.cookies.remove(oldest));
        }
        // a spare that held this cookie before has buffers of its size
        let spare = self.spare.iter().position(|k| k.name == c.name).map(|i| self.spare.swap_remove(i));
        let mut k = spare.or_else(|| self.spare.pop()).unwrap_or_else(|| Cookie {
            name: Vec::new(),
            value: Vec::new(),
            path: Vec::new(),
            expires: None,
            secure: false,
            created: 0,
        });
        for (field, from) in [(&mut k.name, c.name), (&mut k.value, c.value), (&mut k.path, path)] {
            field.clear();
            field.extend_from_slice(from);
        }
        k.expires = expires;
        k.secure = c.secure;
        k.created = self.created;
        self.created += 1;
        let at = self.cookies.iter().position(|o| o.path.len() < path.len()).unwrap_or(self.cookies.len());
        self.cookies.insert(at, k);
    }

    /// Appends `Cookie: a=1; b=2\r\n` for a request to `request_path` (nothing when no cookie
    /// goes with it), dropping the expired cookies. Secure cookies go only over TLS.
    pub fn write_header(&mut self, out: &mut Vec<u8>, request_path: &[u8], tls: bool) {
        if self.cookies.iter().any(|k| k.expires.is_some()) {
            let now = Instant::now();
            let mut i = 0;
            while i < self.cookies.len() {
                if self.cookies[i].expires.is_some_and(|e| e <= now) {
                    self.spare.push(self.cookies.remove(i));
                } else {
                    i += 1;
                }
            }
        }
        let mut first = true;
        for k in &self.cookies {
            if (k.secure && !tls) || !path_matches(&k.path, request_path) {
                continue;
            }
            out.extend_from_slice(if first { b"Cookie: " } else { b"; " });
            first = false;
            out.extend_from_slice(&k.name);
            out.push(b'=');
            out.extend_from_slice(&k.value);
        }
        if !first {
            out.extend_from_slice(b"\r\n");
        }
    }

    /// Empties the jar (a new session), keeping the buffers.
    pub fn clear(&mut self) {
        self.spare.append(&mut self.cookies);
        self.created = 0;
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.cookies.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(jar: &mut Jar, path: &str, tls: bool) -> String {
        let mut out = Vec::new();
        jar.write_header(&mut out, path.as_bytes(), tls);
        String::from_utf8(out).unwrap()
    }

    fn set(jar: &mut Jar, line: &str, request_path: &str) {
        let c = parse_set_cookie(line.as_bytes()).unwrap();
        jar.set(&c, request_path.as_bytes(), Instant::now(), unix_now());
    }

    #[test]
    fn parses_set_cookie() {
        let c = parse_set_cookie(
            b" sessionid = abc123 ; Path=/admin; HttpOnly; Secure; Max-Age=60; expires=Wed, 21 Oct 2015 07:28:00 GMT",
        )
        .unwrap();
        assert_eq!((c.name, c.value, c.path), (&b"sessionid"[..], &b"abc123"[..], Some(&b"/admin"[..])));
        assert_eq!((c.max_age, c.expires, c.secure), (Some(60), Some(1_445_412_480), true));
        assert!(parse_set_cookie(b"novalue").is_none());
        assert!(parse_set_cookie(b"=v").is_none());
        let c = parse_set_cookie(b"a=; Path=relative; Max-Age=x1").unwrap();
        assert_eq!((c.value, c.path, c.max_age), (&b""[..], None, None));
        assert_eq!(parse_set_cookie(b"a=b; max-age=-5").unwrap().max_age, Some(-5));
    }

    #[test]
    fn cookie_dates_in_the_forms_servers_write() {
        let t = 1_445_412_480; // 2015-10-21 07:28:00 UTC
        assert_eq!(cookie_date(b"Wed, 21 Oct 2015 07:28:00 GMT"), Some(t));
        assert_eq!(cookie_date(b"Wednesday, 21-Oct-15 07:28:00 GMT"), Some(t));
        assert_eq!(cookie_date(b"Wed, 21-Oct-2015 07:28:00 GMT"), Some(t));
        assert_eq!(cookie_date(b"Wed Oct 21 07:28:00 2015"), Some(t));
        assert_eq!(cookie_date(b"Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(cookie_date(b"Tue, 29 Feb 2000 12:00:00 GMT"), Some(951_825_600));
        assert_eq!(cookie_date(b"Thu, 29 Feb 2001 12:00:00 GMT"), None);
        assert_eq!(cookie_date(b"Wed, 21 Oct 2015 25:28:00 GMT"), None);
        assert_eq!(cookie_date(b"Wed, 21 Oct 1500 07:28:00 GMT"), None);
        assert_eq!(cookie_date(b"tomorrow"), None);
    }

    #[test]
    fn paths() {
        assert_eq!(request_path(b"GET /a/b?x=1 HTTP/1.1\r\nHost: h\r\n"), b"/a/b");
        assert_eq!(request_path(b"GET http://h:8/x/y#f HTTP/1.1\r\n"), b"/x/y");
        assert_eq!(request_path(b"OPTIONS * HTTP/1.1\r\n"), b"/");
        assert_eq!(default_path(b"/admin/login/"), b"/admin/login");
        assert_eq!(default_path(b"/login"), b"/");
        assert_eq!(default_path(b"/"), b"/");
        assert!(path_matches(b"/", b"/anything"));
        assert!(path_matches(b"/admin", b"/admin"));
        assert!(path_matches(b"/admin", b"/admin/x"));
        assert!(path_matches(b"/admin/", b"/admin/x"));
        assert!(!path_matches(b"/admin", b"/administrator"));
        assert!(!path_matches(b"/admin/", b"/admin"));
        assert!(!path_matches(b"/admin", b"/"));
    }

    #[test]
    fn the_jar_sends_matching_cookies_longest_path_first() {
        let mut jar = Jar::default();
        set(&mut jar, "root=1; Path=/", "/login");
        set(&mut jar, "adm=2; Path=/admin", "/login");
        set(&mut jar, "deflt=3", "/admin/login/"); // default path /admin/login
        assert_eq!(header(&mut jar, "/admin/login/x", false), "Cookie: deflt=3; adm=2; root=1\r\n");
        assert_eq!(header(&mut jar, "/admin/", false), "Cookie: adm=2; root=1\r\n");
        assert_eq!(header(&mut jar, "/other", false), "Cookie: root=1\r\n");
        // a replaced cookie keeps its place; the same name on another path is another cookie
        set(&mut jar, "root=9; Path=/", "/");
        set(&mut jar, "adm=7; Path=/", "/");
        assert_eq!(header(&mut jar, "/admin", false), "Cookie: adm=2; root=9; adm=7\r\n");
        assert_eq!(jar.len(), 4);
        jar.clear();
        assert_eq!(header(&mut jar, "/", false), "");
    }

    #[test]
    fn expiry_and_deletion() {
        let mut jar = Jar::default();
        set(&mut jar, "a=1; Max-Age=3600", "/");
        set(&mut jar, "b=2; Expires=Fri, 01 Jan 2100 00:00:00 GMT", "/");
        set(&mut jar, "c=3; Expires=Thu, 01 Jan 1970 00:00:00 GMT", "/"); // past: not stored
        set(&mut jar, "d=4; Max-Age=3600; Expires=Thu, 01 Jan 1970 00:00:00 GMT", "/"); // Max-Age wins
        assert_eq!(header(&mut jar, "/", false), "Cookie: a=1; b=2; d=4\r\n");
        set(&mut jar, "a=gone; Max-Age=0", "/");
        set(&mut jar, "b=; Expires=Thu, 01 Jan 1970 00:00:00 GMT", "/");
        assert_eq!(header(&mut jar, "/", false), "Cookie: d=4\r\n");
        // a cookie whose time runs out is dropped when the next request is made
        let c = parse_set_cookie(b"short=1; Max-Age=1").unwrap();
        jar.set(&c, b"/", Instant::now() - Duration::from_secs(2), unix_now());
        assert_eq!(header(&mut jar, "/", false), "Cookie: d=4\r\n");
        assert_eq!(jar.len(), 1);
    }

    #[test]
    fn secure_cookies_only_over_tls() {
        let mut jar = Jar::default();
        set(&mut jar, "s=1; Secure", "/");
        set(&mut jar, "p=2", "/");
        assert_eq!(header(&mut jar, "/", false), "Cookie: p=2\r\n");
        assert_eq!(header(&mut jar, "/", true), "Cookie: s=1; p=2\r\n");
    }

    #[test]
    fn a_full_jar_drops_its_oldest_and_big_cookies_are_ignored() {
        let mut jar = Jar::default();
        for i in 0..=MAX_COOKIES {
            set(&mut jar, &format!("c{i}=v"), "/");
        }
        assert_eq!(jar.len(), MAX_COOKIES);
        assert!(!header(&mut jar, "/", false).contains("c0="));
        assert!(header(&mut jar, "/", false).contains(&format!("c{MAX_COOKIES}=")));
        set(&mut jar, &format!("big={}", "x".repeat(MAX_COOKIE)), "/");
        assert!(!header(&mut jar, "/", false).contains("big="));
    }
}
