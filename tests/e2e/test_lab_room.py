"""A person in a room, over the daemon socket (protocol/lab.py): a headless pycrdt
client sees the agent's edits and outputs, and its edits reach the agent's get_cell,
journalled; a malformed message is refused and the room carries on."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonError
from tests.conftest import daemon_of_a_module
from tests.support import RunningDaemon
from tests.y_person import SocketPerson


@pytest.fixture(scope="module")
def daemon() -> Iterator[RunningDaemon]:
    with daemon_of_a_module() as running:
        yield running


@pytest.fixture
def room(daemon: RunningDaemon, tmp_path: Path) -> Iterator[tuple[DaemonClient, str]]:
    path = tmp_path / "shared.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("x = 1"))
    nbformat.write(nb, path)
    with daemon.client(timeout=20) as agent:
        joined = agent.request("open", path=str(path), peer_label="agent")
        yield agent, joined["notebook_id"]


def test_the_person_sees_the_rooms_cells_and_the_agents_edits(daemon, room) -> None:
    agent, notebook_id = room
    with daemon.client(timeout=20) as socket:
        person = SocketPerson(socket, notebook_id)
        assert [c["source"] for c in person.cells()] == ["x = 1"]
        made = agent.request("create_cell", notebook_id=notebook_id, source="y = 2")
        person.wait_until(lambda: person.cell(made["cell_id"]) is not None)
        agent.request("set_cell", notebook_id=notebook_id, cell_id=made["cell_id"], source="y = 3")
        person.wait_until(lambda: person.cell(made["cell_id"])["source"] == "y = 3")


def test_a_persons_typing_reaches_the_agents_get_cell(daemon, room) -> None:
    agent, notebook_id = room
    with daemon.client(timeout=20) as socket:
        person = SocketPerson(socket, notebook_id)
        cell_id = person.cells()[0]["id"]
        person.type_into(cell_id, " + 41")
        person.flush()
        shown = agent.request("get_cell", notebook_id=notebook_id, cell_id=cell_id)
        assert shown["cell"]["source"] == "x = 1 + 41"
        assert [n["kind"] for n in agent.notices] == ["person_edited"]
        assert cell_id in agent.notices[0]["message"]


def test_outputs_and_the_execution_count_reach_the_person(daemon, room) -> None:
    agent, notebook_id = room
    with daemon.client(timeout=60) as socket:
        person = SocketPerson(socket, notebook_id)
        made = agent.request("create_cell", notebook_id=notebook_id, source="print('hi')")
        agent.request("execute", notebook_id=notebook_id, cell_id=made["cell_id"], wait_secs=50)
        person.wait_until(lambda: (person.cell(made["cell_id"]) or {}).get("execution_count"))
        cell = person.cell(made["cell_id"])
        assert [o.get("text") for o in cell["outputs"]] == ["hi\n"]


def test_a_malformed_message_is_refused_and_the_room_carries_on(daemon, room) -> None:
    agent, notebook_id = room
    with daemon.client(timeout=20) as first, daemon.client(timeout=20) as second:
        bad, good = SocketPerson(first, notebook_id), SocketPerson(second, notebook_id)
        with pytest.raises(DaemonError, match="Not a Y message"):
            bad.ask("lab_message", data=base64.b64encode(b"\x00\x02\x05\xff\xff").decode())
        with pytest.raises(DaemonError, match="base64"):
            bad.ask("lab_message", data="not base64!")
        made = agent.request("create_cell", notebook_id=notebook_id, source="z = 0")
        good.wait_until(lambda: good.cell(made["cell_id"]) is not None)
        bad.wait_until(lambda: bad.cell(made["cell_id"]) is not None)


def test_a_persons_edit_is_relayed_to_the_other_person(daemon, room) -> None:
    _, notebook_id = room
    with daemon.client(timeout=20) as first, daemon.client(timeout=20) as second:
        typist, watcher = SocketPerson(first, notebook_id), SocketPerson(second, notebook_id)
        cell_id = typist.cells()[0]["id"]
        typist.type_into(cell_id, "0")
        typist.flush()
        watcher.wait_until(lambda: watcher.cell(cell_id)["source"] == "x = 10")
