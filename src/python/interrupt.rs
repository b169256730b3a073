//! Long core calls that Ctrl-C stops promptly.
//!
//! [`detach`] runs the call without the GIL on a helper thread while the calling thread waits,
//! taking the GIL back every [`POLL`] to run Python's signal handlers. When one raises (Ctrl-C's
//! KeyboardInterrupt, or the exception of the command's SIGTERM handler) the core's flag is
//! raised, the call stops at its next poll, and the handler's exception is raised in its place.

use std::sync::mpsc;
use std::time::Duration;

use pyo3::prelude::*;

use crate::runtime::interrupt;

/// How often the waiting thread looks for signals.
const POLL: Duration = Duration::from_millis(50);

/// `f()` with the GIL released, stopped by a signal whose handler raises.
pub fn detach<R: Send>(py: Python<'_>, f: impl FnOnce() -> R + Send) -> PyResult<R> {
    py.detach(|| {
        std::thread::scope(|scope| {
            let (done, finished) = mpsc::channel::<()>();
            let worker = std::thread::Builder::new()
                .name("neardup-call".into())
                .spawn_scoped(scope, move || {
                    let out = f();
                    let _ = done.send(());
                    out
                })
                .map_err(|e| {
                    pyo3::exceptions::PyOSError::new_err(format!("cannot start a thread: {e}"))
                })?;
            let mut raised = None;
            loop {
                match finished.recv_timeout(POLL) {
                    Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if let Err(err) = Python::attach(|py| py.check_signals()) {
                            // Keep the flag up until the call has stopped.
                            let _flag = interrupt::raise();
                            let _ = finished.recv();
                            raised = Some(err);
                            break;
                        }
                    }
                }
            }
            let out = match worker.join() {
                Ok(out) => out,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            match raised {
                Some(err) => Err(err),
                None => Ok(out),
            }
        })
    })
}
