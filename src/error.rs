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
}

/// The core's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(message.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidArgument(message) => f.write_str(message),
            Error::Format { offset, reason } => write!(f, "{reason} (at byte {offset})"),
            Error::Io(err) => write!(f, "{err}"),
            Error::NotAFile(kind) => write!(f, "{kind}, not a neardup index file"),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        Error::Io(err)
    }
}
