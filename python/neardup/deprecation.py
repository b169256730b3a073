"""Old spellings of renamed arguments and attributes, accepted for one release with a
DeprecationWarning."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def renamed(**old_to_new: str) -> Callable[[F], F]:
    """Lets a function take each keyword argument ``old`` under its new name ``new`` too, with a
    DeprecationWarning; both at once is a TypeError."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(
                            f"{function.__name__}() got {old}= and {new}=: {old} is the old name "
                            f"of {new}, give {new} alone"
                        )
                    warnings.warn(
                        f"{function.__name__}({old}=...) is deprecated and will be removed in the "
                        f"next release: use {new}=",
                        DeprecationWarning,
                        stacklevel=2,
                    )
                    kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def renamed_attribute(old: str, new: str) -> Any:
    """A read-only property under the old name ``old`` of the attribute ``new``: its value, with a
    DeprecationWarning."""

    def get(self: Any) -> Any:
        warnings.warn(
            f"{type(self).__name__}.{old} is deprecated and will be removed in the next release: "
            f"use .{new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(self, new)

    return property(get, doc=f"The old name of ``{new}`` (deprecated).")
