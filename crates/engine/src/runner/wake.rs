//! What wakes an engine thread waiting for its life to change (a cancel, the measured phase's
//! start: a deadline known from then): the epoll path's controllers through a `Notify`, each
//! ring through an eventfd its loop keeps a poll on, so that neither looks at the cancel flag on
//! a clock.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Mutex;

use tokio::sync::futures::Notified;
use tokio::sync::Notify;

pub(super) struct Signal {
    notify: Notify,
    /// The rings' eventfds, owned here and closed under the lock a raise holds (`forget`), so
    /// that a raise never writes to a descriptor closed (and perhaps reused) since.
    fds: Mutex<Vec<OwnedFd>>,
}

impl Signal {
    pub(super) fn new() -> Signal {
        Signal { notify: Notify::new(), fds: Mutex::new(Vec::new()) }
    }

    /// epoll: a wait for the next raise (`enable` it before looking at what it is about).
    pub(super) fn notified(&self) -> Notified<'_> {
        self.notify.notified()
    }

    /// A ring's eventfd, readable after each raise from now on (a raise before it was made: the
    /// ring reads what it is about after making it).
    pub(super) fn eventfd(&self) -> std::io::Result<RawFd> {
        // SAFETY: eventfd takes no pointer; the descriptor returned is ours alone.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd was just opened and nothing else owns it.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        self.fds.lock().unwrap_or_else(|e| e.into_inner()).push(owned);
        Ok(fd)
    }

    /// A ring's eventfd closed (its thread's load is over): a raise no longer writes to it.
    pub(super) fn forget(&self, fd: RawFd) {
        self.fds.lock().unwrap_or_else(|e| e.into_inner()).retain(|f| f.as_raw_fd() != fd);
    }

    /// Wakes every thread waiting (what they wait for was changed before this call).
    pub(super) fn raise(&self) {
        self.notify.notify_waiters();
        let one: u64 = 1;
        for fd in self.fds.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            // SAFETY: writes 8 bytes from a u64 we own to an eventfd we own (never blocks: its
            // counter cannot reach the maximum by a few raises).
            unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        }
    }
}

/// A ring's eventfd after its wake: the raises seen are forgotten (not readable until the next).
pub(super) fn clear(fd: RawFd) {
    let mut count: u64 = 0;
    // SAFETY: reads at most 8 bytes into a u64 we own; the eventfd does not block.
    unsafe { libc::read(fd, (&mut count as *mut u64).cast(), 8) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable(fd: RawFd) -> bool {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one pollfd we own, no wait.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    }

    #[test]
    fn a_raise_makes_every_ring_readable_until_it_clears() {
        let s = Signal::new();
        let (a, b) = (s.eventfd().unwrap(), s.eventfd().unwrap());
        assert!(!readable(a) && !readable(b));
        s.raise();
        s.raise();
        assert!(readable(a) && readable(b));
        clear(a);
        assert!(!readable(a) && readable(b));
        s.raise();
        assert!(readable(a));
        // a ring that is gone: its descriptor closed, no longer written to
        s.forget(a);
        assert_eq!(s.fds.lock().unwrap().len(), 1);
        s.raise();
        assert!(readable(b));
    }
}
