//! Mapped index files that another process truncates or rewrites in place: a fault, not a crash.
//!
//! A memory map shows whatever its file holds now. neardup only ever replaces an index by renaming
//! a new file over it, but a user's `cp other.ndx index.ndx` or `truncate` writes into the file
//! that a running search has mapped: its pages past the new end are gone, and the next read of one
//! raises SIGBUS, which kills the process. While a map is registered here, a SIGBUS at an address
//! inside it is taken by this module instead: the whole map is replaced, in place, by pages of
//! zeros (so the read that faulted, and every later one, reads zeros), and the map is marked
//! faulted. The index checks its file after every use ([`crate::store::index_file::Source`]) and
//! refuses the answer, whatever the zeros made of it, with [`crate::error::Error::Changed`]. A
//! SIGBUS anywhere else goes to the handler that was there before (Python's faulthandler, or the
//! default action).
//!
//! The handler is installed when a map is registered, again if another handler took its place
//! since. It only reads atomics and calls `mmap`, a system call.

#[cfg(unix)]
mod unix {
    use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
    use std::sync::Mutex;

    /// Maps registered at once at most (more are mapped unguarded).
    const SLOTS: usize = 256;

    struct Slot {
        used: AtomicBool,
        start: AtomicUsize,
        len: AtomicUsize,
        faulted: AtomicBool,
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: Slot = Slot {
        used: AtomicBool::new(false),
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        faulted: AtomicBool::new(false),
    };
    static SLOTS_IN_USE: [Slot; SLOTS] = [FREE; SLOTS];

    /// The action SIGBUS had before this module's, for faults outside the maps.
    static PREVIOUS: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());
    static INSTALLING: Mutex<()> = Mutex::new(());

    extern "C" fn on_bus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel hands a valid siginfo_t to an SA_SIGINFO handler.
        let addr = unsafe { (*info).si_addr() } as usize;
        for slot in &SLOTS_IN_USE {
            let start = slot.start.load(Ordering::Acquire);
            let len = slot.len.load(Ordering::Acquire);
            if start != 0 && addr >= start && addr - start < len {
                // SAFETY: [start, start + len) is a read-only map this module registered and
                // that is still alive (unregistered before it is unmapped); replacing its pages
                // with anonymous zeros keeps the range mapped and readable.
                let got = unsafe {
                    libc::mmap(
                        start as *mut libc::c_void,
                        len,
                        libc::PROT_READ,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                        -1,
                        0,
                    )
                };
                if got != libc::MAP_FAILED {
                    slot.faulted.store(true, Ordering::Release);
                    return;
                }
            }
        }
        let previous = PREVIOUS.load(Ordering::Acquire);
        // SAFETY: `previous` is null or a leaked sigaction that stays valid for good.
        unsafe {
            if previous.is_null() || (*previous).sa_sigaction == libc::SIG_DFL {
                // The default action: restored, and the faulting read runs again and kills.
                libc::signal(sig, libc::SIG_DFL);
            } else if (*previous).sa_sigaction == libc::SIG_IGN {
                libc::signal(sig, libc::SIG_DFL);
            } else if (*previous).sa_flags & libc::SA_SIGINFO != 0 {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute((*previous).sa_sigaction);
                f(sig, info, ctx);
            } else {
                let f: extern "C" fn(libc::c_int) = std::mem::transmute((*previous).sa_sigaction);
                f(sig);
            }
        }
    }

    /// Makes this module's handler SIGBUS's, keeping the one it replaces.
    fn install() {
        let _one = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: sigaction with valid pointers; the handler is async-signal-safe.
        unsafe {
            let mut now: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut now) != 0 {
                return;
            }
            if now.sa_sigaction == on_bus as *const () as usize {
                return;
            }
            let mut ours: libc::sigaction = std::mem::zeroed();
            ours.sa_sigaction = on_bus as *const () as usize;
            ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut ours.sa_mask);
            let mut before: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &ours, &mut before) == 0 {
                PREVIOUS.store(Box::into_raw(Box::new(before)), Ordering::Release);
            }
        }
    }

    pub fn register(start: usize, len: usize) -> Option<usize> {
        if start == 0 || len == 0 {
            return None;
        }
        install();
        let i = SLOTS_IN_USE.iter().position(|s| {
            s.used
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })?;
        let slot = &SLOTS_IN_USE[i];
        slot.faulted.store(false, Ordering::Relaxed);
        slot.len.store(len, Ordering::Release);
        slot.start.store(start, Ordering::Release);
        Some(i)
    }

    pub fn unregister(i: usize) {
        let slot = &SLOTS_IN_USE[i];
        slot.start.store(0, Ordering::Release);
        slot.len.store(0, Ordering::Release);
        slot.used.store(false, Ordering::Release);
    }

    pub fn faulted(i: usize) -> bool {
        SLOTS_IN_USE[i].faulted.load(Ordering::Acquire)
    }
}

/// A registered map: its faults are taken here while this lives (unregistered when dropped).
pub struct Guard(Option<usize>);

impl Guard {
    /// Registers the map of `len` bytes at `start` (unguarded when every slot is taken, or off
    /// Unix).
    pub fn new(start: *const u8, len: usize) -> Self {
        #[cfg(unix)]
        {
            Guard(unix::register(start as usize, len))
        }
        #[cfg(not(unix))]
        {
            let _ = (start, len);
            Guard(None)
        }
    }

    /// Whether a read of the map faulted since it was registered (its file was truncated or
    /// rewritten in place): what was read since then is zeros.
    pub fn faulted(&self) -> bool {
        #[cfg(unix)]
        {
            self.0.is_some_and(unix::faulted)
        }
        #[cfg(not(unix))]
        {
            false
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(i) = self.0 {
            unix::unregister(i);
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_map_whose_file_is_truncated_reads_zeros_and_says_so() {
        let dir = std::env::temp_dir().join(format!("neardup-guard-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&[7u8; 3 * 4096]).unwrap();
        f.sync_all().unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a read-only map of a file this test owns.
        let map = unsafe { memmap2::Mmap::map(&file).unwrap() };
        let guard = Guard::new(map.as_ptr(), map.len());
        assert_eq!(map[5000], 7);
        assert!(!guard.faulted());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
        // Without the guard this read is a SIGBUS.
        let read = std::hint::black_box(&map[..]);
        assert_eq!(read[2 * 4096 + 10], 0);
        assert!(guard.faulted());
        drop(guard);
        drop(map);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
