//! A response's framing, sans I/O, for both I/O paths (as hyper's `proto::h1` reads one): bytes
//! go in as they arrive, the reader says whether the response needs more, is done (and whether
//! the connection may carry another request), or is bad. The head is parsed by `http::parse_head`,
//! the body counted by `http::BodyDecoder`; nothing is allocated or copied here.

use crate::connection::Sink;
use crate::http::{parse_head, BodyDecoder, Framing};

/// What a response is after the bytes fed so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feed {
    More,
    /// Complete; `reusable`: the connection may carry another request (the head allows it and no
    /// byte came past the response: such bytes were asked for by nobody, the stream is out of step).
    Done { reusable: bool },
    /// A malformed head (or one over 64 KiB) or body framing.
    Bad,
}

/// One response being read.
#[derive(Clone, Copy, Debug)]
pub struct ResponseReader {
    status: Option<u16>,
    body: BodyDecoder,
    reusable: bool,
    /// It answers a HEAD request: no body, whatever the head says.
    head_request: bool,
}

impl ResponseReader {
    pub fn new(head_request: bool) -> ResponseReader {
        ResponseReader { status: None, body: BodyDecoder::new(Framing::Empty), reusable: false, head_request }
    }

    /// The head is complete: from now on, `feed` takes only the new bytes.
    #[inline(always)]
    pub fn has_head(&self) -> bool {
        self.status.is_some()
    }

    /// The status of the final (not interim) response, once its head is complete.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// Body bytes so far (chunked: without the framing).
    pub fn payload(&self) -> u64 {
        self.body.payload
    }

    /// The stream ended: whether that completes the response (a body read until close; the
    /// connection is then not reusable) rather than cutting it short.
    pub fn ends_at_close(&self) -> bool {
        self.status.is_some() && self.body.ends_at_close()
    }

    /// Feeds bytes: before the head is complete, all the response's bytes so far (the caller
    /// keeps them together: the head is parsed from its start); after, only the new ones.
    #[inline(always)]
    pub fn feed(&mut self, bytes: &[u8]) -> Feed {
        self.feed_with(bytes, None::<&mut dyn Sink>)
    }

    /// `feed`, `sink` also getting the head once complete and, when it wants it, the payload.
    #[inline(always)]
    pub fn feed_with<S: Sink + ?Sized>(&mut self, bytes: &[u8], mut sink: Option<&mut S>) -> Feed {
        let rest = if self.status.is_none() {
            match parse_head(bytes, self.head_request) {
                Ok(None) => return Feed::More,
                Ok(Some(h)) => {
                    if let Some(s) = sink.as_deref_mut() {
                        s.head(bytes, h.len);
                    }
                    self.body = BodyDecoder::new(h.framing);
                    self.reusable = h.reusable;
                    self.status = Some(h.status);
                    &bytes[h.len..]
                }
                Err(_) => return Feed::Bad,
            }
        } else {
            bytes
        };
        let used = match sink {
            Some(s) if s.wants_body() => self.body.feed_with(rest, |d| s.body(d)),
            _ => self.body.feed(rest),
        };
        match used {
            Err(_) => Feed::Bad,
            Ok(used) if self.body.is_done() => Feed::Done { reusable: self.reusable && used == rest.len() },
            Ok(_) => Feed::More,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

    /// Feeds `wire` in pieces of `step` bytes as both paths do (the head's bytes kept together
    /// until it is complete); the outcome and the reader.
    fn read(wire: &[u8], step: usize, head_request: bool) -> (Feed, ResponseReader) {
        let mut r = ResponseReader::new(head_request);
        let mut acc = Vec::new();
        for piece in wire.chunks(step) {
            let outcome = if r.has_head() {
                r.feed(piece)
            } else {
                acc.extend_from_slice(piece);
                r.feed(&acc)
            };
            if outcome != Feed::More {
                return (outcome, r);
            }
        }
        (Feed::More, r)
    }

    #[test]
    fn a_response_in_any_pieces() {
        for step in [1, 2, 7, 38, 39, 100] {
            let (outcome, r) = read(OK, step, false);
            assert_eq!(outcome, Feed::Done { reusable: true }, "step {step}");
            assert_eq!((r.status(), r.payload()), (Some(200), 5));
        }
    }

    #[test]
    fn bytes_past_the_response_make_it_not_reusable() {
        let mut wire = OK.to_vec();
        wire.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        assert_eq!(read(&wire, 1000, false).0, Feed::Done { reusable: false });
        // past a head with no body
        assert_eq!(read(b"HTTP/1.1 204 No Content\r\n\r\nX", 1000, false).0, Feed::Done { reusable: false });
    }

    #[test]
    fn the_head_decides_reuse() {
        let close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(read(close, 5, false).0, Feed::Done { reusable: false });
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n";
        assert_eq!(read(head, 5, true).0, Feed::Done { reusable: true });
        assert_eq!(read(head, 5, false).0, Feed::More);
    }

    #[test]
    fn until_close_ends_with_the_stream() {
        let (outcome, r) = read(b"HTTP/1.1 200 OK\r\n\r\nuntil the end", 4, false);
        assert_eq!(outcome, Feed::More);
        assert!(r.ends_at_close());
        assert_eq!(r.payload(), 13);
        // a response cut short is not ended by the close
        let (outcome, r) = read(&OK[..OK.len() - 1], 4, false);
        assert_eq!(outcome, Feed::More);
        assert!(!r.ends_at_close());
        assert!(!ResponseReader::new(false).ends_at_close());
    }

    #[test]
    fn bad_heads_and_bodies() {
        assert_eq!(read(b"HTXP/1.1 2x0 Broken\r\n\r\n", 3, false).0, Feed::Bad);
        assert_eq!(read(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 3, false).0, Feed::Bad);
    }

    struct Seen {
        head: Vec<u8>,
        body: Vec<u8>,
    }

    impl Sink for Seen {
        fn head(&mut self, buf: &[u8], len: usize) {
            self.head = buf[..len].to_vec();
        }
        fn wants_body(&self) -> bool {
            true
        }
        fn body(&mut self, payload: &[u8]) {
            self.body.extend_from_slice(payload);
        }
    }

    #[test]
    fn a_sink_gets_the_head_and_the_payload() {
        let wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let mut seen = Seen { head: Vec::new(), body: Vec::new() };
        let mut r = ResponseReader::new(false);
        assert_eq!(r.feed_with(wire, Some(&mut seen)), Feed::Done { reusable: true });
        assert!(seen.head.starts_with(b"HTTP/1.1 100") && seen.head.ends_with(b"chunked\r\n\r\n"));
        assert_eq!(seen.body, b"abc");
    }
}
