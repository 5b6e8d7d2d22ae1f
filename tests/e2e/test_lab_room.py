"""A person in a room, over the daemon socket (protocol/lab.py): a headless pycrdt
client sees the agent's edits and outputs, and its edits reach the agent's get_cell,
journalled; a malformed message is refused and the room carries on."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonError
from tests.conftest import FAST_SETTINGS, daemon_of_a_module
from tests.support import RunningDaemon, daemon_running
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


def test_an_idle_shared_document_is_frozen_and_a_returning_person_goes_on(
    tmp_path: Path,
) -> None:
    """Nobody watching for shared_doc_idle_secs: the room keeps the Y document as its
    compressed update; the next join makes it again with the same history, so a person
    who held it syncs the agent's edits made meanwhile, each cell once."""
    settings = {**FAST_SETTINGS, "NBSTAGE_SHARED_DOC_IDLE_SECS": "0.2"}
    path = tmp_path / "idle.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"x = {i}") for i in range(20)]
    nbformat.write(nb, path)
    with (
        daemon_running(tmp_path / "state", settings) as daemon,
        daemon.client(timeout=20) as agent,
    ):
        notebook_id = agent.request("open", path=str(path), peer_label="agent")["notebook_id"]

        def shared_doc() -> dict:
            described = agent.request("describe_room", notebook_id=notebook_id)
            return described["shared_doc"]

        with daemon.client(timeout=20) as socket:
            person = SocketPerson(socket, notebook_id)
            assert shared_doc()["state"] == "live"
            session = person.session
        deadline = time.monotonic() + 20
        while (frozen := shared_doc())["state"] != "frozen":
            assert time.monotonic() < deadline, f"not frozen: {frozen}"
            time.sleep(0.05)
        assert 0 < frozen["frozen_bytes"] < path.stat().st_size

        first = person.cells()[0]["id"]
        made = agent.request("create_cell", notebook_id=notebook_id, source="made while frozen")
        agent.request("set_cell", notebook_id=notebook_id, cell_id=first, source="x = -1")
        with daemon.client(timeout=20) as socket:
            person.join(socket)
            assert person.session == session
            person.wait_until(lambda: person.cell(made["cell_id"]) is not None)
            shown = agent.request("get_cells", notebook_id=notebook_id, format="json")
            expected = [(c["id"], c["source"]) for c in shown["cells"]]
            assert [(c["id"], c["source"]) for c in person.cells()] == expected
            assert person.cell(first)["source"] == "x = -1"
            assert shared_doc()["state"] == "live"
