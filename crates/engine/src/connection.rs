//! One client connection: connect, write a pre-serialized request, read and frame the response.
//!
//! A connection owns one fixed buffer for its whole life; the head is parsed in place and body
//! bytes are counted and dropped, so an exchange allocates nothing.

use std::cell::Cell;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpSocket, TcpStream, UnixStream};
use tokio::time::Instant;

use crate::error_map::io_kind;
use crate::http::MAX_HEAD;
use crate::response::{Feed, ResponseReader};
use crate::spec::{Addr, Target};
use crate::stats::ErrorKind;
use crate::tls::Tls;

/// Receive buffer asked of the kernel when throttling, so the server really waits on us.
const THROTTLED_RCVBUF: u32 = 8 * 1024;
/// The buffer holds a whole head and then some body.
const BUF_SIZE: usize = MAX_HEAD + 16 * 1024;

pub enum Stream {
    Tcp(tokio::net::TcpStream),
    Unix(UnixStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

async fn connect(addr: &Addr, throttle: Option<u64>) -> io::Result<Stream> {
    match addr {
        Addr::Tcp(addrs) => {
            // The first error is the one reported: the preferred address's.
            let mut first_error = None;
            for sa in addrs {
                match connect_tcp(sa, throttle).await {
                    Ok(stream) => return Ok(Stream::Tcp(stream)),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            Err(first_error.unwrap_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address")))
        }
        Addr::Unix(path) => Ok(Stream::Unix(UnixStream::connect(path).await?)),
    }
}

async fn connect_tcp(sa: &SocketAddr, throttle: Option<u64>) -> io::Result<TcpStream> {
    let socket = if sa.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    if throttle.is_some() {
        socket.set_recv_buffer_size(THROTTLED_RCVBUF)?;
    }
    let stream = socket.connect(*sa).await?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// Where a response goes besides being counted: its head once complete (interim 1xx responses
/// included) and, when wanted, its body's payload (chunked framing removed) piece by piece.
pub trait Sink {
    /// The head is `buf[..len]` (not sliced by the caller: the plain path does no bounds check).
    fn head(&mut self, buf: &[u8], len: usize);
    fn wants_body(&self) -> bool;
    fn body(&mut self, payload: &[u8]);
}

/// A successful exchange.
#[derive(Clone, Copy, Debug)]
pub struct Response {
    pub status: u16,
    /// Connect time, when this exchange opened the connection.
    pub connect: Option<Duration>,
    /// The TLS handshake's time and whether it resumed a session, when this exchange made one.
    pub tls: Option<(Duration, bool)>,
    pub written: Instant,
    pub first_byte: Instant,
    pub bytes_in: u64,
    pub body: u64,
}

/// A failed exchange: the category, the bytes that did arrive, and whether the request was
/// written to the socket.
#[derive(Clone, Copy, Debug)]
pub struct Failure {
    pub kind: ErrorKind,
    pub bytes_in: u64,
    pub sent: bool,
}

impl Failure {
    /// A failure after the request was written.
    fn new(kind: ErrorKind, bytes_in: u64) -> Failure {
        Failure { kind, bytes_in, sent: true }
    }

    /// A failure before the request was written.
    pub fn unsent(kind: ErrorKind) -> Failure {
        Failure { kind, bytes_in: 0, sent: false }
    }
}

/// How the connection is used between requests.
#[derive(Clone, Copy, Debug)]
pub struct Reuse {
    pub keepalive: bool,
    /// Close after this many responses (0: no limit).
    pub calls_per_conn: u32,
    pub throttle_bps: Option<u64>,
}

pub struct Connection<'a> {
    stream: Option<Stream>,
    /// Which address the open stream goes to (index into the run's distinct addresses).
    addr_id: usize,
    served: u32,
    /// The current attempt's request has been written to the socket (shared with the request's
    /// in-flight guard, which counts its bytes when the run ends before the response).
    written: &'a Cell<bool>,
    buf: Box<[u8]>,
    reuse: Reuse,
    /// Counts every connection opened, as soon as it is (also when the request on it is aborted).
    opened: &'a Cell<u64>,
    /// The thread's TLS client, when some target is HTTPS.
    tls: Option<&'a Tls>,
}

impl<'a> Connection<'a> {
    pub fn new(reuse: Reuse, opened: &'a Cell<u64>, written: &'a Cell<bool>) -> Connection<'a> {
        Connection {
            stream: None,
            addr_id: usize::MAX,
            served: 0,
            written,
            buf: vec![0u8; BUF_SIZE].into_boxed_slice(),
            reuse,
            opened,
            tls: None,
        }
    }

    /// This connection speaks TLS to the addresses the thread's `tls` says are HTTPS.
    pub fn with_tls(mut self, tls: Option<&'a Tls>) -> Connection<'a> {
        self.tls = tls;
        self
    }

    pub fn close(&mut self) {
        self.stream = None;
        self.served = 0;
    }

    /// Sends `target`'s request and reads its response. `addr_id` identifies the address, so a
    /// connection open to another one is closed first. A request that fails on a reused
    /// connection before any response byte (the server closed it while idle) is sent once more on
    /// a new connection, as browsers do.
    pub async fn exchange(&mut self, target: &Target, addr_id: usize) -> Result<Response, Failure> {
        let reused = self.reuse_for(addr_id);
        match self.attempt(target, &target.request, target.head, None).await {
            Err(f) if retry(reused, f.bytes_in, f.kind) => {
                self.close();
                self.attempt(target, &target.request, target.head, None).await
            }
            other => other,
        }
    }

    /// `exchange` for a scenario's step: `request` (its rendered bytes; `head_request`: it asks
    /// for a HEAD) goes to `target`'s address, and `sink` also gets the response's head and body.
    /// (Apart from `exchange`, so that the plain path keeps its single callers, inlined.)
    pub async fn exchange_with(
        &mut self,
        target: &Target,
        request: &[u8],
        head_request: bool,
        addr_id: usize,
        sink: &mut dyn Sink,
    ) -> Result<Response, Failure> {
        let reused = self.reuse_for(addr_id);
        match self.attempt(target, request, head_request, Some(&mut *sink)).await {
            Err(f) if retry(reused, f.bytes_in, f.kind) => {
                self.close();
                self.attempt(target, request, head_request, Some(sink)).await
            }
            other => other,
        }
    }

    /// Closes a connection open to another address than `addr_id`; whether one stays open.
    #[inline]
    fn reuse_for(&mut self, addr_id: usize) -> bool {
        if self.addr_id != addr_id {
            self.close();
            self.addr_id = addr_id;
        }
        self.stream.is_some()
    }

    /// Whether the last attempt wrote its request (for a request cut short by the timeout).
    pub fn request_written(&self) -> bool {
        self.written.get()
    }

    async fn attempt(
        &mut self,
        target: &Target,
        request: &[u8],
        head_request: bool,
        sink: Option<&mut dyn Sink>,
    ) -> Result<Response, Failure> {
        self.written.set(false);
        let mut connect = None;
        let mut tls = None;
        if self.stream.is_none() {
            let t0 = Instant::now();
            let mut stream = connect_to(&target.addr, self.reuse.throttle_bps).await?;
            connect = Some(t0.elapsed());
            self.opened.set(self.opened.get() + 1);
            if let Some(client) = self.tls.filter(|t| t.is_tls(self.addr_id)) {
                let Stream::Tcp(tcp) = stream else { unreachable!("TLS targets have tcp addresses") };
                let t1 = Instant::now();
                let done = client.handshake(tcp, self.addr_id).await.map_err(Failure::unsent)?;
                tls = Some((t1.elapsed(), done.resumed));
                stream = Stream::Tls(done.stream);
            }
            self.stream = Some(stream);
        }
        let mut result = self.roundtrip(request, head_request, sink, connect).await;
        if let (Some(t), Ok(r)) = (tls, &mut result) {
            r.tls = Some(t);
        }
        match &result {
            Ok(_) => {
                self.served += 1;
                let limit = self.reuse.calls_per_conn;
                // a response that ended the connection (not reusable) starts the count again too
                if self.stream.is_none() || !self.reuse.keepalive || (limit > 0 && self.served >= limit) {
                    self.close();
                }
            }
            Err(_) => self.close(),
        }
        result
    }

    async fn roundtrip(
        &mut self,
        request: &[u8],
        head_request: bool,
        mut sink: Option<&mut dyn Sink>,
        connect: Option<Duration>,
    ) -> Result<Response, Failure> {
        let stream = self.stream.as_mut().expect("connected");
        stream.write_all(request).await.map_err(|e| Failure::unsent(io_kind(&e, false)))?;
        self.written.set(true);
        let written = Instant::now();

        let throttle = self.reuse.throttle_bps;
        // Under a throttle, read in small pieces so the pace is even.
        let piece = throttle.map_or(BUF_SIZE, |bps| (bps as usize / 20).clamp(512, BUF_SIZE));
        let mut pace = throttle.map(|bps| Pacing { bps, next: written });
        let mut filled = 0usize;
        let mut bytes_in = 0u64;
        let mut first_byte = None;
        let mut reader = ResponseReader::new(head_request);
        let mut reusable = false;
        loop {
            // Before the head is complete, bytes accumulate; after, each read reuses the buffer.
            let start = if reader.has_head() { 0 } else { filled };
            let end = (start + piece).min(self.buf.len());
            let n = stream.read(&mut self.buf[start..end]).await.map_err(|e| Failure::new(io_kind(&e, false), bytes_in))?;
            if n == 0 {
                if reader.ends_at_close() {
                    break;
                }
                return Err(Failure::new(ErrorKind::Reset, bytes_in));
            }
            bytes_in += n as u64;
            first_byte.get_or_insert_with(Instant::now);
            let data = if reader.has_head() {
                &self.buf[..n]
            } else {
                filled += n;
                &self.buf[..filled]
            };
            match reader.feed_with(data, sink.as_deref_mut()) {
                Feed::More => pace_read(&mut pace, n).await,
                Feed::Done { reusable: r } => {
                    reusable = r;
                    // a slow client takes as long over its last read as over the others (a
                    // response that came in one read included)
                    pace_read(&mut pace, n).await;
                    break;
                }
                Feed::Bad => return Err(Failure::new(ErrorKind::BadResponse, bytes_in)),
            }
        }
        if !reusable {
            self.stream = None;
        }
        Ok(Response {
            status: reader.status().expect("a complete response has a head"),
            connect,
            tls: None,
            written,
            first_byte: first_byte.expect("a complete response has bytes"),
            bytes_in,
            body: reader.payload(),
        })
    }
}

/// A request failed on a reused connection before any response byte (the server closed it while
/// idle): sent once more on a new connection (the keep-alive retry rule of both I/O paths).
#[inline]
pub(crate) fn retry(reused: bool, bytes_in: u64, kind: ErrorKind) -> bool {
    reused && bytes_in == 0 && kind == ErrorKind::Reset
}

async fn connect_to(addr: &Addr, throttle: Option<u64>) -> Result<Stream, Failure> {
    connect(addr, throttle).await.map_err(|e| Failure::unsent(io_kind(&e, true)))
}

/// Receive pacing for a throttled connection.
struct Pacing {
    bps: u64,
    next: Instant,
}

async fn pace_read(pace: &mut Option<Pacing>, n: usize) {
    if let Some(p) = pace {
        p.next += Duration::from_secs_f64(n as f64 / p.bps as f64);
        if p.next > Instant::now() {
            tokio::time::sleep_until(p.next).await;
        }
    }
}
