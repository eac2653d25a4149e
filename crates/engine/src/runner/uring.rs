//! An engine thread on io_uring (placeholder while it is written).

use super::Worker;

/// Runs this thread's share on a ring; false when the ring cannot be set up (nothing was sent).
pub(super) fn drive(_w: &Worker) -> bool {
    false
}
