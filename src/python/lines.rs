//! Bindings of `neardup.lines`: the lines of a block of bytes, counted at memory speed.

use pyo3::prelude::*;

/// Blocks this long or longer are counted with the GIL released (a 4 MiB read takes a fraction
/// of a millisecond; a short one is not worth the handover).
const DETACHED: usize = 1 << 16;

/// The newline bytes (`\n`) of `data`. CPython's `bytes.count` goes byte by byte at about a
/// third of this loop's speed, which the compiler turns into vector compares.
#[pyfunction]
fn newlines(py: Python<'_>, data: &[u8]) -> usize {
    // Byte-wide sums of at most 255 matches, so the compiler keeps 32 or 64 lanes a compare.
    let count = |d: &[u8]| {
        d.chunks(255)
            .map(|c| usize::from(c.iter().map(|&b| u8::from(b == b'\n')).sum::<u8>()))
            .sum::<usize>()
    };
    if data.len() >= DETACHED {
        py.detach(|| count(data))
    } else {
        count(data)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(newlines, m)?)?;
    Ok(())
}
