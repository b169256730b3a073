//! The memory a call may still allocate, so that a search whose answer cannot fit is refused
//! before it spends minutes finding it.
//!
//! On Linux, the least of: the address space left under the process's limit (`RLIMIT_AS`, as
//! `prlimit --as` or `ulimit -v` set it, less what the process has mapped), the memory the
//! kernel says is available plus free swap, and what the process's control group (v2) allows
//! beyond what it uses. Elsewhere unknown (`None`): a failed allocation is then the only bound,
//! still a clean error.

use std::fs;

/// Bytes a call may still allocate, if known: three quarters of the least figure, the rest left
/// to the process's other allocations and to the machine's other processes, whose memory grows
/// while the call runs (counted at its start).
pub fn available() -> Option<u64> {
    let figures = [address_space_left(), system_available(), cgroup_left()];
    figures.into_iter().flatten().min().map(|m| m / 4 * 3)
}

/// A `Key: N kB` line's bytes in a `/proc` file's text.
fn kilobytes(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let number = line[key.len()..].split_whitespace().next()?;
    number.parse::<u64>().ok()?.checked_mul(1024)
}

/// The soft address-space limit (`Max address space` of `/proc/self/limits`) less the address
/// space already mapped (`VmSize`).
fn address_space_left() -> Option<u64> {
    let limits = fs::read_to_string("/proc/self/limits").ok()?;
    let limit = address_space_limit(&limits)?;
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let used = kilobytes(&status, "VmSize:")?;
    Some(limit.saturating_sub(used))
}

/// The soft limit of the `Max address space` line: None when unlimited.
fn address_space_limit(limits: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let soft = line["Max address space".len()..]
        .split_whitespace()
        .next()?;
    soft.parse().ok()
}

/// `MemAvailable` plus `SwapFree` of `/proc/meminfo`.
fn system_available() -> Option<u64> {
    let info = fs::read_to_string("/proc/meminfo").ok()?;
    let swap = kilobytes(&info, "SwapFree:").unwrap_or(0);
    Some(kilobytes(&info, "MemAvailable:")?.saturating_add(swap))
}

