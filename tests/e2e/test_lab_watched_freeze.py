"""A watched document frozen while idle (ADR 0004, item 19), through real processes: a
real `nbstage lab` and its daemon with a short ``shared_doc_idle_secs``, a headless Y
client on the room's websocket that stays connected while the room freezes its document,
and an agent on the daemon socket. The client's awareness renewal does not thaw the
document; a change of its awareness state (a cursor moved), the agent's edit and the
client's typing each thaw it, and reach the other side; no cell
doubles, and the agent's awareness state is there throughout. Then the same with a real
page in headless Chromium, whose own awareness renewal (every 15 s) is answered and
leaves the document frozen, and whose provider keeps its connection."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pycrdt import Awareness, Doc, create_awareness_message

from nbstage.entrypoints.control.daemon_client import DaemonClient
from nbstage.protocol.session.lab_wanted import notebook_url
from tests.headless_chromium import INSTALL, MISSING, headless_chromium
from tests.lab_support import RunningLab, WsPerson, lab_running
from tests.support import wait_until

pytestmark = pytest.mark.e2e

IDLE_SECS = 0.5
QUERY_AWARENESS = b"\x03"


@pytest.fixture(scope="module")
def lab() -> Iterator[RunningLab]:
    with lab_running({"NBSTAGE_SHARED_DOC_IDLE_SECS": str(IDLE_SECS)}) as running:
        yield running


def _state(agent: DaemonClient, notebook_id: str) -> str:
    state: str = agent.request("describe_room", notebook_id=notebook_id)["shared_doc"]["state"]
    return state


def _frozen(agent: DaemonClient, notebook_id: str) -> None:
    wait_until(lambda: _state(agent, notebook_id) == "frozen", 30, "the watched doc to freeze")


def _y_shape(person: WsPerson) -> list[tuple[Any, str]]:
    """The Y cells as they are, duplicates included (YNotebook.get hides exact ones)."""
    return [(c.get("id"), str(c.get("source"))) for c in person.notebook.ycells.to_py()]


def _agent_shape(agent: DaemonClient, notebook_id: str) -> list[tuple[Any, str]]:
    cells = agent.request("get_cells", notebook_id=notebook_id, format="json")["cells"]
    return [(c["id"], c["source"]) for c in cells]


def _marked_by(person: WsPerson, label: str) -> list[str | None]:
    return [a["nbstage"]["cell_id"] for a in person.agents() if a["user"]["name"] == label]


def test_a_watched_idle_document_freezes_and_thaws_for_either_side(lab: RunningLab) -> None:
    name = "watched-freeze.ipynb"
    lab.notebook(name, "x = 1", "y = 2")
    person = WsPerson(lab, name)
    try:
        person.synced()
        with lab.daemon.client(timeout=30) as agent:
            notebook_id = person.notebook_id
            agent.request("attach", notebook_id=notebook_id, peer_label="claude (test)")
            first = person.cells()[0]["id"]
            agent.request("set_cell", notebook_id=notebook_id, cell_id=first, source="x = 10")
            person.wait_until(lambda: _marked_by(person, "claude (test)") == [first])

            _frozen(agent, notebook_id)
            # The browser's own awareness, renewed as Lab's provider does, and a query
            # for everyone's: answered from the awareness kept, the document stays frozen.
            mine = Awareness(Doc())
            mine.set_local_state({"user": {"name": "the person"}})
            person._send(create_awareness_message(mine.encode_awareness_update([mine.client_id])))
            person.awareness = Awareness(person.notebook.ydoc)
            person._send(QUERY_AWARENESS)
            person.wait_until(lambda: _marked_by(person, "claude (test)") == [first])
            assert _state(agent, notebook_id) == "frozen"

            # The person's cursor moves, as Lab's does before a keystroke: their state
            # changed, and that alone, with no sync message, thaws the document.
            mine.set_local_state({"user": {"name": "the person"}, "cursors": [{"head": 2}]})
            person._send(create_awareness_message(mine.encode_awareness_update([mine.client_id])))
            wait_until(lambda: _state(agent, notebook_id) == "live", 30, "the thaw ahead")
            _frozen(agent, notebook_id)

            made = agent.request("create_cell", notebook_id=notebook_id, source="z = 3")
            person.wait_until(lambda: person.cell(made["cell_id"]) is not None)
            person.wait_until(lambda: _marked_by(person, "claude (test)") == [made["cell_id"]])
            assert _y_shape(person) == _agent_shape(agent, notebook_id)

            _frozen(agent, notebook_id)
            person.type_into(first, " + 5")
            person.flush()
            wait_until(
                lambda: (
                    agent.request("get_cell", notebook_id=notebook_id, cell_id=first)["cell"][
                        "source"
                    ]
                    == "x = 10 + 5"
                ),
                30,
                "the person's typing to reach the agent",
            )

            _frozen(agent, notebook_id)
            made_again = agent.request("create_cell", notebook_id=notebook_id, source="w = 4")
            person.wait_until(
                lambda: _marked_by(person, "claude (test)") == [made_again["cell_id"]]
            )
            shape = _y_shape(person)
            assert shape == _agent_shape(agent, notebook_id)
            assert len({cell_id for cell_id, _ in shape}) == len(shape) == 4
    finally:
        person.close()


def test_awareness_renewed_faster_than_the_period_leaves_it_to_freeze(lab: RunningLab) -> None:
    """Lab's provider renews its awareness twice a period at the default 30 s; here a
    renewal at every look at the room's state, many a period: they are not activity,
    and the live document freezes under them."""
    name = "renewed-freeze.ipynb"
    lab.notebook(name, "x = 1")
    person = WsPerson(lab, name)
    try:
        person.synced()
        with lab.daemon.client(timeout=30) as agent:
            notebook_id = person.notebook_id
            mine = Awareness(Doc())

            def renewed_and_frozen() -> bool:
                mine.set_local_state({"user": {"name": "the person"}})
                person._send(
                    create_awareness_message(mine.encode_awareness_update([mine.client_id]))
                )
                return _state(agent, notebook_id) == "frozen"

            wait_until(renewed_and_frozen, 30, "the watched doc to freeze under renewals")
    finally:
        person.close()


def _cell_texts(driver: Any) -> list[str]:
    script = "return [...document.querySelectorAll(arguments[0])].map(e => e.innerText.trim())"
    return list(driver.execute_script(script, ".jp-Notebook .jp-Cell"))


def _page_clock(watcher: WsPerson) -> int:
    """The clock of the page's awareness state, as another person in the room holds it
    (-1 before it has one): it moves at each of the page's renewals, relayed by the room."""
    clocks = [
        watcher.awareness.meta[client]["clock"]
        for client, state in watcher.awareness.states.items()
        if "user" in state and "nbstage" not in state and client != watcher.awareness.client_id
    ]
    return max(clocks, default=-1)


