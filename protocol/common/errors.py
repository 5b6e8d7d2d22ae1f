"""Error codes shared by the daemon wire, the actors and the MCP tools.

A failure travels as a code from :class:`ErrorCode` plus a sentence for people.
Codes are stable strings so programs can branch on them; the sentence says what
to do next.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    BAD_FRAME = "bad_frame"
    BAD_REQUEST = "bad_request"
    UNKNOWN_REQUEST = "unknown_request"
    NOTEBOOK_UNAVAILABLE = "notebook_unavailable"
    NOT_FOUND = "not_found"
    PATH_ALREADY_OPEN = "path_already_open"
    PATH_EXISTS = "path_exists"
    """A save would replace a file that is not this notebook's own."""
    CELL_NOT_FOUND = "cell_not_found"
    BAD_INDEX = "bad_index"
    BAD_CELL_TYPE = "bad_cell_type"
    NO_MATCH = "no_match"
    AMBIGUOUS_MATCH = "ambiguous_match"
    BAD_PATTERN = "bad_pattern"
    TOO_MANY_ROOMS = "too_many_rooms"
    NOT_A_PEER = "not_a_peer"
    SAVE_FAILED = "save_failed"
    NO_PATH = "no_path"
    UNKNOWN_RUNTIME = "unknown_runtime"
    NO_KERNEL = "no_kernel"
    KERNEL_DIED = "kernel_died"
    EXECUTION_NOT_FOUND = "execution_not_found"
    EXECUTION_LOST = "execution_lost"
    """The execution was queued or running when its daemon stopped or was killed."""
    SHUTTING_DOWN = "shutting_down"
    DAEMON_UNREACHABLE = "daemon_unreachable"
    """The session side has no link to the daemon; it is reconnecting."""
    RESULT_TOO_LARGE = "result_too_large"
    """The reply would exceed the wire's frame limit; ask for less (``start``/``count``)."""
    BAD_REQUIREMENT = "bad_requirement"
    """A dependency is not a PEP 508 requirement string."""
    DEPENDENCIES_CHANGED = "dependencies_changed"
    """manage_dependencies' fingerprint no longer matches the notebook's dependencies."""
    BUILD_FAILED = "build_failed"
    """uv could not build or install the environment; the kernel was left as it was."""
    BAD_REPLY = "bad_reply"
    """The daemon answered with something that is not the reply its request expects."""
    INTERNAL = "internal"


class NbstageError(Exception):
    """A failure with a stable code; pure code raises it, the actor turns it into a reply.

    The one type for a ``(code, message)``: the session's ``DaemonFailure`` and the
    blocking client's ``DaemonError`` are this, named for where the failure was met.
    """

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code.value!r}, {self.message!r})"


def panicked(exc: BaseException) -> bool:
    """A Rust extension's panic (pycrdt's, orjson's): pyo3 raises it as a
    ``PanicException``, a BaseException, so ``except Exception`` lets it through and the
    work, the mirror or the message it broke would never be answered."""
    return type(exc).__name__ == "PanicException"


def a_failure(exc: BaseException) -> bool:
    """An exception that work, a mirror or a message ends in, to be answered as a
    failure: any ``Exception``, and a Rust extension's panic; not an interpreter's exit."""
    return isinstance(exc, Exception) or panicked(exc)
