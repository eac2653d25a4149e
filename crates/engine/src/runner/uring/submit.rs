//! What the ring is asked to do: a request on an open connection, a new connection as one linked
//! chain (socket, TCP_NODELAY, connect, send, receive), a multishot receive, a close; each
//! operation's user data (its kind, slot and generation).

use io_uring::{opcode, squeue, types};

use super::Ring;
use crate::uring::GROUP;

pub(super) const OP_CONNECT: u64 = 1;
pub(super) const OP_RECV: u64 = 2;
/// Operations whose success posts nothing (socket, setsockopt, a small send, cancel, close): a
/// completion of the current generation is a failure (cancel's and close's carry the old one).
pub(super) const OP_QUIET: u64 = 3;
/// A large request's send, whose completion says when it was all written.
pub(super) const OP_SEND: u64 = 4;
/// The poll on the thread's eventfd (`wake`): a cancel, or the measured phase's start.
pub(super) const OP_WAKE: u64 = 5;
/// Requests up to this size go out whole at their submission (the socket's send buffer has room
/// for them once the previous response came); their send posts nothing unless it fails. A larger
/// one may wait for the server to read: its completion tells when it was written.
pub(super) const QUIET_SEND: usize = 64 * 1024;
static ONE: libc::c_int = 1;

pub(super) fn user_data(op: u64, conn: usize, gen: u32) -> u64 {
    op | (conn as u64) << 8 | (gen as u64) << 32
}

impl<'w> Ring<'w> {
    pub(super) fn request(&self, i: usize) -> &'w [u8] {
        &self.w.sh.spec.targets[self.conns[i].index].request
    }

    /// The request on slot i's open connection (its multishot receive is armed already).
    pub(super) fn send(&mut self, i: usize) {
        let gen = self.conns[i].gen;
        let request = self.request(i);
        let (send, quiet) = send_entry(i, request, gen);
        if quiet {
            self.sent.push((i, self.conns[i].seq));
        }
        self.push(&[send]);
        if !self.conns[i].recv_armed {
            self.arm_recv(i);
        }
    }

    /// A new connection for slot i, its request and its receive, as one linked chain.
    pub(super) fn open(&mut self, i: usize) {
        let head_request = self.w.sh.spec.targets[self.conns[i].index].head;
        let c = &mut self.conns[i];
        // a connection is opened only for a request
        let gen = c.opening();
        c.reset_exchange(head_request);
        c.connecting = Some(self.now);
        let sa = &self.addrs[c.addr_id][c.try_addr];
        let domain = libc::c_int::from(sa.family());
        let quiet = user_data(OP_QUIET, i, gen);
        let link = squeue::Flags::IO_LINK;
        let skip = squeue::Flags::SKIP_SUCCESS;
        let slot = types::DestinationSlot::try_from_slot_target(i as u32).expect("a slot index");
        let fixed = types::Fixed(i as u32);
        // a direct descriptor is in no process's file table: no close-on-exec flag (the kernel refuses it)
        let socket = opcode::Socket::new(domain, libc::SOCK_STREAM, 0)
            .file_index(Some(slot))
            .build()
            .flags(link | skip)
            .user_data(quiet);
        let connect = opcode::Connect::new(fixed, sa.as_ptr().cast::<libc::sockaddr>(), sa.len())
            .build()
            .flags(link)
            .user_data(user_data(OP_CONNECT, i, gen));
        let (send, _) = send_entry(i, self.request(i), gen);
        let send = send.flags(link);
        let recv = recv_entry(i).user_data(user_data(OP_RECV, i, gen));
        if self.nodelay && domain != libc::AF_UNIX {
            let one = &ONE as *const libc::c_int as *const libc::c_void;
            let nodelay = opcode::SetSockOpt::new(fixed, libc::IPPROTO_TCP as u32, libc::TCP_NODELAY as u32, one, 4)
                .build()
                .flags(link | skip)
                .user_data(quiet);
            self.push(&[socket, nodelay, connect, send, recv]);
        } else {
            self.push(&[socket, connect, send, recv]);
        }
    }

    /// A poll on the thread's eventfd: its completion wakes the loop when what it waits for
    /// changes (a cancel, the measured phase's start), so that the loop looks at no flag on a clock.
    pub(super) fn arm_wake(&mut self) {
        let entry = opcode::PollAdd::new(types::Fd(self.wake_fd), libc::POLLIN as u32)
            .build()
            .user_data(user_data(OP_WAKE, 0, 0));
        self.push(&[entry]);
    }

    pub(super) fn arm_recv(&mut self, i: usize) {
        self.conns[i].recv_armed = true;
        let entry = recv_entry(i).user_data(user_data(OP_RECV, i, self.conns[i].gen));
        self.push(&[entry]);
    }

    /// Closes slot i's socket: what is pending on it is cancelled, its completions are stale.
    pub(super) fn close(&mut self, i: usize) {
        let Some(old) = self.conns[i].closing() else { return };
        let quiet = user_data(OP_QUIET, i, old);
        let fixed = types::Fixed(i as u32);
        let skip = squeue::Flags::SKIP_SUCCESS;
        let cancel = opcode::AsyncCancel2::new(types::CancelBuilder::fd(fixed).all()).build().flags(skip).user_data(quiet);
        let close = opcode::Close::new(fixed).build().flags(skip).user_data(quiet);
        self.push(&[cancel, close]);
    }

    /// An idle connection the server closed (or that went out of step): closed, its slot free.
    pub(super) fn close_idle(&mut self, i: usize) {
        self.close(i);
        if self.open_loop && !self.conns[i].listed {
            self.conns[i].listed = true;
            self.avail.push(i);
        }
    }

    /// Queues `entries` together (a linked chain is never split between two submissions).
    pub(super) fn push(&mut self, entries: &[squeue::Entry]) {
        let mut sq = self.ring.submission();
        if sq.capacity() - sq.len() < entries.len() {
            // full: submit what is queued (waiting for nothing)
            drop(sq);
            let _ = self.ring.submit();
            sq = self.ring.submission();
        }
        // SAFETY: every pointer in the entries (requests, socket addresses, ONE) lives as long as
        // the run's spec or this Ring, which outlives the ring's operations.
        unsafe {
            sq.push_multiple(entries).expect("room was made for the entries");
        }
    }
}

/// A whole request in one send (MSG_WAITALL: the ring sends the rest of a short send itself), and
/// whether it is quiet: a small one posts a completion only when it fails, a large one
/// (`OP_SEND`) always.
pub(super) fn send_entry(i: usize, request: &[u8], gen: u32) -> (squeue::Entry, bool) {
    let send = opcode::Send::new(types::Fixed(i as u32), request.as_ptr(), request.len() as u32)
        .flags(libc::MSG_WAITALL | libc::MSG_NOSIGNAL)
        .build();
    if request.len() <= QUIET_SEND {
        (send.flags(squeue::Flags::SKIP_SUCCESS).user_data(user_data(OP_QUIET, i, gen)), true)
    } else {
        (send.user_data(user_data(OP_SEND, i, gen)), false)
    }
}

pub(super) fn recv_entry(i: usize) -> squeue::Entry {
    opcode::RecvMulti::new(types::Fixed(i as u32), GROUP).build()
}
