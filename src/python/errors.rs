//! The one mapping from core errors to Python exceptions.

use std::path::Path;

use pyo3::create_exception;
use pyo3::exceptions::{
    PyException, PyIsADirectoryError, PyKeyError, PyKeyboardInterrupt, PyMemoryError, PyOSError,
    PyValueError,
};
use pyo3::prelude::*;

use crate::error::Error;

create_exception!(
    neardup,
    NeardupError,
    PyException,
    "Base class of neardup's own errors."
);
create_exception!(
    neardup,
    IndexFormatError,
    NeardupError,
    "A file that is not a valid neardup index: truncated, corrupted, foreign or of a newer version."
);
create_exception!(
    neardup,
    IndexChangedError,
    IndexFormatError,
    "The file under a memory-mapped index was changed in place (truncated, rewritten or \
     overwritten) since it was loaded: the index refuses to answer from it. Load it again."
);
create_exception!(
    neardup,
    TooManyPairsError,
    NeardupError,
    "More pairs than the limit a call was given (max_pairs, --max-pairs): raised before they \
     are allocated. `count` is how many there are, `limit` the limit."
);

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        match err {
            Error::InvalidArgument(message) => PyValueError::new_err(message),
            Error::Format { .. } => IndexFormatError::new_err(err.to_string()),
            Error::Io(io) => io.into(),
            Error::NotAFile(_) => IndexFormatError::new_err(err.to_string()),
            Error::TooManyPairs {
                count,
                at_least,
                limit,
                ..
            } => {
                let pyerr = TooManyPairsError::new_err(err.to_string());
                Python::attach(|py| {
                    let value = pyerr.value(py);
                    // Setting attributes on a fresh exception instance cannot fail.
                    let _ = value.setattr("count", count);
                    let _ = value.setattr("limit", limit);
                    let _ = value.setattr("at_least", at_least);
                });
                pyerr
            }
            Error::OutOfMemory(_) => PyMemoryError::new_err(err.to_string()),
            Error::OutOfMemoryAt { item, .. } => {
                // `item`: which line of a block, or text of a column, the memory was for.
                let pyerr = PyMemoryError::new_err(err.to_string());
                Python::attach(|py| {
                    let _ = pyerr.value(py).setattr("item", item);
                });
                pyerr
            }
            Error::UnknownId(_) => PyKeyError::new_err(err.to_string()),
            Error::Changed(_) => IndexChangedError::new_err(err.to_string()),
            Error::Interrupted => PyKeyboardInterrupt::new_err(()),
        }
    }
}

/// An error of reading or writing the file at `path`, naming it: an operating-system error is
/// raised as Python raises one, `OSError(errno, strerror, path)` (whose class follows errno:
/// FileNotFoundError, PermissionError...), never naming a temporary file; a folder is an
/// IsADirectoryError.
pub fn on_path(err: Error, path: &Path) -> PyErr {
    match err {
        Error::Io(io) => match io.raw_os_error() {
            Some(code) => {
                let text = io.to_string();
                let suffix = format!(" (os error {code})");
                let strerror = text.strip_suffix(&suffix).unwrap_or(&text).to_owned();
                PyOSError::new_err((code, strerror, path.as_os_str().to_os_string()))
            }
            None => std::io::Error::new(io.kind(), format!("{}: {io}", path.display())).into(),
        },
        // EISDIR (21 on Linux, macOS and Windows), so the class is IsADirectoryError.
        Error::NotAFile("a folder") => PyIsADirectoryError::new_err((
            21,
            "is a folder, not a neardup index file",
            path.as_os_str().to_os_string(),
        )),
        other => other.into(),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("NeardupError", py.get_type::<NeardupError>())?;
    m.add("IndexFormatError", py.get_type::<IndexFormatError>())?;
    m.add("TooManyPairsError", py.get_type::<TooManyPairsError>())?;
    m.add("IndexChangedError", py.get_type::<IndexChangedError>())?;
    Ok(())
}
