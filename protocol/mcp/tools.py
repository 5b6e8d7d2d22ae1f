"""The MCP tool catalogue: each tool's name, title, description, arguments, hints, access
need and link to the MCP App's page. The arguments' classes are ``tool_args``; how a
call's arguments are read and their schema written is ``argument_decoding``; what the
page link means for a client is ``page_links``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.mcp.argument_decoding import (
    MAX_ARGUMENT_DEPTH as MAX_ARGUMENT_DEPTH,
)
from nbstage.protocol.mcp.argument_decoding import decode_arguments, input_schema
from nbstage.protocol.mcp.argument_decoding import (
    nested_deeper_than as nested_deeper_than,
)
from nbstage.protocol.mcp.output_schemas import output_schema
from nbstage.protocol.mcp.tool_args import (
    CellIdArgs,
    CellTagsArgs,
    ClearOutputsArgs,
    ConnectArgs,
    CreateArgs,
    CreateCellArgs,
    DisconnectArgs,
    ExecuteCellArgs,
    GetAllCellsArgs,
    GetCellArgs,
    GetResultsArgs,
    ManageDependenciesArgs,
    MoveCellArgs,
    NoArgs,
    ReplaceMatchArgs,
    ReplaceRegexArgs,
    RunAllArgs,
    SaveArgs,
    SetCellArgs,
    ShowNotebookArgs,
    ViewOutputsArgs,
)


class Access(StrEnum):
    """What a tool needs from the session (SPEC §6 "Access requirements")."""

    NONE = "none"
    PROJECTION_READ = "projection_read"
    DOCUMENT_READ = "document_read"
    DOCUMENT_MUTATION = "document_mutation"
    KERNEL_CONTROL = "kernel_control"
    RUNTIME_READ = "runtime_read"
    EXECUTE = "execute"


class PageLink(StrEnum):
    """How a tool stands to the MCP App's page (mcp_apps.py), for a client that takes it."""

    NONE = "none"
    LINKED = "linked"
    """Its results can carry outputs for the page, which the host shows with them; the
    model calls it as any other."""
    APP_ONLY = "app_only"
    """For the page alone: hidden from the model, unknown to other clients."""


@frozen
class ToolSpec:
    name: str
    title: str
    description: str
    args: type
    access: Access
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    page: PageLink = PageLink.NONE
    """Only a tool linked to the page (or the page's own) builds outputs for it: the
    handlers ask ToolContext.page, which is set from this and the client."""

    def parse(self, arguments: object) -> Any:
        """Validate arguments; unknown names and wrong types are errors naming the argument."""
        return decode_arguments(self.name, self.args, arguments)

    def to_mcp(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": input_schema(self.args),
            "outputSchema": output_schema(self.name),
            "annotations": {
                "title": self.title,
                "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive,
                "idempotentHint": self.idempotent,
                "openWorldHint": False,
            },
        }


