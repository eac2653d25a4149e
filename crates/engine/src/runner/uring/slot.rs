//! A connection slot of the ring: its socket (fixed file i), its generation, and the exchange on it.

use std::time::Duration;

use tokio::time::Instant;

use super::NONE;
use crate::connection::retry;
use crate::response::ResponseReader;
use crate::runner::Job;
use crate::stats::ErrorKind;

/// Where a slot's connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// No socket.
    Closed,
    /// An open connection with no request on it.
    Idle,
    /// A request in flight, on a reused connection or one being opened for it.
    Busy,
}

/// Which attempt at its request a busy slot makes (instead of a reused and a retried boolean).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Attempt {
    /// On a connection opened for the request.
    Fresh,
    /// On a connection an earlier request left open.
    Reused,
    /// Once more, on a new connection, after the reused one failed before any response byte.
    Again,
}

impl Attempt {
    /// A request's first attempt: on the slot's open connection, or a new one.
    pub(super) fn first(open: bool) -> Attempt {
        if open {
            Attempt::Reused
        } else {
            Attempt::Fresh
        }
    }

    /// After a failure: the attempt that follows it (`Again`, on a new connection), or None: the
    /// failure counts (the keep-alive retry rule, `connection::retry`, once per request).
    pub(super) fn after_failure(self, bytes_in: u64, kind: ErrorKind) -> Option<Attempt> {
        retry(self == Attempt::Reused, bytes_in, kind).then_some(Attempt::Again)
    }
}

/// Connection slot i: its socket (fixed file i) and the exchange on it.
pub(super) struct Conn {
    /// Bumped whenever the socket is opened or closed: completions of another generation are
    /// stale (their buffers still go back).
    pub(super) gen: u32,
    /// Closed, idle or busy (a busy slot's socket is open, or being opened).
    pub(super) state: State,
    pub(super) addr_id: usize,
    pub(super) recv_armed: bool,
    pub(super) served: u32,
    /// In the list of slots free for an open-loop request.
    pub(super) listed: bool,
    pub(super) job: Job,
    pub(super) index: usize,
    pub(super) start: Instant,
    pub(super) seq: u64,
    /// The request's first attempt, on a reused or a new connection, or its second.
    pub(super) attempt: Attempt,
    /// Which of the address's socket addresses this attempt connects to.
    pub(super) try_addr: usize,
    pub(super) connecting: Option<Instant>,
    pub(super) connect: Option<Duration>,
    pub(super) written: Option<Instant>,
    pub(super) first_byte: Option<Instant>,
    pub(super) bytes_in: u64,
    pub(super) response: ResponseReader,
    /// A head that came in several pieces.
    pub(super) acc: Vec<u8>,
    /// When the request times out; the busy slots are a list in this order (`prev`, `next`).
    pub(super) deadline: Instant,
    pub(super) prev: usize,
    pub(super) next: usize,
}

impl Conn {
    /// A request is in flight on the slot.
    #[inline]
    pub(super) fn busy(&self) -> bool {
        self.state == State::Busy
    }

    /// The slot has a socket.
    #[inline]
    pub(super) fn is_open(&self) -> bool {
        self.state != State::Closed
    }

    pub(super) fn new(job: Job) -> Conn {
        Conn {
            gen: 0,
            state: State::Closed,
            addr_id: usize::MAX,
            recv_armed: false,
            served: 0,
            listed: false,
            job,
            index: 0,
            start: job.intended,
            seq: 0,
            attempt: Attempt::Fresh,
            try_addr: 0,
            connecting: None,
            connect: None,
            written: None,
            first_byte: None,
            bytes_in: 0,
            response: ResponseReader::new(false),
            acc: Vec::new(),
            deadline: job.intended,
            prev: NONE,
            next: NONE,
        }
    }

    /// Closed or idle → busy: a new connection is opened for the slot's request (a new
    /// generation, its receive armed by the chain); the generation.
    pub(super) fn opening(&mut self) -> u32 {
        self.gen = self.gen.wrapping_add(1);
        self.state = State::Busy;
        self.recv_armed = true;
        self.served = 0;
        self.gen
    }

    /// Idle → busy: a request on the open connection.
    pub(super) fn reusing(&mut self) {
        debug_assert_eq!(self.state, State::Idle);
        self.state = State::Busy;
    }

    /// Busy → idle: the slot's request ended (its connection closed next, or kept).
    pub(super) fn ended(&mut self) {
        debug_assert_eq!(self.state, State::Busy);
        self.state = State::Idle;
    }

    /// Any → closed: the generation the close carries (its completions and those before it are
    /// stale from now on), or None when there is no socket. A busy slot's request goes on, on the
    /// connection opened for it next, or is counted.
    pub(super) fn closing(&mut self) -> Option<u32> {
        if !self.is_open() {
            return None;
        }
        let old = self.gen;
        self.gen = self.gen.wrapping_add(1);
        self.state = State::Closed;
        self.recv_armed = false;
        self.served = 0;
        Some(old)
    }

    /// Forgets the last attempt's response (a new attempt starts; `head_request`: it asks for a HEAD).
    pub(super) fn reset_exchange(&mut self, head_request: bool) {
        self.connecting = None;
        self.connect = None;
        self.written = None;
        self.first_byte = None;
        self.bytes_in = 0;
        self.response = ResponseReader::new(head_request);
        self.acc.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot() -> Conn {
        Conn::new(Job { slot: 0, intended: Instant::now(), measured: true })
    }

    #[test]
    fn a_busy_slot_is_open_a_closed_one_neither() {
        let mut c = slot();
        assert!(!c.is_open() && !c.busy());
        c.state = State::Busy;
        assert!(c.is_open() && c.busy());
        c.state = State::Idle;
        assert!(c.is_open() && !c.busy());
    }

    #[test]
    fn a_slot_opens_serves_keeps_and_closes() {
        let mut c = slot();
        // closed → busy on a new connection (generation 1)
        assert_eq!(c.opening(), 1);
        assert!(c.busy() && c.recv_armed);
        c.served = 3;
        // busy → idle (kept), → busy again on it
        c.ended();
        assert!(c.is_open() && !c.busy());
        c.reusing();
        assert!(c.busy() && c.gen == 1);
        // → closed: the close carries the old generation, the slot has a new one
        assert_eq!(c.closing(), Some(1));
        assert_eq!((c.state, c.gen, c.served, c.recv_armed), (State::Closed, 2, 0, false));
        // closing a closed slot does nothing
        assert_eq!(c.closing(), None);
        assert_eq!(c.gen, 2);
        // a busy slot's request goes on, on the connection opened for it next
        assert_eq!(c.opening(), 3);
        assert_eq!(c.closing(), Some(3));
        assert_eq!(c.opening(), 5);
    }

    #[test]
    fn a_request_is_sent_once_more_only_after_a_reused_connection_failed_silently() {
        assert_eq!(Attempt::first(true), Attempt::Reused);
        assert_eq!(Attempt::first(false), Attempt::Fresh);
        // the server closed the idle connection: reset before any byte of the response
        assert_eq!(Attempt::Reused.after_failure(0, ErrorKind::Reset), Some(Attempt::Again));
        // not after response bytes, another error, a fresh connection or the second attempt
        assert_eq!(Attempt::Reused.after_failure(1, ErrorKind::Reset), None);
        assert_eq!(Attempt::Reused.after_failure(0, ErrorKind::Timeout), None);
        assert_eq!(Attempt::Fresh.after_failure(0, ErrorKind::Reset), None);
        assert_eq!(Attempt::Again.after_failure(0, ErrorKind::Reset), None);
    }
}
