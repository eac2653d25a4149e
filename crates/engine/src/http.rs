//! HTTP/1.1 response framing: the head is parsed with httparse from the connection's buffer, the
//! body is counted through a streaming decoder (Content-Length, chunked, or until close) and
//! never stored.

use std::mem::MaybeUninit;

/// The response head may not be larger than this (status line and headers).
pub const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 128;
/// Chunk-size lines (with extensions) and trailer lines longer than this are rejected.
const MAX_CHUNK_LINE: usize = 4096;
const MAX_TRAILERS: usize = MAX_HEAD;

/// Why a response is malformed. Each counts as a `bad_response` error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    StatusLine,
    Headers,
    HeadTooLarge,
    ContentLength,
    ChunkSize,
    ChunkFraming,
}

/// How the body of a response ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body (HEAD, 1xx, 204, 304, or Content-Length: 0).
    Empty,
    Length(u64),
    Chunked,
    /// No length given: the body ends when the server closes the connection.
    UntilClose,
}

/// A parsed response head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    /// Bytes of the head in the buffer, including any skipped 1xx interim responses.
    pub len: usize,
    pub framing: Framing,
    /// The connection may carry another request after this response.
    pub reusable: bool,
}

/// Parses the response head at the start of `buf`. `Ok(None)`: more bytes are needed.
/// Interim 1xx responses (other than 101) are skipped.
pub fn parse_head(buf: &[u8], head_request: bool) -> Result<Option<Head>, Malformed> {
    let mut offset = 0;
    loop {
        // Uninitialised: zeroing 128 headers would be a 4 KiB memset per response.
        let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
        let mut res = httparse::Response::new(&mut []);
        let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut res,
            &buf[offset..],
            &mut headers,
        );
        let len = match parsed {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => {
                return if buf.len() >= MAX_HEAD { Err(Malformed::HeadTooLarge) } else { Ok(None) };
            }
            Err(httparse::Error::TooManyHeaders) => return Err(Malformed::HeadTooLarge),
            Err(httparse::Error::Status | httparse::Error::Version) => return Err(Malformed::StatusLine),
            Err(_) => return Err(Malformed::Headers),
        };
        if offset + len > MAX_HEAD {
            return Err(Malformed::HeadTooLarge);
        }
        let status = res.code.ok_or(Malformed::StatusLine)?;
        if (100..200).contains(&status) && status != 101 {
            offset += len;
            continue;
        }
        let http10 = res.version == Some(0);
        let mut length: Option<u64> = None;
        let mut chunked = false;
        let mut close = http10;
        for h in res.headers.iter() {
            // Most headers are none of these three: their length alone rules them out.
            match h.name.len() {
                14 if h.name.eq_ignore_ascii_case("content-length") => {
                    let v = parse_content_length(h.value).ok_or(Malformed::ContentLength)?;
                    if length.is_some_and(|l| l != v) {
                        return Err(Malformed::ContentLength);
                    }
                    length = Some(v);
                }
                // Chunked must be the last coding; anything else is read until close.
                17 if h.name.eq_ignore_ascii_case("transfer-encoding") => {
                    chunked = last_token(h.value).eq_ignore_ascii_case(b"chunked");
                }
                10 if h.name.eq_ignore_ascii_case("connection") => {
                    for token in h.value.split(|&b| b == b',') {
                        let token = token.trim_ascii();
                        if token.eq_ignore_ascii_case(b"close") {
                            close = true;
                        } else if token.eq_ignore_ascii_case(b"keep-alive") && http10 {
                            close = false;
                        }
                    }
                }
                _ => {}
            }
        }
        let framing = if head_request || status == 204 || status == 304 || (100..200).contains(&status) {
            Framing::Empty
        } else if chunked {
            Framing::Chunked
        } else {
            match length {
                Some(0) => Framing::Empty,
                Some(n) => Framing::Length(n),
                None => Framing::UntilClose,
            }
        };
        let reusable = !close && framing != Framing::UntilClose && status != 101;
        return Ok(Some(Head { status, len: offset + len, framing, reusable }));
    }
}

fn parse_content_length(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0u64, |n, &d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
}

fn last_token(v: &[u8]) -> &[u8] {
    v.rsplit(|&b| b == b',').next().unwrap_or(v).trim_ascii()
}

