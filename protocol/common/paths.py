"""The one check every path a client sends passes before anything looks at the disk.

A path is refused with ``bad_request`` when it holds a NUL byte (no system call can
take it) or when its UTF-8 form is longer than ``PATH_MAX``. Requests and tool arguments
name their path fields in ``PATH_FIELDS``; both decoders run ``check_paths`` on them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from nbstage.protocol.common.errors import ErrorCode, NbstageError

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


def check_fields(
    decoded: Any, names: Iterable[str], problem_of: Callable[[str], str | None], what: str
) -> Any:
    """``decoded`` itself, after ``problem_of`` found nothing wrong with each of its fields
    ``names`` that holds a string; else a bad request naming the field and the problem."""
    for name in names:
        value = getattr(decoded, name, None)
        if isinstance(value, str):
            problem = problem_of(value)
            if problem is not None:
                raise NbstageError(
                    ErrorCode.BAD_REQUEST, f"'{name}' is not a usable {what}: {problem}."
                )
    return decoded


def check_paths(decoded: Any) -> Any:
    """``decoded`` itself, after checking each of its ``PATH_FIELDS`` that holds a string."""
    return check_fields(decoded, PATH_FIELDS, path_problem, "path")
