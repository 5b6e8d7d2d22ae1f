"""How each notebook tool talks to the daemon, written as generators.

A handler yields requests (the dataclasses of ``protocol/daemon/requests.py``) and
receives each typed reply (``protocol/daemon/replies.py``), or has DaemonFailure thrown
in; it returns the finished MCP tool result. The SessionManager drives them from
its table of pending replies, so a long ``execute_cell`` wait never blocks a
``get_cell`` on the same client.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from nbstage.actors.session.cell_marks import add_cell_tags, clear_outputs, remove_cell_tags
from nbstage.actors.session.cell_reads import get_all_cells, get_cell
from nbstage.actors.session.daemon_link import DaemonFailure
from nbstage.actors.session.dependency_rendering import render_dependencies
from nbstage.actors.session.tool_context import (
    PREVIEW,
    Handler,
    ToolContext,
    rendered_execution,
    with_page_cells,
)
from nbstage.protocol.common.codec import to_wire
from nbstage.protocol.common.errors import ErrorCode
from nbstage.protocol.daemon.dependency_modes import ApplyDependencies
from nbstage.protocol.daemon.requests import (
    CreateCell,
    DeleteCell,
    DescribeRoom,
    ExecuteCell,
    GetCells,
    GetExecution,
    InterruptKernel,
    ListRooms,
    ManageDependencies,
    MoveCell,
    ReplaceMatch,
    ReplaceRegex,
    RestartKernel,
    SaveNotebook,
    SetCell,
)
from nbstage.protocol.mcp import tool_args
from nbstage.protocol.mcp.tool_names import ToolName
from nbstage.protocol.mcp.tool_results import text_content, tool_result
from nbstage.protocol.session.lab_wanted import BrowserWanted, LabWanted, notebook_url


def environment_fields(environment: dict[str, Any] | None) -> dict[str, Any]:
    """A kernel's environment (an EnvironmentView on the wire) as tools show it; the
    kernel host only for a kernel that runs on one."""
    environment = environment or {}
    fields = {
        "env_source": environment.get("source"),
        "fingerprint": environment.get("fingerprint"),
    }
    if environment.get("host"):
        fields["kernel_host"] = environment["host"]
    return fields


def absolute(path: str, cwd: str) -> str:
    return str((Path(cwd) / Path(path).expanduser()).resolve())


def _run_after_edit(ctx: ToolContext, cell_id: str, timeout: float, structured: dict, text: str):
    reply = yield ExecuteCell(ctx.notebook_id, cell_id, timeout, f"{ctx.key}:run", PREVIEW)
    content, execution, wire = rendered_execution(ctx, reply.execution)
    result = tool_result(
        {**structured, "execution": execution}, content=[text_content(text), *content]
    )
    return with_page_cells(ctx, result, [wire])


def create_cell(ctx: ToolContext, args: tool_args.CreateCellArgs) -> Handler:
    reply = yield CreateCell(ctx.notebook_id, args.source, args.cell_type, args.index, ctx.key)
    structured = {"cell_id": reply.cell_id, "index": reply.index}
    text = f"Created {args.cell_type} cell {reply.cell_id} at index {reply.index}."
    if args.and_run:
        return (yield from _run_after_edit(ctx, reply.cell_id, args.timeout_secs, structured, text))
    shown = {"cell_id": reply.cell_id, "source": args.source}
    return with_page_cells(ctx, tool_result(structured, text=text), [shown])


def set_cell(ctx: ToolContext, args: tool_args.SetCellArgs) -> Handler:
    yield SetCell(ctx.notebook_id, args.cell_id, args.source, args.cell_type, ctx.key)
    result = yield from _after_edit(ctx, args, f"Updated cell {args.cell_id}.")
    if args.and_run:
        return result
    return with_page_cells(ctx, result, [{"cell_id": args.cell_id, "source": args.source}])


def _after_edit(ctx: ToolContext, args: Any, text: str) -> Handler:
    structured = {"cell_id": args.cell_id}
    if args.and_run:
        return (yield from _run_after_edit(ctx, args.cell_id, args.timeout_secs, structured, text))
    return tool_result(structured, text=text)


def replace_match(ctx: ToolContext, args: tool_args.ReplaceMatchArgs) -> Handler:
    yield ReplaceMatch(
        ctx.notebook_id,
        args.cell_id,
        args.match,
        args.content,
        args.context_before,
        args.context_after,
        ctx.key,
    )
    return (yield from _after_edit(ctx, args, f"Replaced the match in cell {args.cell_id}."))


def replace_regex(ctx: ToolContext, args: tool_args.ReplaceRegexArgs) -> Handler:
    yield ReplaceRegex(ctx.notebook_id, args.cell_id, args.pattern, args.content, ctx.key)
    return (yield from _after_edit(ctx, args, f"Replaced the match in cell {args.cell_id}."))


def delete_cell(ctx: ToolContext, args: tool_args.CellIdArgs) -> Handler:
    reply = yield DeleteCell(ctx.notebook_id, args.cell_id, ctx.key)
    return tool_result({"deleted": reply.deleted}, text=f"Deleted cell {reply.deleted}.")


def move_cell(ctx: ToolContext, args: tool_args.MoveCellArgs) -> Handler:
    reply = yield MoveCell(ctx.notebook_id, args.cell_id, args.after_cell_id, ctx.key)
    structured = {"cell_id": reply.cell_id, "index": reply.index}
    return tool_result(structured, text=f"Moved cell {reply.cell_id} to index {reply.index}.")


def execute_cell(ctx: ToolContext, args: tool_args.ExecuteCellArgs) -> Handler:
    reply = yield ExecuteCell(ctx.notebook_id, args.cell_id, args.timeout_secs, ctx.key, PREVIEW)
    content, execution, wire = rendered_execution(ctx, reply.execution)
    return with_page_cells(ctx, tool_result({"execution": execution}, content=content), [wire])


def get_results(ctx: ToolContext, args: tool_args.GetResultsArgs) -> Handler:
    preview = None if args.full_output else PREVIEW
    reply = yield GetExecution(ctx.notebook_id, args.execution_id, preview=preview)
    content, execution, wire = rendered_execution(ctx, reply.execution, args.full_output)
    return with_page_cells(ctx, tool_result({"execution": execution}, content=content), [wire])


def view_outputs(ctx: ToolContext, args: tool_args.ViewOutputsArgs) -> Handler:
    """The MCP App page's own call: the outputs whole, for the page alone (``_meta``);
    the content says only what it is."""
    reply = yield GetExecution(ctx.notebook_id, args.execution_id, preview=None)
    wire = to_wire(reply.execution)
    structured = {"execution_id": args.execution_id, "status": wire.get("status")}
    text = f"The outputs of execution {args.execution_id}, for the view."
    return with_page_cells(ctx, tool_result(structured, text=text), [wire])


def run_all_cells(ctx: ToolContext, args: tool_args.RunAllArgs) -> Handler:
    deadline = time.monotonic() + args.timeout_secs
    summary = yield GetCells(ctx.notebook_id)
    execution_ids = []
    for cell in summary.cells:
        if cell["cell_type"] == "code":
            key = f"{ctx.key}:{cell['cell_id']}"
            reply = yield ExecuteCell(ctx.notebook_id, cell["cell_id"], 0.0, key, PREVIEW)
            execution_ids.append(reply.execution.execution_id)
    content: list[dict[str, Any]] = []
    executions = []
    wires = []
    for execution_id in execution_ids:
        wait = max(0.0, deadline - time.monotonic()) if args.wait else 0.0
        reply = yield GetExecution(ctx.notebook_id, execution_id, wait, PREVIEW)
        items, execution, wire = rendered_execution(ctx, reply.execution)
        content += items
        executions.append(execution)
        wires.append(wire)
    if not executions:
        content = [text_content("The notebook has no code cells.")]
    return with_page_cells(ctx, tool_result({"executions": executions}, content=content), wires)


def interrupt_kernel(ctx: ToolContext, args: tool_args.NoArgs) -> Handler:
    yield InterruptKernel(ctx.notebook_id, ctx.key)
    return tool_result({"interrupted": True}, text="Interrupt sent to the kernel.")


def restart_kernel(ctx: ToolContext, args: tool_args.NoArgs) -> Handler:
    reply = yield RestartKernel(ctx.notebook_id, ctx.key)
    text = "The kernel restarted; its variables are gone."
    if reply.moved_to is None:
        return tool_result({"restarted": True}, text=text)
    moved = {"from": reply.moved_from, "to": reply.moved_to}
    text += f" The kernel moved from {reply.moved_from} to {reply.moved_to}."
    return tool_result({"restarted": True, "moved": moved}, text=text)


def manage_dependencies(ctx: ToolContext, args: tool_args.ManageDependenciesArgs) -> Handler:
    reply = yield ManageDependencies(
        ctx.notebook_id,
        args.add,
        args.remove,
        args.trust,
        args.dependency_fingerprint,
        args.apply,
        ctx.key,
    )
    result = to_wire(reply)
    state = {
        "dependencies": result["after"]["dependencies"],
        "env_source": (result.get("environment") or {}).get("source"),
        "fingerprint": result["after"]["fingerprint"],
        "trust": result["trust"],
    }
    if args.add or args.remove or args.trust or args.apply is not ApplyDependencies.NONE:
        edit = {k: result[k] for k in ("added", "removed") if k in result}
        before, after = result["before"]["dependencies"], state["dependencies"]
        state = {"before": before, "after": after, **edit, **state}
        if "apply" in result:
            state["apply"] = result["apply"]
    if state["trust"]["needs_approval"]:
        state["next_call"] = "manage_dependencies(trust=true)"
    return tool_result(state, text=render_dependencies(state))


def save_notebook(ctx: ToolContext, args: tool_args.SaveArgs) -> Handler:
    """The path goes to the daemon joined to the working dir but with its links unresolved:
    the daemon resolves them once and checks both the path and its target."""
    path = os.path.join(ctx.cwd, os.path.expanduser(args.path)) if args.path else None
    reply = yield SaveNotebook(ctx.notebook_id, path, ctx.key, args.overwrite)
    structured = {"notebook_id": reply.notebook_id, "path": reply.path, "working_dir": ctx.cwd}
    text = f"Saved to {reply.path}."
    if args.path and not os.path.isabs(os.path.expanduser(args.path)):
        text += f" (A relative path is taken from the working directory, {ctx.cwd}.)"
    return tool_result(structured, text=text)


def list_active_notebooks(ctx: ToolContext, args: tool_args.NoArgs) -> Handler:
    reply = yield ListRooms()
    notebooks = [
        {
            "notebook_id": room.notebook_id,
            "path": room.path,
            "peers": None if room.peers is None else [p.label for p in room.peers],
            "kernel_status": room.kernel_status,
            "kernelspec": room.kernelspec,
            **environment_fields(to_wire(room.environment) if room.environment else None),
            "active": room.notebook_id == ctx.active_id,
            "parked": room.notebook_id in ctx.parked_ids,
        }
        for room in reply.rooms
    ]
    lines = [
        f"{'*' if n['active'] else ' '} {n['notebook_id']}  {n['path'] or '(untitled)'}  "
        f"kernel {n['kernelspec'] or '-'} {n['kernel_status']}"
        f"{' in ' + n['env_source'] if n['env_source'] else ''}"
        f"{' on ' + n['kernel_host'] if n.get('kernel_host') else ''}  "
        f"peers: {'unknown' if n['peers'] is None else ', '.join(n['peers']) or 'none'}"
        for n in notebooks
    ]
    text = "\n".join(lines) if lines else "No notebooks are open."
    return tool_result({"notebooks": notebooks}, text=text)


def show_notebook(ctx: ToolContext, args: tool_args.ShowNotebookArgs) -> Handler:
    """The notebook's live view in JupyterLab; the Lab edge is started if none runs, and
    the browser opened on it where a display allows (entrypoints/common/lab_browser.py)."""
    notebook_id = args.notebook_id or ctx.notebook_id
    room = yield DescribeRoom(notebook_id)
    if room.path is None:
        raise DaemonFailure(
            ErrorCode.NO_PATH,
            "This notebook has no file yet, and JupyterLab shows files. "
            "Call save_notebook with a path first.",
        )
    lab = yield LabWanted(ctx.state_dir)
    try:
        url = notebook_url(lab, room.path, lab["token"])
    except ValueError:
        raise DaemonFailure(
            ErrorCode.BAD_REQUEST,
            f"{room.path} is outside JupyterLab's root ({lab['root']}). Run `nbstage lab "
            "--root-dir DIR` with a DIR that holds it, or set NBSTAGE_LAB_ROOT.",
        ) from None
    opened = yield BrowserWanted(ctx.state_dir, url)
    structured = {"url": url, "notebook_id": notebook_id, "path": room.path, **opened}
    text = f"Open {url} to watch and edit {room.path} live."
    if opened["opened_browser"]:
        text = f"Opened {url} in the browser: {room.path} is live there."
    else:
        text += f" (No browser opened: {opened['browser_reason']}.)"
    return tool_result(structured, text=text)


SESSION_TOOLS: dict[ToolName, Any] = {
    ToolName.GET_CELL: get_cell,
    ToolName.GET_ALL_CELLS: get_all_cells,
    ToolName.CREATE_CELL: create_cell,
    ToolName.SET_CELL: set_cell,
    ToolName.DELETE_CELL: delete_cell,
    ToolName.MOVE_CELL: move_cell,
    ToolName.EXECUTE_CELL: execute_cell,
    ToolName.RUN_ALL_CELLS: run_all_cells,
    ToolName.GET_RESULTS: get_results,
    ToolName.VIEW_OUTPUTS: view_outputs,
    ToolName.INTERRUPT_KERNEL: interrupt_kernel,
    ToolName.RESTART_KERNEL: restart_kernel,
    ToolName.REPLACE_MATCH: replace_match,
    ToolName.REPLACE_REGEX: replace_regex,
    ToolName.SAVE_NOTEBOOK: save_notebook,
    ToolName.MANAGE_DEPENDENCIES: manage_dependencies,
    ToolName.SHOW_NOTEBOOK: show_notebook,
    ToolName.CLEAR_OUTPUTS: clear_outputs,
    ToolName.ADD_CELL_TAGS: add_cell_tags,
    ToolName.REMOVE_CELL_TAGS: remove_cell_tags,
}