/// Counts the bytes of a body as they arrive, and says when it is complete.
#[derive(Clone, Copy, Debug)]
pub struct BodyDecoder {
    state: State,
    /// Payload bytes so far (chunked: decoded data, without the framing).
    pub payload: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Done,
    Length(u64),
    UntilClose,
    /// Reading a chunk-size line: the size so far, its digits, and the line's length.
    Size { size: u64, digits: u8, in_ext: bool, line: usize },
    SizeLf { size: u64 },
    Data(u64),
    DataCr,
    DataLf,
    /// Trailer section: the current line's length and the section's total.
    Trailer { line: usize, total: usize },
}

impl BodyDecoder {
    pub fn new(framing: Framing) -> BodyDecoder {
        let state = match framing {
            Framing::Empty => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::UntilClose => State::UntilClose,
            Framing::Chunked => State::Size { size: 0, digits: 0, in_ext: false, line: 0 },
        };
        BodyDecoder { state, payload: 0 }
    }

    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The body ends at end of stream (its framing is read-until-close).
    pub fn ends_at_close(&self) -> bool {
        self.state == State::UntilClose
    }

    /// Feeds bytes; returns how many belong to this body (the rest would be a next response).
    #[inline]
    pub fn feed(&mut self, data: &[u8]) -> Result<usize, Malformed> {
        self.feed_with(data, |_| {})
    }

    /// `feed`, handing each piece of payload (chunked: the data without its framing) to `on_payload`.
    #[inline(always)]
    pub fn feed_with(&mut self, data: &[u8], mut on_payload: impl FnMut(&[u8])) -> Result<usize, Malformed> {
        let mut i = 0;
        while i < data.len() {
            match self.state {
                State::Done => break,
                State::UntilClose => {
                    on_payload(&data[i..]);
                    self.payload += (data.len() - i) as u64;
                    i = data.len();
                }
                State::Length(left) | State::Data(left) => {
                    let take = left.min((data.len() - i) as u64);
                    on_payload(&data[i..i + take as usize]);
                    self.payload += take;
                    i += take as usize;
                    let left = left - take;
                    self.state = match self.state {
                        State::Length(_) if left == 0 => State::Done,
                        State::Length(_) => State::Length(left),
                        _ if left == 0 => State::DataCr,
                        _ => State::Data(left),
                    };
                }
                State::Size { size, digits, in_ext, line } => {
                    let b = data[i];
                    i += 1;
                    if line >= MAX_CHUNK_LINE {
                        return Err(Malformed::ChunkSize);
                    }
                    let line = line + 1;
                    self.state = match b {
                        b'\r' if digits > 0 => State::SizeLf { size },
                        b'\n' if digits > 0 => self.after_size(size),
                        _ if in_ext => State::Size { size, digits, in_ext, line },
                        b';' | b' ' | b'\t' if digits > 0 => State::Size { size, digits, in_ext: true, line },
                        _ => {
                            let d = (b as char).to_digit(16).ok_or(Malformed::ChunkSize)?;
                            if digits >= 15 {
                                return Err(Malformed::ChunkSize);
                            }
                            State::Size { size: size * 16 + u64::from(d), digits: digits + 1, in_ext, line }
                        }
                    };
                }
                State::SizeLf { size } => {
                    if data[i] != b'\n' {
                        return Err(Malformed::ChunkSize);
                    }
                    i += 1;
                    self.state = self.after_size(size);
                }
                State::DataCr | State::DataLf => {
                    let expected = if self.state == State::DataCr { b'\r' } else { b'\n' };
                    if data[i] != expected {
                        return Err(Malformed::ChunkFraming);
                    }
                    i += 1;
                    self.state = if expected == b'\r' {
                        State::DataLf
                    } else {
                        State::Size { size: 0, digits: 0, in_ext: false, line: 0 }
                    };
                }
                State::Trailer { line, total } => {
                    let b = data[i];
                    i += 1;
                    if total >= MAX_TRAILERS {
                        return Err(Malformed::ChunkFraming);
                    }
                    self.state = match b {
                        b'\n' if line == 0 => State::Done,
                        b'\n' => State::Trailer { line: 0, total: total + 1 },
                        b'\r' => State::Trailer { line, total: total + 1 },
                        _ => State::Trailer { line: line + 1, total: total + 1 },
                    };
                }
            }
        }
        Ok(i)
    }

