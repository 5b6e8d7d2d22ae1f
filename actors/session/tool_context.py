"""What every notebook tool handler shares: the call's context, the shape of a handler,
how much of each output the daemon sends back, an execution as tool content, and the
cells the MCP App's page draws, for a call that builds them."""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping
from typing import Any

from nbstage.actors.session.output_rendering import render_execution
from nbstage.actors.session.text_forms import TEXT_LIMIT
from nbstage.protocol.common.codec import to_wire
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.replies import ExecutionView
from nbstage.protocol.mcp.mcp_apps import with_outputs


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
    page: bool = False
    """The result carries the outputs the MCP App's page draws: the client takes the
    extension and the tool is linked to the page (page_links.builds_page). Otherwise
    nothing for the page is built."""


Handler = Generator[object, Any, dict[str, Any]]
"""Yields requests, is sent their replies, returns the MCP tool result."""


PREVIEW = TEXT_LIMIT - 512
"""What each output text in a daemon reply is cut to unless full_output is asked for:
within the rendering's own cap, so the daemon's note of what it cut is the one shown."""


PAGE_FIELDS = ("cell_id", "execution_id", "status", "execution_count", "outputs", "error")


def rendered_execution(ctx: ToolContext, execution: ExecutionView, full_output: bool = False):
    """An execution in a daemon reply as MCP content, its structured view, and its wire
    form (for ``with_page_cells``)."""
    wire = to_wire(execution)
    content, structured = render_execution(wire, full_output, figures=ctx.figures)
    return content, structured, wire


def with_page_cells(
    ctx: ToolContext, result: dict[str, Any], cells: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """``result`` carrying ``cells`` (cells or executions, wire form) as the MCP App's page
    draws them, for a call that builds them (``ToolContext.page``); else as it is."""
    if not ctx.page:
        return result
    return with_outputs(result, [page_cell(cell) for cell in cells])


def page_cell(cell: Mapping[str, Any]) -> dict[str, Any]:
    """A cell or an execution (wire form) as the page takes it: its outputs as the daemon
    sent them, beside the few facts the page shows in its header."""
    shown = {name: cell[name] for name in (*PAGE_FIELDS, "source") if name in cell}
    shown.setdefault("outputs", [])
    return shown
