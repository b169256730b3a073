//! The one error type of the core.

use std::fmt;

/// Everything the core can report. The Python bindings map each variant to one exception.
#[derive(Debug)]
pub enum Error {
    /// An argument out of its range or of the wrong shape: the message names the argument,
    /// what was expected and what was found.
    InvalidArgument(String),
    /// A file that is not a valid neardup file: where the problem was found and what it is.
    Format { offset: u64, reason: String },
    /// An operating-system error while reading or writing a file.
    Io(std::io::Error),
    /// A path that names no regular file (a folder, FIFO or device) where a file was expected:
    /// what it names.
    NotAFile(&'static str),
    /// More pairs than a caller allows: how many there are, the limit, what they are and how
    /// to bound them. Raised before the pairs are allocated. With `at_least`, `count` is a lower
    /// bound: the search stopped counting soon after the limit, so that a refusal takes seconds.
    TooManyPairs {
        count: u64,
        at_least: bool,
        limit: u64,
        what: String,
        remedy: String,
    },
    /// An allocation whose size comes from the data failed: what it was for.
    OutOfMemory(String),
    /// [`Error::OutOfMemory`] while reading one item of a call (a line of a block, a text of a
    /// column, a document of a batch): its index there, and what the memory was for.
    OutOfMemoryAt { item: usize, what: String },
    /// An id that is not in the index (removing it): the id.
    UnknownId(i64),
    /// A memory-mapped index file changed in place since it was loaded: which and how.
    Changed(String),
    /// A long call stopped because the process was interrupted (Ctrl-C).
    Interrupted,
}

/// The core's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(message.into())
    }

    /// This error, met while reading item `item` of a call: [`Error::OutOfMemory`] becomes
    /// [`Error::OutOfMemoryAt`] naming it; any other error is left as it is.
    pub fn at(self, item: usize) -> Self {
        match self {
            Error::OutOfMemory(what) => Error::OutOfMemoryAt { item, what },
            other => other,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidArgument(message) => f.write_str(message),
            Error::Format { offset, reason } => write!(f, "{reason} (at byte {offset})"),
            Error::Io(err) => write!(f, "{err}"),
            Error::NotAFile(kind) => write!(f, "{kind}, not a neardup index file"),
            Error::TooManyPairs {
                count,
                at_least,
                limit,
                what,
                remedy,
            } => write!(
                f,
                "{}{} {what}, more than the limit of {}; {remedy}",
                if *at_least { "at least " } else { "" },
                thousands(*count),
                thousands(*limit)
            ),
            Error::OutOfMemory(what) | Error::OutOfMemoryAt { what, .. } => {
                write!(f, "out of memory: {what}")
            }
            Error::UnknownId(id) => write!(f, "id {id} is not in the index"),
            Error::Changed(message) => f.write_str(message),
            Error::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for Error {}

/// `n` with a comma between groups of three digits: 1,000,000.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (at, c) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An empty vector with room for exactly `len` elements, or [`Error::OutOfMemory`] naming
/// `what` and the bytes asked for: never an abort.
pub fn try_with_capacity<T>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| {
        let bytes = len.saturating_mul(std::mem::size_of::<T>());
        Error::OutOfMemory(format!("{len} {what} ({bytes} bytes)"))
    })?;
    Ok(v)
}

/// Makes room in `v` (emptied) for `len` elements, freeing its old buffer first when it is too
/// small: [`Error::OutOfMemory`] naming `what` and the bytes asked for ("a copy of a text of
/// 61,000,994 bytes"), never an abort.
pub fn try_room<T>(v: &mut Vec<T>, len: usize, what: &str) -> Result<()> {
    v.clear();
    if v.capacity() < len {
        // Grown as a push would (to at least twice its capacity), from an empty vector: a
        // long text's room is exact, and its old buffer is never held beside the new one.
        let grown = len.max(2 * v.capacity());
        *v = Vec::new();
        v.try_reserve_exact(grown).map_err(|_| {
            let bytes = len.saturating_mul(std::mem::size_of::<T>()) as u64;
            Error::OutOfMemory(format!("{what} of {} bytes", thousands(bytes)))
        })?;
    }
    Ok(())
}

/// Room in `buf` (emptied) for the copy of a long text ([`crate::text::features::RESERVE_MIN_BYTES`])
/// that [`crate::text::normal::fold`] makes of it (when it changes it): [`Error::OutOfMemory`]
/// when it cannot be had.
pub fn try_room_text(buf: &mut String, text: &str, fold: crate::text::normal::Fold) -> Result<()> {
    buf.clear();
    if text.len() >= crate::text::features::RESERVE_MIN_BYTES
        && fold.may_change(text)
        && buf.try_reserve(text.len()).is_err()
    {
        *buf = String::new();
        return Err(Error::OutOfMemory(format!(
            "a copy of a text of {} bytes",
            thousands(text.len() as u64)
        )));
    }
    Ok(())
}

/// Pushes onto `v`, growing it with `try_reserve`: a failed allocation is
/// [`Error::OutOfMemory`] naming `what`, never an abort.
pub fn try_push<T>(v: &mut Vec<T>, item: T, what: &str) -> Result<()> {
    if v.len() == v.capacity() {
        v.try_reserve(1)
            .map_err(|_| Error::OutOfMemory(format!("more than {} {what}", v.len())))?;
    }
    v.push(item);
    Ok(())
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        Error::Io(err)
    }
}
