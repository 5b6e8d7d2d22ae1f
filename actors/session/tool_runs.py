"""Running a session tool handler: the context it is given, and one step of it.

A tool handler (``tool_handlers.py``) is a generator that yields daemon requests and
returns its tool result. :func:`step` resumes it with the daemon's answer and says what
comes next: another request to send, or the call's result. Pure but for the log.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

from nbstage.actors.session.daemon_link import DaemonFailure
from nbstage.actors.session.session_calls import NEXT_CALLS
from nbstage.actors.session.session_model import SessionState
from nbstage.actors.session.tool_context import ToolContext
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.mcp.tool_results import tool_error

log = logging.getLogger("nbstage.session")


@frozen
class Ask:
    """The handler waits for the daemon's answer to ``request``."""

    request: object


@frozen
class Done:
    result: dict[str, Any]


def step(handler: Generator[Any, Any, Any], reply: Any, name: object) -> Ask | Done:
    """Resume ``handler`` with ``reply`` (None to start it; a DaemonFailure is raised in
    it). A refusal the handler lets through becomes the call's tool error."""
    try:
        if isinstance(reply, DaemonFailure):
            return Ask(handler.throw(reply))
        return Ask(handler.send(reply))
    except StopIteration as done:
        return Done(done.value)
    except DaemonFailure as exc:
        return Done(tool_error(exc.message, {"code": exc.code}, NEXT_CALLS.get(exc.code)))
    except Exception:
        log.exception("tool %s failed", name)
        return Done(tool_error("Internal error in nbstage; see its logs."))


def tool_context(
    state: SessionState,
    key: str,
    cwd: str,
    figures: str | None,
    state_dir: str = "",
    page: bool = False,
) -> ToolContext:
    active = state.active
    return ToolContext(
        notebook_id=active.notebook_id if active else "",
        key=key,
        cwd=cwd,
        active_id=active.notebook_id if active else None,
        parked_ids=tuple(s.notebook_id for s in state.parked),
        state_dir=state_dir,
        figures=figures,
        page=page,
    )
