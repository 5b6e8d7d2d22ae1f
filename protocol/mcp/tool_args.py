"""Each MCP tool's arguments, as a frozen dataclass with a description per field.

The same class gives the JSON schema that ``tools/list`` publishes and validates the
arguments a call brings (``argument_decoding``), so the two cannot drift apart.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from enum import StrEnum
from typing import Any

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.daemon.dependency_modes import ApplyDependencies


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
    kernel_host: str | None = arg(
        "Run the kernel on this kernel host (a Jupyter Kernel Gateway the daemon's "
        'config.toml names), or on "*": any of them, the least loaded; recorded in the '
        "notebook. Default: this machine.",
        None,
    )


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
class ClearOutputsArgs:
    cell_id: str | None = arg("The code cell to clear; leave it out to clear every cell.", None)


@frozen
class CellTagsArgs:
    cell_id: str = arg("The cell's id.")
    tags: list[str] = field(
        default_factory=list,
        metadata=described('Tags, e.g. ["parameters"]: no spaces or commas in one.'),
    )


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
class ViewOutputsArgs:
    execution_id: str = arg("The execution's id, from the result the page was given.")


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
