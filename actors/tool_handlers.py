"""How each notebook tool talks to the daemon, written as generators.

A handler yields DaemonCall requests and receives each answer (or has
DaemonFailure thrown in); it returns the finished MCP tool result. The
SessionManager drives them from its table of pending replies, so a long
``execute_cell`` wait never blocks a ``get_cell`` on the same client.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbstage.actors.rendering import render_cell, render_cells_summary, render_execution
from nbstage.protocol import tools
from nbstage.protocol.mcp import text_content, tool_result


@dataclass(frozen=True, slots=True)
class DaemonCall:
    kind: str
    fields: dict[str, Any]


class DaemonFailure(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class ToolContext:
    notebook_id: str
    key: str
    cwd: str
    active_id: str | None = None
    parked_ids: tuple[str, ...] = ()


Handler = Generator[DaemonCall, dict[str, Any], dict[str, Any]]


def absolute(path: str, cwd: str) -> str:
    return str((Path(cwd) / Path(path).expanduser()).resolve())


def _call(ctx: ToolContext, kind: str, **fields: Any) -> DaemonCall:
    return DaemonCall(kind, {"notebook_id": ctx.notebook_id, **fields})


def _run_after_edit(ctx: ToolContext, cell_id: str, timeout: float, structured: dict, text: str):
    reply = yield _call(ctx, "execute", cell_id=cell_id, wait_secs=timeout, key=f"{ctx.key}:run")
    content, execution = render_execution(reply["execution"])
    return tool_result(
        {**structured, "execution": execution}, content=[text_content(text), *content]
    )


def get_cell(ctx: ToolContext, args: tools.GetCellArgs) -> Handler:
    reply = yield _call(ctx, "get_cell", cell_id=args.cell_id)
    content, cell = render_cell(reply["cell"], args.full_output)
    return tool_result({"cell": cell}, content=content)


def get_all_cells(ctx: ToolContext, args: tools.GetAllCellsArgs) -> Handler:
    if args.format == "summary":
        reply = yield _call(ctx, "get_cells", format="summary", start=args.start, count=args.count)
        text = render_cells_summary(reply["cells"], reply["total"])
        return tool_result({"cells": reply["cells"], "total": reply["total"]}, text=text)
    if args.format not in ("json", "rich"):
        raise DaemonFailure("bad_request", 'format must be "summary", "json" or "rich"')
    reply = yield _call(
        ctx,
        "get_cells",
        format="json",
        start=args.start,
        count=args.count,
        include_outputs=args.include_outputs,
    )
    if args.format == "json":
        return tool_result({"cells": reply["cells"], "total": reply["total"]})
    content: list[dict[str, Any]] = []
    cells = []
    for raw in reply["cells"]:
        cell_content, cell = render_cell({"cell_id": raw["id"], **raw})
        content += cell_content
        cells.append(cell)
    return tool_result({"cells": cells, "total": reply["total"]}, content=content)


def create_cell(ctx: ToolContext, args: tools.CreateCellArgs) -> Handler:
    reply = yield _call(
        ctx,
        "create_cell",
        source=args.source,
        cell_type=args.cell_type,
        index=args.index,
        key=ctx.key,
    )
    structured = {"cell_id": reply["cell_id"], "index": reply["index"]}
    text = f"Created {args.cell_type} cell {reply['cell_id']} at index {reply['index']}."
    if args.and_run:
        return (
            yield from _run_after_edit(ctx, reply["cell_id"], args.timeout_secs, structured, text)
        )
    return tool_result(structured, text=text)


def set_cell(ctx: ToolContext, args: tools.SetCellArgs) -> Handler:
    yield _call(
        ctx,
        "set_cell",
        cell_id=args.cell_id,
        source=args.source,
        cell_type=args.cell_type,
        key=ctx.key,
    )
    return (yield from _after_edit(ctx, args, f"Updated cell {args.cell_id}."))


def _after_edit(ctx: ToolContext, args: Any, text: str) -> Handler:
    structured = {"cell_id": args.cell_id}
    if args.and_run:
        return (yield from _run_after_edit(ctx, args.cell_id, args.timeout_secs, structured, text))
    return tool_result(structured, text=text)


def replace_match(ctx: ToolContext, args: tools.ReplaceMatchArgs) -> Handler:
    yield _call(
        ctx,
        "replace_match",
        cell_id=args.cell_id,
        match=args.match,
        content=args.content,
        context_before=args.context_before,
        context_after=args.context_after,
        key=ctx.key,
    )
    return (yield from _after_edit(ctx, args, f"Replaced the match in cell {args.cell_id}."))


def replace_regex(ctx: ToolContext, args: tools.ReplaceRegexArgs) -> Handler:
    yield _call(
        ctx,
        "replace_regex",
        cell_id=args.cell_id,
        pattern=args.pattern,
        content=args.content,
        key=ctx.key,
    )
    return (yield from _after_edit(ctx, args, f"Replaced the match in cell {args.cell_id}."))


def delete_cell(ctx: ToolContext, args: tools.CellIdArgs) -> Handler:
    yield _call(ctx, "delete_cell", cell_id=args.cell_id, key=ctx.key)
    return tool_result({"deleted": args.cell_id}, text=f"Deleted cell {args.cell_id}.")


def move_cell(ctx: ToolContext, args: tools.MoveCellArgs) -> Handler:
    reply = yield _call(
        ctx, "move_cell", cell_id=args.cell_id, after_cell_id=args.after_cell_id, key=ctx.key
    )
    structured = {"cell_id": args.cell_id, "index": reply["index"]}
    return tool_result(structured, text=f"Moved cell {args.cell_id} to index {reply['index']}.")


def execute_cell(ctx: ToolContext, args: tools.ExecuteCellArgs) -> Handler:
    reply = yield _call(
        ctx, "execute", cell_id=args.cell_id, wait_secs=args.timeout_secs, key=ctx.key
    )
    content, execution = render_execution(reply["execution"])
    return tool_result({"execution": execution}, content=content)


def get_results(ctx: ToolContext, args: tools.GetResultsArgs) -> Handler:
    reply = yield _call(ctx, "get_execution", execution_id=args.execution_id)
    content, execution = render_execution(reply["execution"], args.full_output)
    return tool_result({"execution": execution}, content=content)


def run_all_cells(ctx: ToolContext, args: tools.RunAllArgs) -> Handler:
    deadline = time.monotonic() + args.timeout_secs
    summary = yield _call(ctx, "get_cells", format="summary")
    execution_ids = []
    for cell in summary["cells"]:
        if cell["cell_type"] == "code":
            key = f"{ctx.key}:{cell['cell_id']}"
            reply = yield _call(ctx, "execute", cell_id=cell["cell_id"], wait_secs=0.0, key=key)
            execution_ids.append(reply["execution"]["execution_id"])
    content: list[dict[str, Any]] = []
    executions = []
    for execution_id in execution_ids:
        wait = max(0.0, deadline - time.monotonic()) if args.wait else 0.0
        reply = yield _call(ctx, "get_execution", execution_id=execution_id, wait_secs=wait)
        items, execution = render_execution(reply["execution"])
        content += items
        executions.append(execution)
    if not executions:
        content = [text_content("The notebook has no code cells.")]
    return tool_result({"executions": executions}, content=content)


def interrupt_kernel(ctx: ToolContext, args: tools.NoArgs) -> Handler:
    yield _call(ctx, "interrupt")
    return tool_result({"interrupted": True}, text="Interrupt sent to the kernel.")


def restart_kernel(ctx: ToolContext, args: tools.NoArgs) -> Handler:
    yield _call(ctx, "restart_kernel")
    return tool_result({"restarted": True}, text="The kernel restarted; its variables are gone.")


def save_notebook(ctx: ToolContext, args: tools.SaveArgs) -> Handler:
    path = absolute(args.path, ctx.cwd) if args.path else None
    reply = yield _call(ctx, "save", path=path)
    structured = {"notebook_id": reply["notebook_id"], "path": reply["path"]}
    return tool_result(structured, text=f"Saved to {reply['path']}.")


def list_active_notebooks(ctx: ToolContext, args: tools.NoArgs) -> Handler:
    reply = yield DaemonCall("list_rooms", {})
    notebooks = [
        {
            "notebook_id": room["notebook_id"],
            "path": room["path"],
            "peers": [p["label"] for p in room["peers"]],
            "kernel_status": room["kernel_status"],
            "active": room["notebook_id"] == ctx.active_id,
            "parked": room["notebook_id"] in ctx.parked_ids,
        }
        for room in reply["rooms"]
    ]
    lines = [
        f"{'*' if n['active'] else ' '} {n['notebook_id']}  {n['path'] or '(untitled)'}  "
        f"kernel {n['kernel_status']}  peers: {', '.join(n['peers']) or 'none'}"
        for n in notebooks
    ]
    text = "\n".join(lines) if lines else "No notebooks are open."
    return tool_result({"notebooks": notebooks}, text=text)


SESSION_TOOLS = {
    "get_cell": get_cell,
    "get_all_cells": get_all_cells,
    "create_cell": create_cell,
    "set_cell": set_cell,
    "delete_cell": delete_cell,
    "move_cell": move_cell,
    "execute_cell": execute_cell,
    "run_all_cells": run_all_cells,
    "get_results": get_results,
    "interrupt_kernel": interrupt_kernel,
    "restart_kernel": restart_kernel,
    "replace_match": replace_match,
    "replace_regex": replace_regex,
    "save_notebook": save_notebook,
}
