//! A connection slot of the ring: its socket (fixed file i), its generation, and the exchange on it.

use std::time::Duration;

use tokio::time::Instant;

use super::NONE;
use crate::response::ResponseReader;
use crate::runner::Job;

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
    pub(super) reused: bool,
    pub(super) retried: bool,
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
            reused: false,
            retried: false,
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

    #[test]
    fn a_busy_slot_is_open_a_closed_one_neither() {
        let mut c = Conn::new(Job { slot: 0, intended: Instant::now(), measured: true });
        assert!(!c.is_open() && !c.busy());
        c.state = State::Busy;
        assert!(c.is_open() && c.busy());
        c.state = State::Idle;
        assert!(c.is_open() && !c.busy());
    }
}
