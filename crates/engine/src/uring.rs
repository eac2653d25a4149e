//! The io_uring path's choice and its kernel resources: whether this kernel and this run can take
//! it (`choose`), and the provided-buffer ring a thread's receives land in (`BufRing`). The
//! per-thread event loop is `runner::uring`.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::OnceLock;

use io_uring::types::BufRingEntry;
use io_uring::{opcode, IoUring};

use crate::spec::{Io, Spec};

/// The I/O path a run takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoPath {
    Uring,
    Epoll,
}

impl IoPath {
    pub fn name(self) -> &'static str {
        match self {
            IoPath::Uring => "uring",
            IoPath::Epoll => "epoll",
        }
    }
}

/// The path a run takes and why, in words (the result's `io`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoChoice {
    pub path: IoPath,
    pub reason: String,
}

/// What this kernel's io_uring offers the engine (probed once per process).
#[derive(Clone, Debug)]
pub(crate) struct Kernel {
    /// Why the path cannot be taken (None: it can).
    pub unusable: Option<String>,
    /// TCP_NODELAY can be set on a socket made by the ring (`SOCKET_URING_OP_SETSOCKOPT`, 6.7).
    pub setsockopt: bool,
}

/// The path `spec` takes: `Io::Epoll` always epoll; `Io::Uring` io_uring or an error naming what
/// stands in the way; `Io::Auto` io_uring when nothing does, else epoll, saying why.
pub fn choose(spec: &Spec) -> Result<IoChoice, String> {
    let epoll = |reason: String| Ok(IoChoice { path: IoPath::Epoll, reason });
    if spec.io == Io::Epoll {
        return epoll("asked for".into());
    }
    let asked = spec.io == Io::Uring;
    let stands = needs_epoll(spec).map(str::to_string).or_else(|| kernel().unusable.clone());
    match stands {
        Some(why) if asked => Err(format!("io_uring: {why}")),
        Some(why) => epoll(format!("auto: {why}")),
        None if asked => Ok(IoChoice { path: IoPath::Uring, reason: "asked for".into() }),
        None => Ok(IoChoice { path: IoPath::Uring, reason: format!("auto: the kernel ({}) allows it", release()) }),
    }
}

/// What of the run only the epoll path does.
fn needs_epoll(spec: &Spec) -> Option<&'static str> {
    if spec.targets.iter().any(|t| t.tls_name.is_some()) || spec.tls.is_some() {
        Some("HTTPS runs on the epoll path only")
    } else if spec.scenario.is_some() {
        Some("logged-in users (a scenario) run on the epoll path only")
    } else if spec.throttle_bps.is_some() {
        Some("a throttled receive runs on the epoll path only")
    } else {
        None
    }
}

/// The kernel's release (`uname -r`).
fn release() -> String {
    // SAFETY: uname fills the zeroed struct we own.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".into();
    }
    let bytes: Vec<u8> = u.release.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

pub(crate) fn kernel() -> &'static Kernel {
    static KERNEL: OnceLock<Kernel> = OnceLock::new();
    KERNEL.get_or_init(probe)
}

/// Builds a ring as the engine threads do and asks it for every operation they use.
fn probe() -> Kernel {
    let unusable = |why: String| Kernel { unusable: Some(why), setsockopt: false };
    let ring = match new_ring(8) {
        Ok(r) => r,
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => return unusable("the kernel has no io_uring".into()),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            return unusable("io_uring is not permitted here (kernel.io_uring_disabled, or a seccomp filter)".into())
        }
        Err(e) => return unusable(format!("io_uring cannot be set up: {e} (kernel {} ; 6.1 or later is needed)", release())),
    };
    let mut probe = io_uring::Probe::new();
    if let Err(e) = ring.submitter().register_probe(&mut probe) {
        return unusable(format!("io_uring cannot be probed: {e}"));
    }
    let needed = [
        (opcode::Socket::CODE, "socket"),
        (opcode::Connect::CODE, "connect"),
        (opcode::Send::CODE, "send"),
        (opcode::RecvMulti::CODE, "recv"),
        (opcode::Close::CODE, "close"),
        (opcode::AsyncCancel::CODE, "cancel"),
    ];
    if let Some((_, name)) = needed.iter().find(|(code, _)| !probe.is_supported(*code)) {
        return unusable(format!("the kernel's io_uring has no {name} operation (kernel {})", release()));
    }
    if let Err(e) = ring.submitter().register_files_sparse(4) {
        return unusable(format!("io_uring cannot register files: {e}"));
    }
    // multishot receive into a provided-buffer ring (6.0); a ring of 2 one-byte buffers, freed
    // after the ring (as every BufRing)
    let bufs = BufRing::new(&ring, 2, 1);
    drop(ring);
    if let Err(e) = bufs {
        return unusable(format!("io_uring cannot register a buffer ring: {e} (kernel {} ; 6.1 or later is needed)", release()));
    }
    Kernel { unusable: None, setsockopt: probe.is_supported(opcode::SetSockOpt::CODE) && release_at_least(6, 7) }
}

