//! Stopping long calls early: a caller that sees Ctrl-C (the Python bindings) raises the flag,
//! and the core's long loops poll it between batches and return [`Error::Interrupted`].
//!
//! The flag is process-wide: a signal stops every call in progress, as it stops the process.
//! Polling is one relaxed atomic load, cheap enough to do per run of candidates.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{Error, Result};

/// Interrupts raised and not yet finished with: the flag is up while it is above zero.
static RAISED: AtomicUsize = AtomicUsize::new(0);

/// Whether an interrupt is pending.
#[inline]
pub fn requested() -> bool {
    RAISED.load(Ordering::Relaxed) > 0
}

/// [`Error::Interrupted`] if an interrupt is pending.
#[inline]
pub fn check() -> Result<()> {
    if requested() {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}

/// Raises the flag until the returned guard is dropped (once the interrupted call has ended).
pub fn raise() -> Raised {
    RAISED.fetch_add(1, Ordering::Relaxed);
    Raised(())
}

/// A raised interrupt; lowered when dropped.
pub struct Raised(());

impl Drop for Raised {
    fn drop(&mut self) {
        RAISED.fetch_sub(1, Ordering::Relaxed);
    }
}
