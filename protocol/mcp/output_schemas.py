"""Each tool's ``outputSchema``: the shape of its ``structuredContent``.

Claude Code and Codex hand their model only the structured part of a result, so it holds
everything an agent acts on, and this is its contract. Every result may also carry
``notices`` (protocol/daemon/notices.py) and, read while the daemon is down, ``stale`` and
``as_of``. A failed call (``isError``) has ``error`` (its message), and ``code`` and
``next_call`` where there are some, instead of the tool's own fields: each schema takes
either. Objects stay open to fields added later; unions are ``anyOf``, never a ``type``
array, as for the input schemas (argument_decoding.py).
"""

from __future__ import annotations

from typing import Any

from nbstage.protocol.daemon.notices import NoticeKind

Schema = dict[str, Any]


def _obj(required: tuple[str, ...] = (), **properties: Schema) -> Schema:
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def _list(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def _or_null(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
BOOL: Schema = {"type": "boolean"}
NULLABLE_STR = _or_null(STR)

NOTICE = _obj(
    ("kind", "message"),
    kind={"type": "string", "enum": [kind.value for kind in NoticeKind]},
    message=STR,
    next_call=STR,
)
IMAGE = _obj(
    ("mime_type", "bytes", "attached"),
    mime_type=STR,
    bytes=INT,
    width=INT,
    height=INT,
    attached=BOOL,
    file=STR,
    note=STR,
)
OUTPUT = _obj(
    ("output_type", "text"),
    output_type=STR,
    text=STR,
    truncated=BOOL,
    name=STR,
    ename=STR,
    evalue=STR,
    traceback=_list(STR),
    data={"type": "object"},
    images=_list(IMAGE),
)
EXECUTION = _obj(
    ("execution_id", "cell_id", "status", "outputs"),
    execution_id=STR,
    cell_id=STR,
    status=STR,
    execution_count=_or_null(INT),
    outputs=_list(OUTPUT),
    error=STR,
    next_call=STR,
)
CELL = _obj(
    ("cell_id", "cell_type", "source"),
    cell_id=STR,
    cell_type=STR,
    source=STR,
    execution_count=_or_null(INT),
    outputs=_list(OUTPUT),
    output_count=INT,
    next_call=STR,
)
LISTED_CELL: Schema = {
    "type": "object",
    "description": "A summary row (cell_id, index, …), a cell as get_cell shows it, or an "
    "nbformat cell (id, …) whose images are described; without outputs, output_count.",
}
ENVIRONMENT: dict[str, Schema] = {
    "env_source": NULLABLE_STR,
    "fingerprint": NULLABLE_STR,
    "kernel_host": NULLABLE_STR,
}
NOTEBOOK = _obj(
    ("notebook_id", "kernel_status", "active", "parked"),
    notebook_id=STR,
    path=NULLABLE_STR,
    peers=_or_null(_list(STR)),
    kernel_status=STR,
    kernelspec=NULLABLE_STR,
    active=BOOL,
    parked=BOOL,
    **ENVIRONMENT,
)
TRUST = _obj(("status", "needs_approval"), status=STR, needs_approval=BOOL)

COMMON: dict[str, Schema] = {
    "notices": _list(NOTICE),
    "stale": BOOL,
    "as_of": STR,
    "error": STR,
    "code": STR,
    "next_call": STR,
}

_CONNECTED = _obj(
    ("notebook_id",),
    notebook_id=STR,
    path=NULLABLE_STR,
    cell_count=_or_null(INT),
    kernel_status=NULLABLE_STR,
    kernelspec=NULLABLE_STR,
    resumed=BOOL,
    switched_from=STR,
    kernel_refused=STR,
    **ENVIRONMENT,
)
_WITH_EXECUTION = {"cell_id": STR, "execution": EXECUTION}

SHAPES: dict[str, Schema] = {
    "list_active_notebooks": _obj(("notebooks",), notebooks=_list(NOTEBOOK)),
    "connect_notebook": _CONNECTED,
    "create_notebook": _obj(
        ("notebook_id",), notebook_id=STR, path={"type": "null"}, ephemeral=BOOL, runtime=STR
    ),
    "save_notebook": _obj(("notebook_id", "path"), notebook_id=STR, path=STR, working_dir=STR),
    "disconnect_notebook": _obj(("disconnected",), disconnected=STR),
    "get_cell": _obj(("cell",), cell=CELL),
    "get_all_cells": _obj(("cells", "total"), cells=_list(LISTED_CELL), total=INT),
    "create_cell": _obj(("cell_id", "index"), index=INT, **_WITH_EXECUTION),
    "set_cell": _obj(("cell_id",), **_WITH_EXECUTION),
    "replace_match": _obj(("cell_id",), **_WITH_EXECUTION),
    "replace_regex": _obj(("cell_id",), **_WITH_EXECUTION),
    "delete_cell": _obj(("deleted",), deleted=STR),
    "move_cell": _obj(("cell_id", "index"), cell_id=STR, index=INT),
    "execute_cell": _obj(("execution",), execution=EXECUTION),
    "get_results": _obj(("execution",), execution=EXECUTION),
    "view_outputs": _obj(("execution_id", "status"), execution_id=STR, status=NULLABLE_STR),
    "run_all_cells": _obj(("executions",), executions=_list(EXECUTION)),
    "interrupt_kernel": _obj(("interrupted",), interrupted=BOOL),
    "restart_kernel": _obj(
        ("restarted",), restarted=BOOL, moved=_obj(("from", "to"), **{"from": STR, "to": STR})
    ),
    "manage_dependencies": _obj(
        ("dependencies", "fingerprint", "trust"),
        dependencies=_list(STR),
        fingerprint=NULLABLE_STR,
        env_source=NULLABLE_STR,
        trust=TRUST,
        before=_list(STR),
        after=_list(STR),
        added=_list(STR),
        removed=_or_null({"type": "object"}),
        apply=_or_null({"type": "object"}),
    ),
    "show_notebook": _obj(
        ("url", "notebook_id", "path", "opened_browser"),
        url=STR,
        notebook_id=STR,
        path=STR,
        opened_browser=BOOL,
        browser_reason={**STR, "description": "Why no browser was opened, when none was."},
    ),
    "clear_outputs": _obj(("cleared",), cleared=_list(STR)),
    "add_cell_tags": _obj(("cell_id", "tags"), cell_id=STR, tags=_list(STR)),
    "remove_cell_tags": _obj(("cell_id", "tags"), cell_id=STR, tags=_list(STR)),
    "reconnect": _obj(("restarted",), restarted=BOOL, restarts=INT),
}


def output_schema(tool: str) -> Schema:
    """``tool``'s outputSchema: its own shape, or a failure's, either with the common fields."""
    shape = SHAPES[tool]
    return {
        "type": "object",
        "properties": {**shape["properties"], **COMMON},
        "anyOf": [{"required": shape.get("required", [])}, {"required": ["error"]}],
    }
