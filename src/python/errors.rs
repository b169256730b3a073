//! The one mapping from core errors to Python exceptions.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

use crate::error::Error;

create_exception!(neardup, NeardupError, PyException, "Base class of neardup's own errors.");
create_exception!(
    neardup,
    IndexFormatError,
    NeardupError,
    "A file that is not a valid neardup index: truncated, corrupted, foreign or of a newer version."
);

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        match err {
            Error::InvalidArgument(message) => PyValueError::new_err(message),
            Error::Format { .. } => IndexFormatError::new_err(err.to_string()),
            Error::Io(io) => io.into(),
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("NeardupError", py.get_type::<NeardupError>())?;
    m.add("IndexFormatError", py.get_type::<IndexFormatError>())?;
    Ok(())
}
