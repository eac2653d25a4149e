//! The one map from an I/O error to the result's error category, for both I/O paths: tokio's
//! `io::Error`s on epoll, the ring's negative results (errnos) through `io::Error::from_raw_os_error`,
//! so that a category cannot mean one thing on one path and another on the other.

use std::io;

use crate::stats::ErrorKind;

/// The category of a failed I/O operation; `connecting`: it was the connect (only a connect can be
/// refused).
pub fn io_kind(e: &io::Error, connecting: bool) -> ErrorKind {
    use io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused | K::NotFound | K::HostUnreachable | K::NetworkUnreachable if connecting => {
            ErrorKind::Refused
        }
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof | K::NotConnected => {
            ErrorKind::Reset
        }
        K::TimedOut => ErrorKind::Timeout,
        // a TLS error after the handshake (rustls's are InvalidData): an alert, a bad record
        // (the handshake's own failures are categorised by Tls::handshake)
        _ => crate::tls::after_handshake_kind(e).unwrap_or(ErrorKind::Other),
    }
}

/// The category of an errno (an io_uring operation's negative result), as `io_kind` says.
pub fn errno_kind(errno: i32, connecting: bool) -> ErrorKind {
    io_kind(&io::Error::from_raw_os_error(errno), connecting)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_connect_is_refused() {
        for errno in [libc::ECONNREFUSED, libc::ENOENT, libc::EHOSTUNREACH, libc::ENETUNREACH] {
            assert_eq!(errno_kind(errno, true), ErrorKind::Refused, "errno {errno}");
            assert_eq!(errno_kind(errno, false), ErrorKind::Other, "errno {errno}");
        }
    }

    #[test]
    fn resets_timeouts_and_the_rest() {
        for errno in [libc::ECONNRESET, libc::ECONNABORTED, libc::EPIPE, libc::ENOTCONN] {
            assert_eq!(errno_kind(errno, false), ErrorKind::Reset, "errno {errno}");
            assert_eq!(errno_kind(errno, true), ErrorKind::Reset, "errno {errno}");
        }
        assert_eq!(errno_kind(libc::ETIMEDOUT, false), ErrorKind::Timeout);
        for errno in [libc::EINVAL, libc::ENOMEM, libc::EBADF, libc::EMFILE] {
            assert_eq!(errno_kind(errno, true), ErrorKind::Other, "errno {errno}");
        }
    }

    #[test]
    fn both_paths_read_an_error_alike() {
        // epoll's end of stream inside a read is a reset; a plain error the same as its errno
        assert_eq!(io_kind(&io::Error::from(io::ErrorKind::UnexpectedEof), false), ErrorKind::Reset);
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(io_kind(&refused, true), errno_kind(libc::ECONNREFUSED, true));
        assert_eq!(io_kind(&io::Error::other("no"), false), ErrorKind::Other);
    }
}
