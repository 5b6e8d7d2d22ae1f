"""The tools that read cells: get_cell, and get_all_cells in its three formats, which
pages through a notebook too large for one daemon frame."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from nbstage.actors.session.cell_rendering import (
    render_cell,
    render_cells_json,
    render_cells_summary,
)
from nbstage.actors.session.daemon_link import DaemonFailure
from nbstage.actors.session.tool_context import PREVIEW, Handler, ToolContext, with_page_cells
from nbstage.protocol.common.codec import to_wire
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.daemon.requests import CellsFormat, GetCell, GetCells
from nbstage.protocol.mcp import tool_args
from nbstage.protocol.mcp.tool_results import tool_result


def get_cell(ctx: ToolContext, args: tool_args.GetCellArgs) -> Handler:
    preview = None if args.full_output else PREVIEW
    reply = yield GetCell(ctx.notebook_id, args.cell_id, preview)
    wire = to_wire(reply.cell)
    content, cell = render_cell(wire, args.full_output, figures=ctx.figures)
    return with_page_cells(ctx, tool_result({"cell": cell}, content=content), [wire])


def get_all_cells(ctx: ToolContext, args: tool_args.GetAllCellsArgs) -> Handler:
    if args.format is tool_args.AllCellsFormat.SUMMARY:
        reply = yield GetCells(ctx.notebook_id, CellsFormat.SUMMARY, args.start, args.count)
        text = render_cells_summary(reply.cells, reply.total)
        return tool_result({"cells": reply.cells, "total": reply.total}, text=text)
    shown, total = yield from cells_in_pages(ctx, args)
    if args.format is tool_args.AllCellsFormat.JSON:
        content, structured = render_cells_json(shown, total, figures=ctx.figures)
        return tool_result(structured, content=content)
    content: list[dict[str, Any]] = []
    cells = []
    for raw in shown:
        cell_content, cell = render_cell({"cell_id": raw["id"], **raw}, figures=ctx.figures)
        content += cell_content
        cells.append(cell)
    return tool_result({"cells": cells, "total": total}, content=content)


def cells_in_pages(
    ctx: ToolContext, args: tool_args.GetAllCellsArgs
) -> Generator[object, Any, tuple[list[dict[str, Any]], int]]:
    """Whole cells and the notebook's total. Cells whose reply would exceed the daemon's
    frame limit are fetched again in pages, halved until each fits; a single cell that
    does not fit on its own fails with ``result_too_large``. The rich format's outputs
    come as previews."""
    preview = PREVIEW if args.format is tool_args.AllCellsFormat.RICH else None
    try:
        reply = yield GetCells(
            ctx.notebook_id,
            CellsFormat.JSON,
            args.start,
            args.count,
            args.include_outputs,
            preview,
        )
        return reply.cells, reply.total
    except DaemonFailure as exc:
        if exc.code != ErrorCode.RESULT_TOO_LARGE:
            raise
    summary = yield GetCells(ctx.notebook_id, CellsFormat.SUMMARY, args.start, args.count)
    wanted = len(summary.cells)
    cells: list[dict[str, Any]] = []
    page = max(1, wanted // 2)
    while len(cells) < wanted:
        count = min(page, wanted - len(cells))
        try:
            reply = yield GetCells(
                ctx.notebook_id,
                CellsFormat.JSON,
                args.start + len(cells),
                count,
                args.include_outputs,
                preview,
            )
        except DaemonFailure as exc:
            if exc.code != ErrorCode.RESULT_TOO_LARGE:
                raise
            if count == 1:
                raise DaemonFailure(
                    exc.code,
                    f"Cell {args.start + len(cells)} alone is over the daemon's frame limit, so "
                    "it cannot be sent whole. Ask with include_outputs=false, or read its "
                    "outputs from the kernel.",
                ) from None
            page = max(1, count // 2)
            continue
        if not reply.cells:
            break
        cells += reply.cells
    return cells, summary.total
