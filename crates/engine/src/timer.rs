//! A sub-millisecond sleep for the open-loop pacer.
//!
//! tokio's timer wheel has 1 ms granularity: a request meant for t would leave up to 1 ms late,
//! and that lag would be added to every corrected latency. The pacer instead arms a timerfd with
//! an absolute CLOCK_MONOTONIC deadline (the clock `Instant` reads on Linux) and waits for it to
//! become readable in the thread's tokio reactor, which wakes within tens of microseconds.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::time::Instant;

pub struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
    /// The same moment as an `Instant` and as a CLOCK_MONOTONIC reading.
    base: Instant,
    base_ns: u128,
}

fn monotonic_ns() -> u128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

impl PreciseTimer {
    /// Must be called inside a tokio runtime with I/O enabled.
    pub fn new() -> io::Result<PreciseTimer> {
        // SAFETY: plain syscalls; the fd is checked and then owned.
        let raw = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // Let the kernel fire timers of this thread without its default 50 µs slack.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0, 0, 0) };
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let base = Instant::now();
        let base_ns = monotonic_ns();
        // SAFETY: the OwnedFd is moved into the AsyncFd and closed only when it is dropped.
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE)? };
        Ok(PreciseTimer { fd, base, base_ns })
    }

    /// Sleeps until `deadline`; returns at once when it has passed.
    pub async fn sleep_until(&self, deadline: Instant) -> io::Result<()> {
        let Some(wait) = deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) else {
            return Ok(());
        };
        // Very long waits are rare (pauses between stages): tokio's wheel is precise enough there,
        // and the timerfd then covers the last stretch.
        if wait > Duration::from_millis(50) {
            tokio::time::sleep_until(deadline - Duration::from_millis(5)).await;
        }
        let at = self.base_ns + deadline.saturating_duration_since(self.base).as_nanos();
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: (at / 1_000_000_000) as libc::time_t,
                tv_nsec: (at % 1_000_000_000) as libc::c_long,
            },
        };
        let fd = self.fd.get_ref().as_raw_fd();
        // SAFETY: valid fd and itimerspec.
        if unsafe { libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        loop {
            let mut guard = self.fd.readable().await?;
            let mut expirations = 0u64;
            // SAFETY: reads 8 bytes into a u64 we own.
            let n = unsafe { libc::read(fd, (&mut expirations as *mut u64).cast(), 8) };
            if n == 8 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::WouldBlock {
                return Err(err);
            }
            guard.clear_ready();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakes_close_to_the_deadline() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let timer = PreciseTimer::new().unwrap();
            let mut lateness = Vec::with_capacity(50);
            for i in 0..50u64 {
                let deadline = Instant::now() + Duration::from_micros(300 + i * 37);
                timer.sleep_until(deadline).await.unwrap();
                let late = Instant::now().saturating_duration_since(deadline);
                assert!(Instant::now() >= deadline);
                lateness.push(late);
            }
            // The median, not the worst: on a shared machine one wake can be preempted for a
            // scheduler tick (10 ms was seen) without the timer being wrong. Typically ~0.05 ms.
            lateness.sort();
            let median = lateness[lateness.len() / 2];
            assert!(median < Duration::from_millis(1), "median {median:?}, all {lateness:?}");
        });
    }

    #[test]
    fn past_deadline_returns_at_once() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let timer = PreciseTimer::new().unwrap();
            timer.sleep_until(Instant::now() - Duration::from_millis(1)).await.unwrap();
        });
    }
}
