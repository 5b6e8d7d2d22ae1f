"""The one check every path a client sends passes before anything looks at the disk.

A path is refused with ``bad_request`` when it holds a NUL byte (no system call can
take it) or when its UTF-8 form is longer than ``PATH_MAX``. Requests and tool arguments
name their path fields in ``PATH_FIELDS``; both decoders run ``check_paths`` on them.
"""

from __future__ import annotations

from typing import Any

from nbstage.protocol.errors import ErrorCode, NbstageError

PATH_MAX = 4096
"""Linux's limit in bytes, the terminating NUL included."""
PATH_FIELDS = ("path", "working_dir")


def path_problem(value: str) -> str | None:
    """Why ``value`` can never name a file, or None."""
    if "\0" in value:
        return "it contains a NUL byte"
    try:
        size = len(value.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        return "it is not valid Unicode"
    if size >= PATH_MAX:
        return f"it is {size:,} bytes long, over the {PATH_MAX - 1:,}-byte limit (PATH_MAX)"
    return None


def check_paths(decoded: Any) -> Any:
    """``decoded`` itself, after checking each of its ``PATH_FIELDS`` that holds a string."""
    for name in PATH_FIELDS:
        value = getattr(decoded, name, None)
        if isinstance(value, str):
            problem = path_problem(value)
            if problem is not None:
                raise NbstageError(
                    ErrorCode.BAD_REQUEST, f"'{name}' is not a usable path: {problem}."
                )
    return decoded
