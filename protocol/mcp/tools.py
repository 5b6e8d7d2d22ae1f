"""The MCP tool catalogue: each tool's arguments, schema, hints and access need.

Every tool's arguments are a frozen dataclass. The same class gives the JSON
schema that ``tools/list`` publishes and validates incoming arguments (through
the codec), so the two cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from dataclasses import field
from enum import StrEnum
from typing import Any

from nbstage.protocol.common.codec import from_wire
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.paths import check_paths
from nbstage.protocol.daemon.dependency_modes import ApplyDependencies
from nbstage.protocol.mcp.output_schemas import output_schema


class Access(StrEnum):
    """What a tool needs from the session (SPEC §6 "Access requirements")."""

    NONE = "none"
    PROJECTION_READ = "projection_read"
    DOCUMENT_READ = "document_read"
    DOCUMENT_MUTATION = "document_mutation"
    KERNEL_CONTROL = "kernel_control"
    RUNTIME_READ = "runtime_read"
    EXECUTE = "execute"


def arg(description: str, default: Any = dataclasses.MISSING) -> Any:
    return field(default=default, metadata=described(description))


def described(description: str) -> dict[str, str]:
    """Field metadata for an argument whose default ``arg`` cannot give (a list, an enum)."""
    return {"description": description}


@frozen
class NoArgs:
    pass


@frozen
class ConnectArgs:
    path: str | None = arg("Path of an .ipynb file to open (relative to the server's cwd).", None)
    notebook_id: str | None = arg("UUID of a notebook the daemon knows.", None)


@frozen
class CreateArgs:
    runtime: str = arg(
        'Kernel runtime: an installed kernelspec\'s name, or a language such as "python".',
        "python",
    )
    working_dir: str | None = arg("Directory the kernel starts in (default: server cwd).", None)
    ephemeral: bool = arg("True: never written anywhere. False: kept across restarts.", True)


@frozen
class SaveArgs:
    path: str | None = arg(
        "Where to save; required for a notebook that has no file yet. A relative path is "
        "taken from the server's working directory.",
        None,
    )
    overwrite: bool = arg(
        "Replace an existing notebook at path that is not this one's file. A file that is "
        "not a notebook is never replaced.",
        False,
    )


@frozen
class DisconnectArgs:
    notebook_id: str | None = arg("Which notebook to leave (default: the active one).", None)


@frozen
class ShowNotebookArgs:
    notebook_id: str | None = arg("Which notebook to show (default: the active one).", None)


@frozen
class GetCellArgs:
    cell_id: str = arg("The cell's id.")
    full_output: bool = arg("Return outputs whole instead of capped at 8 KiB each.", False)


class AllCellsFormat(StrEnum):
    SUMMARY = "summary"
    JSON = "json"
    RICH = "rich"


@frozen
class GetAllCellsArgs:
    format: AllCellsFormat = arg(
        '"summary" (one line per cell), "json" or "rich".', AllCellsFormat.SUMMARY
    )
    start: int = arg("Index of the first cell.", 0)
    count: int | None = arg("How many cells (default: all).", None)
    include_outputs: bool = arg("Include outputs in json/rich formats.", False)


@frozen
class CreateCellArgs:
    source: str = arg("The cell's source.", "")
    cell_type: str = arg('"code", "markdown" or "raw".', "code")
    index: int | None = arg("Position to insert at (default: append).", None)
    and_run: bool = arg("Execute the new cell right away.", False)
    timeout_secs: float = arg("How long to wait for the run before answering.", 30.0)


@frozen
class SetCellArgs:
    cell_id: str = arg("The cell's id.")
    source: str | None = arg("New source.", None)
    cell_type: str | None = arg("New type.", None)
    and_run: bool = arg("Execute the cell after the change.", False)
    timeout_secs: float = arg("How long to wait for the run before answering.", 30.0)


@frozen
class CellIdArgs:
    cell_id: str = arg("The cell's id.")


@frozen
class MoveCellArgs:
    cell_id: str = arg("The cell's id.")
    after_cell_id: str | None = arg("Put it after this cell; null moves it to the front.", None)


@frozen
class ExecuteCellArgs:
    cell_id: str = arg("The cell's id.")
    timeout_secs: float = arg("Wait this long; a longer run answers 'running'.", 30.0)


@frozen
class RunAllArgs:
    timeout_secs: float = arg("Total time to wait for all cells.", 300.0)
    wait: bool = arg("Wait for the runs; false answers as soon as they are queued.", True)


@frozen
class GetResultsArgs:
    execution_id: str = arg("The execution's id, from execute_cell or run_all_cells.")
    full_output: bool = arg("Return outputs whole instead of capped at 8 KiB each.", False)


@frozen
class ReplaceMatchArgs:
    cell_id: str = arg("The cell's id.")
    match: str = arg("Literal text to replace; it must occur exactly once.")
    content: str = arg("The replacement text.")
    context_before: str | None = arg("Text that must come right before the match.", None)
    context_after: str | None = arg("Text that must come right after the match.", None)
    and_run: bool = arg("Execute the cell after the change.", False)
    timeout_secs: float = arg("How long to wait for the run before answering.", 30.0)


@frozen
class ReplaceRegexArgs:
    cell_id: str = arg("The cell's id.")
    pattern: str = arg("Python regular expression (MULTILINE); exactly one match.")
    content: str = arg(r"Replacement; \1 and \g<name> refer to groups.")
    and_run: bool = arg("Execute the cell after the change.", False)
    timeout_secs: float = arg("How long to wait for the run before answering.", 30.0)


@frozen
class ManageDependenciesArgs:
    add: list[str] = field(
        default_factory=list, metadata=described('PEP 508 requirements to add, e.g. "pandas>=2".')
    )
    remove: list[str] = field(
        default_factory=list, metadata=described("Packages to remove, by name.")
    )
    trust: bool = arg("Approve the notebook's dependencies, so its kernel may use them.", False)
    dependency_fingerprint: str | None = arg(
        "The fingerprint you last saw; the call is refused if the dependencies changed since.",
        None,
    )
    apply: ApplyDependencies = field(
        default=ApplyDependencies.NONE,
        metadata=described(
            "none: only edit the notebook. sync: install into the running kernel. restart: "
            "build the environment and restart the kernel into it."
        ),
    )


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

    def parse(self, arguments: object) -> Any:
        """Validate arguments; unknown names and wrong types are errors naming the argument."""
        arguments = {} if arguments is None else arguments
        if not isinstance(arguments, dict):
            raise NbstageError(ErrorCode.BAD_REQUEST, "arguments must be an object")
        known = {f.name for f in dataclasses.fields(self.args)}
        unknown = sorted(set(arguments) - known)
        if unknown:
            raise NbstageError(
                ErrorCode.BAD_REQUEST,
                f"unknown argument {unknown[0]!r} for {self.name}; "
                f"it takes {', '.join(sorted(known)) or 'no arguments'}",
            )
        return check_paths(from_wire(self.args, arguments))

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


def _schema_of(hint: Any) -> dict[str, Any]:
    """The JSON schema of one argument type.

    A union is ``anyOf`` its arms, ``{"type": "null"}`` last for an optional one; never
    a ``type`` array, which single-type dialects (Gemini function declarations, the
    MCP Inspector's strict check) refuse.
    """
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        arms = typing.get_args(hint)
        schemas = [_schema_of(a) for a in arms if a is not type(None)]
        if type(None) in arms:
            schemas.append({"type": "null"})
        return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"type": "string", "enum": [member.value for member in hint]}
    if origin is list:
        return {"type": "array", "items": _schema_of(typing.get_args(hint)[0])}
    names = {str: "string", bool: "boolean", int: "integer", float: "number"}
    return {"type": names[hint]}


def input_schema(args: type) -> dict[str, Any]:
    hints = typing.get_type_hints(args)
    properties, required = {}, []
    for f in dataclasses.fields(args):
        prop = {**_schema_of(hints[f.name]), "description": f.metadata.get("description", "")}
        if f.default_factory is not dataclasses.MISSING:
            prop["default"] = f.default_factory()
        elif f.default is dataclasses.MISSING:
            required.append(f.name)
        elif isinstance(f.default, enum.Enum):
            prop["default"] = f.default.value
        elif f.default is not None:
            prop["default"] = f.default
        properties[f.name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


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
    ),
    ToolSpec(
        "set_cell",
        "Edit a cell",
        "Replace a cell's source or type, and optionally run it.",
        SetCellArgs,
        A.DOCUMENT_MUTATION,
        idempotent=True,
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
    ),
    ToolSpec(
        "run_all_cells",
        "Run all cells",
        "Run every code cell in order; an error cancels the rest.",
        RunAllArgs,
        A.EXECUTE,
    ),
    ToolSpec(
        "get_results",
        "Get results",
        "An execution's status and outputs, also after a restart.",
        GetResultsArgs,
        A.RUNTIME_READ,
        read_only=True,
        idempotent=True,
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
    ),
    ToolSpec(
        "replace_regex",
        "Regex replace in a cell",
        "Replace the single match of a regular expression.",
        ReplaceRegexArgs,
        A.DOCUMENT_MUTATION,
    ),
    ToolSpec(
        "show_notebook",
        "Show the notebook to the person",
        "A link that opens the notebook live in JupyterLab (started if need be): the person "
        "sees your edits and outputs as they happen, and their edits reach you. Call it when "
        "the person asks to see or work on the notebook with you; give them the url.",
        ShowNotebookArgs,
        A.DOCUMENT_READ,
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

MAX_ARGUMENT_DEPTH = 64
"""No tool takes arguments nested deeper; the frames to the session child could not
carry arguments nested past about 250 levels."""


def nested_deeper_than(value: object, limit: int) -> bool:
    """Whether lists and objects inside ``value`` go more than ``limit`` levels deep."""
    level = [value]
    for _ in range(limit + 1):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not level:
            return False
    return True


def builtin_tool_list() -> list[dict[str, Any]]:
    return [t.to_mcp() for t in (*TOOLS, RECONNECT)]
