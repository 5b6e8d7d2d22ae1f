"""Strings that name a kind, a state or a source become enums once, where they are read;
and every tool the catalogue offers has exactly one handler."""

from __future__ import annotations

import pickle

import pytest

from nbstage.actors.session.tool_handlers import SESSION_TOOLS
from nbstage.protocol.common.codec import from_wire, to_wire
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.daemon.dependency_modes import (
    ApplyDependencies,
)
from nbstage.protocol.daemon.replies import DependenciesApplied
from nbstage.protocol.daemon_actors.kernel_facts import EnvironmentView, EnvSource, KernelState
from nbstage.protocol.daemon_actors.rooms import RoomStatus
from nbstage.protocol.mcp.tool_names import ToolName
from nbstage.protocol.mcp.tools import RECONNECT, TOOLS_BY_NAME
from nbstage.protocol.session.supervision import ToolCallRequested

MANAGER_TOOLS = {
    ToolName.CONNECT_NOTEBOOK,
    ToolName.CREATE_NOTEBOOK,
    ToolName.DISCONNECT_NOTEBOOK,
    ToolName.LIST_ACTIVE_NOTEBOOKS,
}
"""The tools the session manager answers itself (its ``match`` on the tool name)."""


def test_the_tool_names_are_the_catalogue_s() -> None:
    assert set(ToolName) == set(TOOLS_BY_NAME)
    assert RECONNECT.name == ToolName.RECONNECT


def test_every_catalogued_tool_has_one_handler_and_every_handler_a_tool() -> None:
    assert not MANAGER_TOOLS & set(SESSION_TOOLS)
    assert ToolName.RECONNECT not in {*SESSION_TOOLS, *MANAGER_TOOLS}
    assert {*SESSION_TOOLS, *MANAGER_TOOLS, ToolName.RECONNECT} == set(ToolName)


def test_a_tool_call_reaches_the_session_child_with_its_name_read_once() -> None:
    call = ToolCallRequested("c1", ToolName.GET_CELL, {"cell_id": "a"}, "key")
    decoded = from_wire(ToolCallRequested, to_wire(call))
    assert decoded.name is ToolName.GET_CELL
    with pytest.raises(NbstageError, match="'name'"):
        from_wire(ToolCallRequested, {**to_wire(call), "name": "get_cel"})


@pytest.mark.parametrize("source", list(EnvSource))
def test_an_environment_s_source_is_read_from_the_wire_as_its_enum(source: EnvSource) -> None:
    view = from_wire(EnvironmentView, {"source": source.value, "path": "/env"})
    assert view.source is source
    assert to_wire(view) == {"source": source.value, "path": "/env"}


def test_an_environment_of_no_known_source_is_refused_where_it_is_read() -> None:
    with pytest.raises(NbstageError) as raised:
        from_wire(EnvironmentView, {"source": "conda"})
    assert raised.value.code is ErrorCode.BAD_REQUEST
    assert "'source'" in raised.value.message


def test_a_room_status_keeps_its_kernel_state_through_a_pickle() -> None:
    status = RoomStatus("nb", None, False, (), KernelState.IDLE, None, None)
    assert pickle.loads(pickle.dumps(status)).kernel_status is KernelState.IDLE


def test_an_applied_dependency_edit_s_mode_is_read_from_the_wire_as_its_enum() -> None:
    wire = {"mode": "restart", "ok": True, "seconds": 1.5}
    assert from_wire(DependenciesApplied, wire).mode is ApplyDependencies.RESTART
    with pytest.raises(NbstageError, match="'mode'"):
        from_wire(DependenciesApplied, {**wire, "mode": "reboot"})
