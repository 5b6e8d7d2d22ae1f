"""What every notebook tool handler shares: the call's context, the shape of a handler,
how much of each output the daemon sends back, and an execution as tool content and as
the MCP App's page draws it."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from nbstage.actors.session.output_rendering import render_execution
from nbstage.actors.session.text_forms import TEXT_LIMIT
from nbstage.protocol.common.codec import to_wire
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.replies import ExecutionView


@frozen
class ToolContext:
    notebook_id: str
    key: str
    cwd: str
    active_id: str | None = None
    parked_ids: tuple[str, ...] = ()
    state_dir: str = ""
    figures: str | None = None
    """The folder attached images are also written to (figure_files.py); None: nowhere."""


Handler = Generator[object, Any, dict[str, Any]]
"""Yields requests, is sent their replies, returns the MCP tool result."""


PREVIEW = TEXT_LIMIT - 512
"""What each output text in a daemon reply is cut to unless full_output is asked for:
within the rendering's own cap, so the daemon's note of what it cut is the one shown."""


PAGE_FIELDS = ("cell_id", "execution_id", "status", "execution_count", "outputs", "error")


def rendered_execution(ctx: ToolContext, execution: ExecutionView, full_output: bool = False):
    """An execution in a daemon reply as MCP content, its structured view, and the cell
    the MCP App's page draws (``page_cell``)."""
    wire = to_wire(execution)
    content, structured = render_execution(wire, full_output, figures=ctx.figures)
    return content, structured, page_cell(wire)


def page_cell(cell: Mapping[str, Any]) -> dict[str, Any]:
    """A cell or an execution (wire form) as the page takes it: its outputs as the daemon
    sent them, beside the few facts the page shows in its header."""
    shown = {name: cell[name] for name in (*PAGE_FIELDS, "source") if name in cell}
    shown.setdefault("outputs", [])
    return shown