@pytest.mark.skipif(MISSING, reason=INSTALL)
def test_a_page_in_chromium_stays_on_a_document_frozen_under_it(lab: RunningLab) -> None:
    from selenium.webdriver.common.by import By

    path = lab.notebook("watched-in-chromium.ipynb", "first = 1")
    watcher = WsPerson(lab, path.name)
    try:
        watcher.synced()
        with headless_chromium() as browser, lab.daemon.client(timeout=60) as agent:
            notebook_id = watcher.notebook_id
            agent.request("attach", notebook_id=notebook_id, peer_label="claude (test)")
            browser.get(
                notebook_url({"port": lab.port, "root": str(lab.root)}, str(path), lab.token)
            )
            wait_until(lambda: any("first = 1" in t for t in _cell_texts(browser)), 60, "the cell")
            watcher.wait_until(lambda: _page_clock(watcher) >= 0, 30)
            _frozen(agent, notebook_id)
            renewed = _page_clock(watcher)
            watcher.wait_until(lambda: _page_clock(watcher) > renewed, 30)
            assert _state(agent, notebook_id) == "frozen", "the page's renewal thawed it"

            made = agent.request("create_cell", notebook_id=notebook_id, source="print('thawed')")
            wait_until(
                lambda: any("thawed" in t for t in _cell_texts(browser)), 30, "the agent's cell"
            )
            _frozen(agent, notebook_id)
            editor = browser.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell .cm-content")[0]
            editor.click()
            editor.send_keys(" + 41")
            first = agent.request("get_cells", notebook_id=notebook_id)["cells"][0]["cell_id"]
            wait_until(
                lambda: (
                    "first = 1 + 41"
                    in agent.request("get_cell", notebook_id=notebook_id, cell_id=first)["cell"][
                        "source"
                    ]
                ),
                30,
                "the page's typing in the agent's get_cell",
            )
            shape = _agent_shape(agent, notebook_id)
            assert [cell_id for cell_id, _ in shape] == [first, made["cell_id"]]
            watcher.wait_until(lambda: _y_shape(watcher) == _agent_shape(agent, notebook_id))
    finally:
        watcher.close()