/// `memory.max` less `memory.current` of the process's cgroup v2: None without a limit.
fn cgroup_left() -> Option<u64> {
    let cgroup = fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
    let folder = format!("/sys/fs/cgroup{}", path.trim_end());
    let read = |name: &str| -> Option<u64> {
        fs::read_to_string(format!("{folder}/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some(read("memory.max")?.saturating_sub(read("memory.current")?))
}

/// Bytes as a person reads them: 3.4 GB, 512 MB, 700 bytes.
pub fn readable(bytes: u64) -> String {
    match bytes {
        b if b >= 1_000_000_000 => format!("{:.1} GB", b as f64 / 1e9),
        b if b >= 1_000_000 => format!("{:.0} MB", b as f64 / 1e6),
        b => format!("{b} bytes"),
    }
}

/// The huge page the kernel may back memory with (x86-64, AArch64 with 4 KiB pages: 2 MiB).
const HUGE_PAGE: usize = 2 << 20;

/// An empty vector with room for `n` elements, whose whole huge pages the kernel is asked to back
/// with huge pages (Linux `MADV_HUGEPAGE`, heeded when transparent huge pages are on `always` or
/// `madvise`): a large buffer written once from end to end (the sketches of a batch gathered
/// into one array) then takes one page fault every 2 MiB instead of one every 4 KiB (64 MB:
/// 7 against 30 ms). Only advice: the contents, and the memory used once it is all written,
/// are the same.
pub fn vec_in_huge_pages<T>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    advise_vec(&mut v);
    v
}

/// Room in `v` for `additional` more elements, as [`Vec::try_reserve`] makes it, but a vector that
/// must move is moved into a buffer backed by huge pages ([`vec_in_huge_pages`]): a large buffer
/// that grows batch by batch (the sketches of a first pass) then takes one page fault every
/// 2 MiB of what is written to it. (Advice on a buffer the system would remap as it grows
/// splits its mapping, and the remapping fails: the buffer is then copied all the same, into
/// pages taken 4 KiB at a time.)
pub fn reserve_in_huge_pages<T: Copy>(
    v: &mut Vec<T>,
    additional: usize,
) -> Result<(), std::collections::TryReserveError> {
    if v.capacity() - v.len() >= additional {
        return Ok(());
    }
    let wanted = v
        .len()
        .saturating_add(additional)
        .max(v.capacity().saturating_mul(2));
    let mut moved: Vec<T> = Vec::new();
    moved.try_reserve_exact(wanted)?;
    advise_vec(&mut moved);
    moved.extend_from_slice(v);
    *v = moved;
    Ok(())
}

/// Asks for huge pages for the whole huge pages of `v`'s buffer, when it spans at least two.
fn advise_vec<T>(v: &mut Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes >= 2 * HUGE_PAGE {
        let start = v.as_mut_ptr() as usize;
        let first = start.next_multiple_of(HUGE_PAGE);
        let end = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
        if end > first {
            advise_huge_pages(first, end - first);
        }
    }
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(start: usize, len: usize) {
    // SAFETY: [start, start + len) lies inside an allocation of this process; the advice
    // changes how its pages are backed, never what they hold, and a refusal is harmless.
    unsafe {
        libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_start: usize, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Room for what is asked, empty, and it holds what is written (small vectors are not
    /// advised; large ones are, whatever their alignment).
    #[test]
    fn vectors_in_huge_pages_hold_what_is_written() {
        for n in [0usize, 1, 1000, HUGE_PAGE / 8 * 2, HUGE_PAGE / 8 * 5 + 3] {
            let mut v: Vec<u64> = vec_in_huge_pages(n);
            assert!(v.is_empty() && v.capacity() >= n);
            v.extend((0..n as u64).map(|i| i * 3));
            assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 * 3));
        }
    }

    /// Reserving keeps what the vector holds, gives at least the room asked for, and moves a
    /// full vector into one at least twice its size (so that growing batch by batch copies
    /// each element a bounded number of times).
    #[test]
    fn reserving_in_huge_pages_keeps_the_contents_and_doubles() {
        let mut v: Vec<u64> = Vec::new();
        let mut want = Vec::new();
        for batch in 0..40u64 {
            let n = (batch as usize * 7919) % (HUGE_PAGE / 4) + 1;
            let before = v.capacity();
            reserve_in_huge_pages(&mut v, n).unwrap();
            assert!(v.capacity() - v.len() >= n);
            if before - want.len() < n {
                assert!(v.capacity() >= 2 * before);
            } else {
                assert_eq!(v.capacity(), before);
            }
            let more: Vec<u64> = (0..n as u64).map(|i| i * 31 + batch).collect();
            v.extend_from_slice(&more);
            want.extend_from_slice(&more);
            assert_eq!(v, want);
        }
    }

    #[test]
    fn proc_lines_are_read_as_bytes() {
        let status = "Name:\tpython\nVmPeak:\t  900 kB\nVmSize:\t  812 kB\n";
        assert_eq!(kilobytes(status, "VmSize:"), Some(812 * 1024));
        assert_eq!(kilobytes(status, "VmRSS:"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max address space         4000000000           unlimited            bytes     \n";
        assert_eq!(address_space_limit(limits), Some(4_000_000_000));
        let unlimited =
            "Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(address_space_limit(unlimited), None);
    }

    #[test]
    fn this_process_has_some_memory_left() {
        // Linux always has /proc/meminfo; elsewhere the figure is unknown.
        if cfg!(target_os = "linux") {
            let left = available().unwrap();
            assert!(left > 1 << 20, "{left}");
        }
        assert_eq!(readable(3_400_000_000), "3.4 GB");
        assert_eq!(readable(512_000_000), "512 MB");
        assert_eq!(readable(700), "700 bytes");
    }
}
