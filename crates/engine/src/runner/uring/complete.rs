//! What the ring's completions mean for each slot: a connect made or refused, a send done or
//! failed, response bytes (through the one `ResponseReader`) or the end of the stream.

use io_uring::cqueue;

use super::submit::{OP_CONNECT, OP_RECV, OP_SEND, OP_WAKE, QUIET_SEND};
use super::Ring;
use crate::error_map::errno_kind;
use crate::response::Feed;
use crate::stats::ErrorKind;

impl Ring<'_> {
    pub(super) fn complete(&mut self, data: u64, res: i32, flags: u32) {
        let op = data & 0xff;
        if op == OP_WAKE {
            // a cancel or the measured phase's start: the loop's next pass looks (the poll
            // again, unless the ring is going away)
            if res >= 0 {
                crate::runner::wake::clear(self.wake_fd);
                self.arm_wake();
            }
            return;
        }
        let i = ((data >> 8) & 0xff_ffff) as usize;
        let gen = (data >> 32) as u32;
        let bid = cqueue::buffer_select(flags);
        let current = self.conns[i].gen == gen;
        if op == OP_RECV && current && !cqueue::more(flags) {
            self.conns[i].recv_armed = false;
        }
        if !current {
            if let Some(bid) = bid {
                self.bufs.give_back(bid);
            }
            return;
        }
        if op == OP_RECV && (res >= 0 || res == -libc::ENOBUFS) {
            // bytes (or the end) came: the connection is made, if its connect was not reaped yet
            self.connected(i);
        }
        match op {
            OP_RECV => self.on_recv(i, res, bid),
            OP_CONNECT => self.on_connect(i, res),
            OP_SEND => self.on_send(i, res),
            // socket, setsockopt or a small send failed (the rest of a chain is cancelled, stale
            // once closed; a send that failed part-way has a positive result): as the epoll
            // path's failed write, unsent, and sent once more on a new connection when the server
            // closed a reused one while it was idle
            _ if res != -libc::ECANCELED && self.conns[i].busy() => {
                self.conns[i].written = None;
                self.fail_or_retry(i, if res < 0 { errno_kind(-res, false) } else { ErrorKind::Reset });
            }
            _ => {}
        }
    }

    /// A large request's send: written when all of it went, else failed as unsent.
    pub(super) fn on_send(&mut self, i: usize, res: i32) {
        let c = &mut self.conns[i];
        if !c.busy() || res == -libc::ECANCELED {
            return;
        }
        if res >= 0 && res as usize == self.w.sh.spec.targets[c.index].request.len() {
            c.written = Some(self.now);
            return;
        }
        c.written = None;
        self.fail_or_retry(i, if res < 0 { errno_kind(-res, false) } else { ErrorKind::Reset });
    }

    pub(super) fn on_connect(&mut self, i: usize, res: i32) {
        if res >= 0 {
            // (also when its request has ended: its response was reaped first)
            self.connected(i);
            return;
        }
        if !self.conns[i].busy() || res == -libc::ECANCELED {
            return;
        }
        let c = &self.conns[i];
        if c.try_addr + 1 < self.addrs[c.addr_id].len() {
            // the next of the host's addresses (the first error is the one reported if all fail);
            // the connect time counts from the first
            let (next, began) = (c.try_addr + 1, c.connecting);
            self.close(i);
            self.conns[i].try_addr = next;
            self.open(i);
            self.conns[i].connecting = began;
            return;
        }
        self.fail(i, errno_kind(-res, true));
    }

    /// Slot i's new connection is made: counted, its connect time taken, a small request written.
    /// From the connect's completion, or from the first response bytes when they were reaped
    /// first (a multishot receive posts its completions at once, the connect's are batched).
    pub(super) fn connected(&mut self, i: usize) {
        let now = self.now;
        let w = self.w;
        let c = &mut self.conns[i];
        let Some(began) = c.connecting.take() else { return };
        c.connect = Some(now.saturating_duration_since(began));
        // the linked send of a small request goes out as the connect completes (a large one's
        // completion says when). Linked, not issued together: a connect the ring retries after
        // the connection was reset would connect again (a second connection to the server)
        if w.sh.spec.targets[c.index].request.len() <= QUIET_SEND {
            c.written.get_or_insert(now);
        }
        w.opened.set(w.opened.get() + 1);
    }

    pub(super) fn on_recv(&mut self, i: usize, res: i32, bid: Option<u16>) {
        if res < 0 {
            match -res {
                // out of buffers, or a short send cut the chain: receive again once buffers are back
                libc::ENOBUFS | libc::ECANCELED => {
                    if self.conns[i].busy() {
                        self.rearm.push(i);
                    }
                }
                e if self.conns[i].busy() => {
                    let kind = errno_kind(e, false);
                    self.fail_or_retry(i, kind);
                }
                _ => self.close_idle(i),
            }
            return;
        }
        if !self.conns[i].busy() {
            // the server closed an idle connection, or sent what nobody asked for: out of step
            if let Some(bid) = bid {
                self.bufs.give_back(bid);
            }
            self.close_idle(i);
            return;
        }
        if res == 0 {
            if let Some(bid) = bid {
                self.bufs.give_back(bid);
            }
            if self.conns[i].response.ends_at_close() {
                self.finish(i, false);
            } else {
                self.fail_or_retry(i, ErrorKind::Reset);
            }
            return;
        }
        let Some(bid) = bid else { return };
        let n = res as usize;
        let outcome = self.feed(i, bid, n);
        self.bufs.give_back(bid);
        match outcome {
            Feed::More => {
                if !self.conns[i].recv_armed {
                    self.rearm.push(i);
                }
            }
            Feed::Done { reusable } => self.finish(i, reusable),
            Feed::Bad => self.fail(i, ErrorKind::BadResponse),
        }
    }

    /// The bytes of buffer `bid` into slot i's response (the head's kept together until complete).
    pub(super) fn feed(&mut self, i: usize, bid: u16, n: usize) -> Feed {
        let data = self.bufs.bytes(bid, n);
        let c = &mut self.conns[i];
        c.bytes_in += n as u64;
        c.first_byte.get_or_insert(self.now);
        if c.response.has_head() {
            return c.response.feed(data);
        }
        let outcome = if c.acc.is_empty() {
            c.response.feed(data)
        } else {
            c.acc.extend_from_slice(data);
            c.response.feed(&c.acc)
        };
        if c.response.has_head() {
            c.acc.clear();
        } else if outcome == Feed::More && c.acc.is_empty() {
            c.acc.extend_from_slice(data);
        }
        outcome
    }
}
