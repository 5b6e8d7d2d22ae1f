"""Pure helpers of the Room actor (room/actor.py): no actor, no state, no I/O."""

from __future__ import annotations

from typing import Any

from nbstage.protocol.common.errors import ErrorCode, NbstageError


def scoped_key(req: Any) -> str | None:
    """Idempotency keys are per request kind, so one key cannot answer another kind."""
    return None if req.key is None else f"{type(req).__name__}:{req.key}"


def save_error(error: BaseException | None) -> NbstageError:
    """The error to answer for a failed save: its own if it is ours, else SAVE_FAILED."""
    if isinstance(error, NbstageError):
        return error
    return NbstageError(ErrorCode.SAVE_FAILED, f"The notebook was not saved: {error}")
