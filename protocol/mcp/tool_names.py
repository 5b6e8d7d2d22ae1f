"""Every MCP tool's name, as the code that routes a call names it.

``tools.py`` describes each tool under the same name; a test checks that the two lists
agree. The supervisor reads a ``tools/call``'s name into a ``ToolName`` once, and the
session child gets it decoded as one (``ToolCallRequested``).
"""

from __future__ import annotations

from enum import StrEnum


class ToolName(StrEnum):
    LIST_ACTIVE_NOTEBOOKS = "list_active_notebooks"
    CONNECT_NOTEBOOK = "connect_notebook"
    CREATE_NOTEBOOK = "create_notebook"
    SAVE_NOTEBOOK = "save_notebook"
    DISCONNECT_NOTEBOOK = "disconnect_notebook"
    GET_CELL = "get_cell"
    GET_ALL_CELLS = "get_all_cells"
    CREATE_CELL = "create_cell"
    SET_CELL = "set_cell"
    DELETE_CELL = "delete_cell"
    MOVE_CELL = "move_cell"
    EXECUTE_CELL = "execute_cell"
    RUN_ALL_CELLS = "run_all_cells"
    GET_RESULTS = "get_results"
    INTERRUPT_KERNEL = "interrupt_kernel"
    RESTART_KERNEL = "restart_kernel"
    MANAGE_DEPENDENCIES = "manage_dependencies"
    REPLACE_MATCH = "replace_match"
    REPLACE_REGEX = "replace_regex"
    SHOW_NOTEBOOK = "show_notebook"
    CLEAR_OUTPUTS = "clear_outputs"
    ADD_CELL_TAGS = "add_cell_tags"
    REMOVE_CELL_TAGS = "remove_cell_tags"
    VIEW_OUTPUTS = "view_outputs"
    """Only for the MCP App's page (``visibility: ["app"]``, ``mcp_apps.py``)."""
    RECONNECT = "reconnect"
    """Carried out by the supervisor itself; it never reaches the session child."""