fn release_at_least(major: u32, minor: u32) -> bool {
    let r = release();
    let mut parts = r.split(|c: char| !c.is_ascii_digit()).filter_map(|p| p.parse::<u32>().ok());
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (major, minor)
}

/// A ring as an engine thread uses it: one thread submits and reaps (single issuer), and the
/// kernel's completion work runs when that thread waits (deferred task run), not as interrupts.
pub(crate) fn new_ring(entries: u32) -> std::io::Result<IoUring> {
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_submit_all()
        .setup_cqsize(entries * 8)
        .build(entries)
}

/// The buffer group id of every thread's buffer ring (each thread has its own io_uring).
pub(crate) const GROUP: u16 = 0;

/// A provided-buffer ring: `count` buffers of `size` bytes the kernel picks from for each
/// multishot receive; a buffer goes back with `give_back` once its bytes are read, and the kernel
/// sees the given-back ones at `publish`.
pub(crate) struct BufRing {
    entries: *mut BufRingEntry,
    entries_layout: Layout,
    data: *mut u8,
    data_layout: Layout,
    count: u16,
    size: usize,
    tail: u16,
}

impl BufRing {
    /// Registers the ring with `ring` (which must be dropped first: the kernel writes into these
    /// buffers until then) with every buffer given to the kernel.
    pub fn new(ring: &IoUring, count: u16, size: usize) -> std::io::Result<BufRing> {
        assert!(count.is_power_of_two() && size > 0);
        let entries_layout = Layout::from_size_align(count as usize * std::mem::size_of::<BufRingEntry>(), 4096)
            .map_err(std::io::Error::other)?;
        let data_layout = Layout::from_size_align(count as usize * size, 64).map_err(std::io::Error::other)?;
        // SAFETY: both layouts have a non-zero size.
        let entries = unsafe { alloc_zeroed(entries_layout) } as *mut BufRingEntry;
        let data = unsafe { alloc_zeroed(data_layout) };
        if entries.is_null() || data.is_null() {
            return Err(std::io::Error::from(std::io::ErrorKind::OutOfMemory));
        }
        let mut b = BufRing { entries, entries_layout, data, data_layout, count, size, tail: 0 };
        // SAFETY: the entries stay allocated until `b` drops, after the ring (the caller's promise).
        unsafe { ring.submitter().register_buf_ring_with_flags(entries as u64, count, GROUP, 0)? };
        for bid in 0..count {
            b.give_back(bid);
        }
        b.publish();
        Ok(b)
    }

    /// The bytes the kernel put in buffer `bid`.
    pub fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        assert!((bid as usize) < self.count as usize && len <= self.size);
        // SAFETY: in bounds (checked), and the kernel does not write a buffer we have not given back.
        unsafe { std::slice::from_raw_parts(self.data.add(bid as usize * self.size), len) }
    }

    /// Puts buffer `bid` back at the ring's tail (seen by the kernel at `publish`).
    pub fn give_back(&mut self, bid: u16) {
        let slot = (self.tail & (self.count - 1)) as usize;
        // SAFETY: slot < count; the kernel reads entries only up to the published tail.
        let entry = unsafe { &mut *self.entries.add(slot) };
        entry.set_addr(self.data as u64 + bid as u64 * self.size as u64);
        entry.set_len(self.size as u32);
        entry.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes the given-back buffers the kernel's.
    pub fn publish(&self) {
        // SAFETY: the tail field of the first entry (the ring's header), shared with the kernel.
        let tail = unsafe { &*(BufRingEntry::tail(self.entries) as *const AtomicU16) };
        tail.store(self.tail, Ordering::Release);
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with these layouts.
        unsafe {
            dealloc(self.entries as *mut u8, self.entries_layout);
            dealloc(self.data, self.data_layout);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Addr, Target};

    fn spec(io: Io) -> Spec {
        let t = Target {
            addr: Addr::Tcp(vec!["127.0.0.1:1".parse().unwrap()]),
            request: b"GET / HTTP/1.1\r\n\r\n".to_vec(),
            head: false,
            weight: 1,
            tls_name: None,
        };
        let mut s = Spec::new(vec![t]);
        s.io = io;
        s
    }

    #[test]
    fn epoll_is_taken_when_asked_and_auto_says_why() {
        assert_eq!(choose(&spec(Io::Epoll)).unwrap(), IoChoice { path: IoPath::Epoll, reason: "asked for".into() });
        let auto = choose(&spec(Io::Auto)).unwrap();
        assert!(auto.reason.starts_with("auto: "), "{auto:?}");
        let mut throttled = spec(Io::Auto);
        throttled.throttle_bps = Some(1000);
        assert_eq!(choose(&throttled).unwrap().path, IoPath::Epoll);
        throttled.io = Io::Uring;
        assert!(choose(&throttled).unwrap_err().contains("throttled"));
    }

    #[test]
    fn this_kernel_takes_the_uring_path() {
        // the machines pounder is built and tested on run Linux 6.1 or later with io_uring on
        assert_eq!(kernel().unusable, None);
        assert_eq!(choose(&spec(Io::Uring)).unwrap().path, IoPath::Uring);
    }
}
