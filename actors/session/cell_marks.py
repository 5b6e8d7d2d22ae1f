"""The tools that change what a cell carries besides its source: clear_outputs, and
add_cell_tags / remove_cell_tags on its ``metadata.tags``. Each is one edit of the
Room's document, saved to the file like any other."""

from __future__ import annotations

from nbstage.actors.session.tool_context import Handler, ToolContext
from nbstage.protocol.common.words import plural
from nbstage.protocol.daemon.requests import ChangeCellTags, ClearOutputs, TagChange
from nbstage.protocol.mcp import tool_args
from nbstage.protocol.mcp.tool_results import tool_result


def clear_outputs(ctx: ToolContext, args: tool_args.ClearOutputsArgs) -> Handler:
    reply = yield ClearOutputs(ctx.notebook_id, args.cell_id, ctx.key)
    if args.cell_id is not None:
        text = f"Cleared the outputs of cell {args.cell_id}."
    elif reply.cleared:
        text = f"Cleared the outputs of {plural(len(reply.cleared), 'cell')}."
    else:
        text = "No cell had outputs."
    return tool_result({"cleared": reply.cleared}, text=text)


def add_cell_tags(ctx: ToolContext, args: tool_args.CellTagsArgs) -> Handler:
    return (yield from _change_tags(ctx, args, TagChange.ADD))


def remove_cell_tags(ctx: ToolContext, args: tool_args.CellTagsArgs) -> Handler:
    return (yield from _change_tags(ctx, args, TagChange.REMOVE))


def _change_tags(ctx: ToolContext, args: tool_args.CellTagsArgs, change: TagChange) -> Handler:
    reply = yield ChangeCellTags(ctx.notebook_id, args.cell_id, change, list(args.tags), ctx.key)
    shown = ", ".join(reply.tags) if reply.tags else "none"
    text = f"Cell {reply.cell_id} tags: {shown}."
    return tool_result({"cell_id": reply.cell_id, "tags": reply.tags}, text=text)