    fn after_size(&self, size: u64) -> State {
        if size == 0 {
            State::Trailer { line: 0, total: 0 }
        } else {
            State::Data(size)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(raw: &[u8]) -> Head {
        parse_head(raw, false).unwrap().unwrap()
    }

    /// Feeds `body` in pieces of `step` bytes; returns the payload and whether it completed.
    fn decode(framing: Framing, body: &[u8], step: usize) -> Result<(u64, bool, usize), Malformed> {
        let mut d = BodyDecoder::new(framing);
        let mut used = 0;
        for piece in body.chunks(step) {
            let n = d.feed(piece)?;
            used += n;
            if n < piece.len() {
                break;
            }
        }
        Ok((d.payload, d.is_done(), used))
    }

    #[test]
    fn content_length_head() {
        let h = head(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nhello world!");
        assert_eq!(h.status, 200);
        assert_eq!(h.framing, Framing::Length(12));
        assert!(h.reusable);
        assert_eq!(h.len, 39);
    }

    #[test]
    fn partial_head_needs_more() {
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false), Ok(None));
    }

    #[test]
    fn no_body_cases() {
        assert_eq!(head(b"HTTP/1.1 204 No Content\r\n\r\n").framing, Framing::Empty);
        assert_eq!(head(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n").framing, Framing::Empty);
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n", true).unwrap().unwrap();
        assert_eq!(h.framing, Framing::Empty);
    }

    #[test]
    fn connection_close_and_http10() {
        assert!(!head(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").reusable);
        assert!(!head(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").reusable);
        assert!(head(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n").reusable);
        let h = head(b"HTTP/1.1 200 OK\r\n\r\nbody until close");
        assert_eq!(h.framing, Framing::UntilClose);
        assert!(!h.reusable);
    }

    #[test]
    fn interim_responses_are_skipped() {
        let h = head(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(h.status, 201);
        assert_eq!(h.len, 68);
    }

    #[test]
    fn malformed_heads() {
        assert_eq!(parse_head(b"HTXP/1.1 2x0 Broken\r\n\r\n", false), Err(Malformed::StatusLine));
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", false), Err(Malformed::ContentLength));
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", false),
            Err(Malformed::ContentLength)
        );
        let mut big = b"HTTP/1.1 200 OK\r\n".to_vec();
        while big.len() < MAX_HEAD {
            big.extend_from_slice(b"X-Filler: 0123456789012345678901234567890123456789\r\n");
        }
        assert_eq!(parse_head(&big, false), Err(Malformed::HeadTooLarge));
    }

    const CHUNKED: &[u8] = b"5;name=value\r\nhello\r\n7\r\n, world\r\nA \r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n";

    #[test]
    fn chunked_in_any_pieces() {
        for step in [1, 2, 3, 7, 64] {
            let (payload, done, used) = decode(Framing::Chunked, CHUNKED, step).unwrap();
            assert_eq!((payload, done, used), (22, true, CHUNKED.len()), "step {step}");
        }
    }

    #[test]
    fn feed_with_hands_over_the_payload_without_framing() {
        for step in [1, 3, 64] {
            let mut d = BodyDecoder::new(Framing::Chunked);
            let mut out = Vec::new();
            for piece in CHUNKED.chunks(step) {
                d.feed_with(piece, |p| out.extend_from_slice(p)).unwrap();
            }
            assert_eq!(out, b"hello, world0123456789", "step {step}");
        }
        let mut out = Vec::new();
        BodyDecoder::new(Framing::Length(5)).feed_with(b"helloEXTRA", |p| out.extend_from_slice(p)).unwrap();
        assert_eq!(out, b"hello");
    }

    #[test]
    fn chunked_stops_at_its_end() {
        let mut wire = CHUNKED.to_vec();
        wire.extend_from_slice(b"HTTP/1.1 200 OK");
        let (_, done, used) = decode(Framing::Chunked, &wire, 1000).unwrap();
        assert!(done);
        assert_eq!(used, CHUNKED.len());
    }

    #[test]
    fn bogus_chunks() {
        assert_eq!(decode(Framing::Chunked, b"zz\r\nhello", 4).unwrap_err(), Malformed::ChunkSize);
        assert_eq!(decode(Framing::Chunked, b"\r\n", 4).unwrap_err(), Malformed::ChunkSize);
        assert_eq!(decode(Framing::Chunked, b"fffffffffffffffff\r\n", 4).unwrap_err(), Malformed::ChunkSize);
        assert_eq!(decode(Framing::Chunked, b"2\r\nabXY", 4).unwrap_err(), Malformed::ChunkFraming);
    }

    #[test]
    fn length_and_until_close() {
        assert_eq!(decode(Framing::Length(5), b"helloEXTRA", 3).unwrap(), (5, true, 5));
        assert_eq!(decode(Framing::Length(5), b"hel", 3).unwrap(), (3, false, 3));
        let (payload, done, _) = decode(Framing::UntilClose, b"anything at all", 4).unwrap();
        assert_eq!((payload, done), (15, false));
    }
}