A = Access

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "list_active_notebooks",
        "List notebooks",
        "Notebooks open in the daemon, with peers and kernel status, and which are this session's.",
        NoArgs,
        A.PROJECTION_READ,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "connect_notebook",
        "Connect to a notebook",
        "Open an .ipynb by path, or join a "
        "notebook by id. Give exactly one of path and notebook_id. The previous notebook "
        "stays parked, with its kernel alive.",
        ConnectArgs,
        A.NONE,
        idempotent=True,
    ),
    ToolSpec(
        "create_notebook",
        "Create a notebook",
        "Start a new untitled notebook with a "
        "kernel. Ephemeral ones vanish with the daemon; save_notebook gives one a file.",
        CreateArgs,
        A.NONE,
    ),
    ToolSpec(
        "save_notebook",
        "Save the notebook",
        "Write the notebook atomically to its file, or to path (required the first time). "
        "A path that differs from the notebook's file is a 'save as': the notebook moves "
        "there and keeps its notebook_id, and the old file is left as it was (opened again, "
        "it is another notebook).",
        SaveArgs,
        A.DOCUMENT_MUTATION,
        idempotent=True,
    ),
    ToolSpec(
        "disconnect_notebook",
        "Disconnect",
        "Leave a notebook. The kernel stays up for a keep-alive window in case anyone returns.",
        DisconnectArgs,
        A.NONE,
    ),
    ToolSpec(
        "get_cell",
        "Get a cell",
        "One cell's source and outputs.",
        GetCellArgs,
        A.PROJECTION_READ,
        read_only=True,
        idempotent=True,
        page=PageLink.LINKED,
    ),
    ToolSpec(
        "get_all_cells",
        "Get all cells",
        "The notebook's cells: a one-line summary each, or whole cells as json/rich.",
        GetAllCellsArgs,
        A.PROJECTION_READ,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "create_cell",
        "Create a cell",
        "Insert a cell, and optionally run it.",
        CreateCellArgs,
        A.DOCUMENT_MUTATION,
        page=PageLink.LINKED,
    ),
    ToolSpec(
        "set_cell",
        "Edit a cell",
        "Replace a cell's source or type, and optionally run it.",
        SetCellArgs,
        A.DOCUMENT_MUTATION,
        idempotent=True,
        page=PageLink.LINKED,
    ),
    ToolSpec(
        "delete_cell",
        "Delete a cell",
        "Remove a cell.",
        CellIdArgs,
        A.DOCUMENT_MUTATION,
        destructive=True,
    ),
    ToolSpec(
        "move_cell",
        "Move a cell",
        "Move a cell after another, or to the front.",
        MoveCellArgs,
        A.DOCUMENT_MUTATION,
        idempotent=True,
    ),
    ToolSpec(
        "execute_cell",
        "Run a cell",
        "Run a code cell and wait up to timeout_secs. A "
        "longer run answers 'running'; get_results fetches the rest.",
        ExecuteCellArgs,
        A.EXECUTE,
        page=PageLink.LINKED,
    ),
    ToolSpec(
        "run_all_cells",
        "Run all cells",
        "Run every code cell in order; an error cancels the rest.",
        RunAllArgs,
        A.EXECUTE,
        page=PageLink.LINKED,
    ),
    ToolSpec(
        "get_results",
        "Get results",
        "An execution's status and outputs, also after a restart.",
        GetResultsArgs,
        A.RUNTIME_READ,
        read_only=True,
        idempotent=True,
        page=PageLink.LINKED,
    ),
    ToolSpec(
        "view_outputs",
        "Outputs for the view",
        "For nbstage's MCP App page only (hidden from the model): an execution's outputs "
        "whole, in the result's _meta, for the page to draw.",
        ViewOutputsArgs,
        A.RUNTIME_READ,
        read_only=True,
        idempotent=True,
        page=PageLink.APP_ONLY,
    ),
    ToolSpec(
        "interrupt_kernel",
        "Interrupt",
        "Interrupt the running cell (KeyboardInterrupt).",
        NoArgs,
        A.KERNEL_CONTROL,
    ),
    ToolSpec(
        "restart_kernel",
        "Restart kernel",
        "Restart the kernel; all variables are lost.",
        NoArgs,
        A.KERNEL_CONTROL,
        destructive=True,
    ),
    ToolSpec(
        "manage_dependencies",
        "Manage dependencies",
        "Read or edit the notebook's inline Python dependencies (metadata.runt.uv), approve "
        "them, and build and restart the kernel into their environment.",
        ManageDependenciesArgs,
        A.DOCUMENT_MUTATION,
    ),
    ToolSpec(
        "replace_match",
        "Replace text in a cell",
        "Replace one exact occurrence of match; context_before/context_after pick one of several.",
        ReplaceMatchArgs,
        A.DOCUMENT_MUTATION,
        page=PageLink.LINKED,
    ),
    ToolSpec(
        "replace_regex",
        "Regex replace in a cell",
        "Replace the single match of a regular expression.",
        ReplaceRegexArgs,
        A.DOCUMENT_MUTATION,
        page=PageLink.LINKED,
    ),
    ToolSpec(
        "show_notebook",
        "Show the notebook to the person",
        "A link that opens the notebook live in JupyterLab (started if need be): the person "
        "sees your edits and outputs as they happen, and their edits reach you. Call it when "
        "the person asks to see or work on the notebook with you; give them the url. Where "
        "a display is there it also opens their browser (opened_browser says whether).",
        ShowNotebookArgs,
        A.DOCUMENT_READ,
        idempotent=True,
    ),
    ToolSpec(
        "clear_outputs",
        "Clear outputs",
        "Remove the outputs and execution counts of one code cell, or of every cell.",
        ClearOutputsArgs,
        A.DOCUMENT_MUTATION,
        destructive=True,
        idempotent=True,
    ),
    ToolSpec(
        "add_cell_tags",
        "Tag a cell",
        "Add tags to a cell's metadata.tags (saved in the file), e.g. parameters or "
        "remove-input; tags it has already are kept once.",
        CellTagsArgs,
        A.DOCUMENT_MUTATION,
        idempotent=True,
    ),
    ToolSpec(
        "remove_cell_tags",
        "Untag a cell",
        "Remove tags from a cell's metadata.tags; tags it does not have are ignored.",
        CellTagsArgs,
        A.DOCUMENT_MUTATION,
        idempotent=True,
    ),
)

RECONNECT = ToolSpec(
    "reconnect",
    "Reconnect",
    "Restart nbstage's session server now, closing an open circuit. The notebook is rejoined.",
    NoArgs,
    A.NONE,
)

TOOLS_BY_NAME: dict[str, ToolSpec] = {t.name: t for t in (*TOOLS, RECONNECT)}


def builtin_tool_list() -> list[dict[str, Any]]:
    return [t.to_mcp() for t in (*TOOLS, RECONNECT)]
