"""A real `nbstage lab` and a headless Y client on its room websocket, as JupyterLab's
front end connects: the agent's edits, outputs and counts reach the client; the
client's typing reaches the agent's get_cell; bad tokens and bad messages are refused
and the room carries on."""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import anyio
import jsonschema
import nbformat
import psutil
import pytest
from jupyter_client.session import Session
from jupyter_server.services.kernels.connection.base import (
    deserialize_msg_from_ws_v1,
    serialize_msg_to_ws_v1,
)
from pycrdt import Awareness, Decoder, Doc, YMessageType
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from nbstage.entrypoints.lab.kernel_frames import V1
from tests.lab_support import RunningLab, WsPerson
from tests.support import McpClientSession, call_ok, run_cli, wait_until


def _agent_sees(lab: RunningLab, notebook_id: str, cell_id: str, source: str) -> bool:
    shown = lab.daemon.request("get_cell", notebook_id=notebook_id, cell_id=cell_id)
    return shown["cell"]["source"] == source


@pytest.fixture
def person(lab: RunningLab, request: pytest.FixtureRequest):
    name = f"{request.node.name[:40]}.ipynb"
    lab.notebook(name, "x = 1")
    person = WsPerson(lab, name)
    person.synced()
    yield person
    person.close()


def test_the_agents_new_and_changed_cells_reach_the_client(lab, person) -> None:
    with lab.daemon.client() as agent:
        agent.request("attach", notebook_id=person.notebook_id, peer_label="agent")
        made = agent.request("create_cell", notebook_id=person.notebook_id, source="y = 2")
        person.wait_until(lambda: person.cell(made["cell_id"]) is not None)
        agent.request(
            "set_cell", notebook_id=person.notebook_id, cell_id=made["cell_id"], source="y = 3"
        )
        person.wait_until(lambda: person.cell(made["cell_id"])["source"] == "y = 3")


def test_the_clients_typing_reaches_the_agents_get_cell(lab, person) -> None:
    cell_id = person.cells()[0]["id"]
    person.type_into(cell_id, " + 41")
    person.flush()
    deadline = time.monotonic() + 5
    while not _agent_sees(lab, person.notebook_id, cell_id, "x = 1 + 41"):
        assert time.monotonic() < deadline, "the agent never saw the person's typing"


def test_outputs_and_the_count_reach_the_client_after_execute(lab, person) -> None:
    with lab.daemon.client(timeout=90) as agent:
        agent.request("attach", notebook_id=person.notebook_id, peer_label="agent")
        cell_id = person.cells()[0]["id"]
        agent.request(
            "set_cell", notebook_id=person.notebook_id, cell_id=cell_id, source="print(7)"
        )
        agent.request("execute", notebook_id=person.notebook_id, cell_id=cell_id, wait_secs=80)
        person.wait_until(lambda: person.cell(cell_id)["execution_count"] is not None, 30)
        assert [o.get("text") for o in person.cell(cell_id)["outputs"]] == ["7\n"]


@pytest.mark.parametrize("token", ["", "wrong"], ids=["missing", "wrong"])
def test_a_wrong_or_missing_token_is_refused(lab, person, token) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        lab.session(f"{person.notebook_id}.ipynb", token=token)
    refused.value.close()
    assert refused.value.code == 403
    url = f"ws://127.0.0.1:{lab.port}/api/collaboration/room/json:notebook:{person.notebook_id}"
    headers = {"Authorization": f"token {token}"} if token else {}
    with pytest.raises(HTTPClientError) as closed:
        person._run(lambda: websocket_connect(HTTPRequest(url, headers=headers)))
    assert closed.value.code == 403


def test_another_origin_is_refused(lab, person) -> None:
    """A page of another origin holding the browser's login cookie cannot join a room."""
    with urllib.request.urlopen(f"{lab.base}/lab?token={lab.token}", timeout=30) as page:
        cookies = [c.split(";", 1)[0] for c in page.headers.get_all("Set-Cookie")]
    url = f"ws://127.0.0.1:{lab.port}/api/collaboration/room/json:notebook:{person.notebook_id}"
    own = {"Cookie": "; ".join(cookies), "Origin": lab.base}
    person._run(lambda: websocket_connect(HTTPRequest(url, headers=own))).close()
    headers = {**own, "Origin": "http://evil.example"}
    with pytest.raises(HTTPClientError) as refused:
        person._run(lambda: websocket_connect(HTTPRequest(url, headers=headers)))
    assert refused.value.code == 403


def test_a_malformed_message_closes_that_socket_and_the_room_carries_on(lab, person) -> None:
    name = f"{person.notebook_id}-bad.ipynb"
    lab.notebook(name, "a = 1")
    bad, good = WsPerson(lab, name), WsPerson(lab, name)
    try:
        bad.synced()
        good.synced()
        bad._send(b"\x00\x02\x05\xff\xff")
        with pytest.raises(ConnectionError, match="4400"):
            bad.wait_until(lambda: False)
        with lab.daemon.client() as agent:
            agent.request("attach", notebook_id=good.notebook_id, peer_label="agent")
            made = agent.request("create_cell", notebook_id=good.notebook_id, source="b = 2")
        good.wait_until(lambda: good.cell(made["cell_id"]) is not None)
    finally:
        bad.close()
        good.close()


def _browser_that_notes(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$BROWSER, for the `nbstage mcp` the test starts next, as a script that writes the URL
    it is given to the file returned, and a display (X's, by name), outside CI, with the
    setting on (tests/conftest.py turns it off for every other test)."""
    noted = folder / "opened"
    browser = folder / "browser"
    browser.write_text(f'#!/bin/sh\necho "$1" > {noted}\n')
    browser.chmod(0o755)
    monkeypatch.setenv("BROWSER", str(browser))
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("NBSTAGE_LAB_OPEN_BROWSER", "1")
    return noted


def test_show_notebook_gives_a_url_that_opens_the_notebook_in_lab(lab, monkeypatch) -> None:
    """Through a real `nbstage mcp` on Lab's state dir: the url names the notebook under
    Lab's root with the token, and Lab serves that page with it (without, its login page).
    The person turned the browser off: none is opened, and the result says so."""
    path = lab.notebook("shown.ipynb", "print('shown')")
    folder = tempfile.TemporaryDirectory(prefix="nbs-browser-")
    noted = _browser_that_notes(Path(folder.name), monkeypatch)
    monkeypatch.setenv("NBSTAGE_LAB_OPEN_BROWSER", "0")

    async def body() -> None:
        async with McpClientSession(lab.daemon, "legacy", "agent", lab.root) as client:
            await call_ok(client, "connect_notebook", path=str(path))
            shown = await call_ok(client, "show_notebook")
            listed = await client.list_tools()
            schema = next(t.output_schema for t in listed.tools if t.name == "show_notebook")
            jsonschema.validate(shown, schema)
            assert shown["path"] == str(path)
            assert shown["url"] == f"{lab.base}/lab/tree/shown.ipynb?token={lab.token}"
            with urllib.request.urlopen(shown["url"], timeout=30) as page:
                assert page.status == 200
            with urllib.request.urlopen(shown["url"].split("?")[0], timeout=30) as page:
                assert "/login" in page.geturl()
            assert shown["opened_browser"] is False
            assert shown["browser_reason"].startswith("turned off")

    with folder:
        anyio.run(body)
        assert not noted.exists()


@pytest.mark.parametrize("display", [True, False], ids=["display", "no-display"])
def test_show_notebook_opens_the_browser_where_a_display_is(lab, monkeypatch, display) -> None:
    """With a display, $BROWSER is run on the url (it notes it in a file); without one
    nothing runs, and the result says why."""
    path = lab.notebook(f"opened-{display}.ipynb", "1")
    folder = tempfile.TemporaryDirectory(prefix="nbs-browser-")
    noted = _browser_that_notes(Path(folder.name), monkeypatch)
    if not display:
        monkeypatch.delenv("DISPLAY")
        for name in ("SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY"):
            monkeypatch.delenv(name, raising=False)

    async def body() -> dict:
        async with McpClientSession(lab.daemon, "legacy", "agent", lab.root) as client:
            await call_ok(client, "connect_notebook", path=str(path))
            shown = await call_ok(client, "show_notebook")
            listed = await client.list_tools()
            schema = next(t.output_schema for t in listed.tools if t.name == "show_notebook")
            jsonschema.validate(shown, schema)
            return shown

    with folder:
        shown = anyio.run(body)
        assert shown["opened_browser"] is display
        if display:
            assert noted.read_text() == shown["url"] + "\n"
        else:
            assert shown["browser_reason"].startswith("no display")
            assert not noted.exists()


def test_a_page_holding_another_history_is_told_to_reload(lab) -> None:
    """A browser whose Y history is not the room's (the daemon restarted since it loaded)
    gets Jupyter's reloadable close instead of merging, which would double cells."""
    lab.notebook("stale.ipynb", "s = 1")
    stale = WsPerson(lab, "stale.ipynb", held="0" * 32)
    try:
        with pytest.raises(ConnectionError, match=r"1003.*reloadable"):
            stale.synced()
    finally:
        stale.close()
    fresh = WsPerson(lab, "stale.ipynb")
    try:
        fresh.synced()
        assert [c["source"] for c in fresh.cells()] == ["s = 1"]
    finally:
        fresh.close()


def test_a_cell_the_person_runs_runs_in_the_rooms_kernel(lab, person) -> None:
    """As Lab's front end runs a cell in server-side mode: the person types, then POSTs
    the cell to /api/kernels/<id>/execute. It runs in the room's kernel (the agent's next
    run sees its variable), its output is written once, and Lab started no kernel."""
    sessions = [s for s in lab.call("GET", "/api/sessions") if s["path"] == person.name]
    assert len(sessions) == 1, "the session PUT made Lab's kernel session for the notebook"
    cell_id = person.cells()[0]["id"]
    person.type_into(cell_id, "; answer = 42 * x; print(answer)")
    person.flush()
    document = f"json:notebook:{person.notebook_id}"
    kernel = sessions[0]["kernel"]["id"]
    ran = lab.call(
        "POST", f"/api/kernels/{kernel}/execute", {"cell_id": cell_id, "document_id": document}
    )
    assert ran["status"] == "done"
    person.wait_until(lambda: person.cell(cell_id)["execution_count"] == ran["execution_count"])
    assert [o.get("text") for o in person.cell(cell_id)["outputs"]] == ["42\n"]
    shown = lab.daemon.request("get_cell", notebook_id=person.notebook_id, cell_id=cell_id)
    assert [o.get("text") for o in shown["cell"]["outputs"]] == ["42\n"]
    with lab.daemon.client(timeout=90) as agent:
        agent.request("attach", notebook_id=person.notebook_id, peer_label="agent")
        made = agent.request("create_cell", notebook_id=person.notebook_id, source="print(answer)")
        after = agent.request(
            "execute", notebook_id=person.notebook_id, cell_id=made["cell_id"], wait_secs=80
        )
    assert [o.get("text") for o in after["execution"]["outputs"]] == ["42\n"]
    assert psutil.Process(lab.process.pid).children(recursive=True) == [], "Lab's own kernel"


def test_a_run_of_an_unknown_cell_or_room_is_refused(lab, person) -> None:
    document = f"json:notebook:{person.notebook_id}"
    for body, code in (
        ({"cell_id": "nope", "document_id": document}, 400),
        ({"cell_id": "nope", "document_id": "json:file:x"}, 404),
        ({"cell_id": 3}, 400),
    ):
        with pytest.raises(urllib.error.HTTPError) as refused:
            lab.call("POST", "/api/kernels/any/execute", body)
        refused.value.close()
        assert refused.value.code == code, body


def test_the_agent_is_a_collaborator_marking_its_cell(lab, person) -> None:
    """The room publishes an awareness state for the agent, under its label, with a
    cursor at the start of the cell it last edited, which Lab draws as the agent's flag;
    Lab's global awareness room (its collaborators panel) lists the agent at the notebook,
    to a browser that joins it later too; both states go when the agent leaves."""

    def marked(cell_id: str) -> bool:
        return any(
            a["user"]["name"] == "claude (test)" and a["nbstage"]["cell_id"] == cell_id
            for a in person.agents()
        )

    with lab.daemon.client() as agent:
        agent.request("attach", notebook_id=person.notebook_id, peer_label="claude (test)")
        made = agent.request("create_cell", notebook_id=person.notebook_id, source="z = 3")
        person.wait_until(lambda: marked(made["cell_id"]))
        ycell = next(c for c in person.notebook.ycells if c["id"] == made["cell_id"])
        (state,) = person.agents()
        assert state["cursors"][0]["head"] == ycell["source"].sticky_index(0).to_json()
        first = person.cells()[0]["id"]
        agent.request("set_cell", notebook_id=person.notebook_id, cell_id=first, source="x = 2")
        person.wait_until(lambda: marked(first))
        panel = GlobalAwareness(lab, person)
        try:
            panel.wait_until(
                lambda: (
                    [(s["user"]["name"], s["current"]) for s in panel.states()]
                    == [("claude (test)", f"notebook:{person.name}")]
                )
            )
        except BaseException:
            panel.close()
            raise
    try:
        person.wait_until(lambda: person.agents() == [])
        panel.wait_until(lambda: panel.states() == [])
    finally:
        panel.close()


class GlobalAwareness:
    """Lab's global awareness room as a browser's collaborators panel joins it."""

    def __init__(self, lab: RunningLab, person: WsPerson) -> None:
        self.person, self.awareness = person, Awareness(Doc())
        url = f"ws://127.0.0.1:{lab.port}/api/collaboration/room/JupyterLab:globalAwareness"
        request = HTTPRequest(url, headers={"Authorization": f"token {lab.token}"})
        self.ws = person._run(lambda: websocket_connect(request))

    def states(self) -> list[dict]:
        mine = self.awareness.client_id
        return [s for c, s in self.awareness.states.items() if c != mine]

    def wait_until(self, seen, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while not seen():
            assert time.monotonic() < deadline, f"not seen; states: {self.states()}"
            try:
                message = self.person._run(self.ws.read_message, deadline - time.monotonic())
            except TimeoutError:
                continue
            assert message is not None, "the global awareness room closed"
            if message[:1] == bytes([YMessageType.AWARENESS]):
                decoder = Decoder(message)
                decoder.read_var_uint()
                self.awareness.apply_awareness_update(decoder.read_message(), "lab")

    def close(self) -> None:
        self.ws.close()


def test_the_consoles_room_lists_the_people_and_the_agents(lab, person) -> None:
    """`nbstage admin room ID`, the real CLI: the person watching in Lab under "people",
    the agent under "agents"."""
    with lab.daemon.client() as agent:
        agent.request("attach", notebook_id=person.notebook_id, peer_label="claude (test)")
        shown = run_cli(
            "admin",
            "room",
            person.notebook_id,
            state_dir=lab.daemon.paths.root,
            env={**lab.daemon.env, "COLUMNS": "100"},
        )
        described = run_cli(
            "admin",
            "room",
            person.notebook_id,
            "--json",
            state_dir=lab.daemon.paths.root,
            env=lab.daemon.env,
        )
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    agents, people = lines.index("agents          1"), lines.index("people          1")
    assert "claude (test)" in lines[agents + 1]
    assert "person (JupyterLab)" in lines[people + 1]
    kinds = {p["label"]: p["kind"] for p in json.loads(described.stdout)["peers"]}
    assert kinds == {"claude (test)": "agent", "person (JupyterLab)": "person"}


def test_labs_interrupt_button_interrupts_the_rooms_kernel(lab, person) -> None:
    """Lab's interrupt (POST /api/kernels/<stand-in>/interrupt) reaches the room's kernel:
    the agent's long run ends with KeyboardInterrupt."""
    (session,) = [s for s in lab.call("GET", "/api/sessions") if s["path"] == person.name]
    sleeping = lab.root / f"{person.name}.sleeping"
    source = f"import pathlib, time\npathlib.Path({str(sleeping)!r}).touch()\ntime.sleep(60)"
    with lab.daemon.client(timeout=90) as agent:
        agent.request("attach", notebook_id=person.notebook_id, peer_label="agent")
        made = agent.request("create_cell", notebook_id=person.notebook_id, source=source)
        run = agent.request(
            "execute", notebook_id=person.notebook_id, cell_id=made["cell_id"], wait_secs=0
        )
        wait_until(sleeping.exists, 60, "the cell to start sleeping")
        lab.call("POST", f"/api/kernels/{session['kernel']['id']}/interrupt")
        ended = agent.request(
            "get_execution",
            notebook_id=person.notebook_id,
            execution_id=run["execution"]["execution_id"],
            wait_secs=30,
        )["execution"]
    assert ended["status"] == "error"
    assert [o.get("ename") for o in ended["outputs"]] == ["KeyboardInterrupt"]


def test_the_page_config_lab_serves_turns_off_the_news_and_runs_cells_on_the_server(lab) -> None:
    """What the front end reads, from the page itself: the announcements plugin (news and
    update checks over the network) and the plugins a room's view does without
    disabled, server-side execution on."""
    with urllib.request.urlopen(f"{lab.base}/lab?token={lab.token}", timeout=30) as page:
        html = page.read().decode()
    start = html.index('id="jupyter-config-data"')
    body = html[html.index(">", start) + 1 : html.index("</script>", start)]
    config = json.loads(body)
    assert "@jupyterlab/apputils-extension:announcements" in config["disabledExtensions"]
    assert "@jupyterlab/debugger-extension" in config["disabledExtensions"]
    assert config["serverSideExecution"] is True


def test_a_notebooks_page_prepares_it_before_the_front_end_asks(lab) -> None:
    """The page of a notebook (show_notebook's url is one): the notebook is put in the
    page's workspace as its current tab and its room's shared document is built, before
    Lab's front end asks for either (tree_page.py); the export formats Lab asks for at
    every notebook come from the list made once (export_formats.py)."""
    path = lab.notebook("page-asked.ipynb", "x = 1")
    url = f"{lab.base}/lab/workspaces/asked/tree/page-asked.ipynb?token={lab.token}"
    with urllib.request.urlopen(url, timeout=30) as page:
        assert page.status == 200
    main = lab.call("GET", "/lab/api/workspaces/asked")["data"]["layout-restorer:data"]["main"]
    assert main["current"] == "notebook:page-asked.ipynb"
    assert main["dock"]["widgets"] == ["notebook:page-asked.ipynb"]
    with lab.daemon.client(timeout=30) as agent:
        notebook_id = agent.request("open", path=str(path), peer_label="agent")["notebook_id"]

        def shared_doc() -> str:
            described = agent.request("describe_room", notebook_id=notebook_id)
            return str((described.get("shared_doc") or {}).get("state", "none"))

        wait_until(lambda: shared_doc() != "none", 30, "the shared document built")
    assert lab.call("GET", "/api/nbconvert")["html"] == {"output_mimetype": "text/html"}


class KernelChannels:
    """Lab's kernel websocket for a notebook's stand-in, as its completer and tooltip
    speak on it: the legacy JSON protocol when ``protocol`` is None, else the one offered
    (jupyter_server's own helpers frame v1, as Lab's front end frames it)."""

    def __init__(self, lab: RunningLab, person: WsPerson, protocol: str | None = None) -> None:
        (session,) = [s for s in lab.call("GET", "/api/sessions") if s["path"] == person.name]
        url = f"ws://127.0.0.1:{lab.port}/api/kernels/{session['kernel']['id']}/channels"
        self.request = HTTPRequest(url, headers={"Authorization": f"token {lab.token}"})
        self.protocol = protocol
        self.session = Session()

    async def connect(self):
        ws = await websocket_connect(
            self.request, subprotocols=[self.protocol] * bool(self.protocol)
        )
        assert ws.selected_subprotocol == self.protocol
        return ws

    def frame(self, msg_type: str, content: dict) -> tuple[str, str | bytes]:
        """A request's msg_id, and the request framed in this socket's protocol."""
        header = {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "session": "t"}
        header |= {"username": "t", "version": "5.3", "date": ""}
        msg = {"header": header, "parent_header": {}, "metadata": {}, "content": content}
        if self.protocol == V1:
            return header["msg_id"], serialize_msg_to_ws_v1(msg, "shell", self.session.pack)
        return header["msg_id"], json.dumps(msg | {"channel": "shell", "buffers": []})

    def heard(self, raw: str | bytes) -> dict:
        if self.protocol == V1:
            assert isinstance(raw, bytes), raw
            channel, parts = deserialize_msg_from_ws_v1(raw)
            names = ("header", "parent_header", "metadata", "content")
            return {"channel": channel} | dict(
                zip(names, map(self.session.unpack, parts), strict=True)
            )
        assert isinstance(raw, str), raw
        return dict(json.loads(raw))

    async def reply(self, ws, msg_type: str, content: dict) -> dict:
        msg_id, request = self.frame(msg_type, content)
        await ws.write_message(request, binary=isinstance(request, bytes))
        while True:
            raw = await asyncio.wait_for(ws.read_message(), 30)
            assert raw is not None, "the kernel websocket closed"
            heard = self.heard(raw)
            if heard["parent_header"].get("msg_id") == msg_id and heard["channel"] == "shell":
                return heard

    @staticmethod
    async def close(ws) -> None:
        """Close and wait for the server's close, so no socket is left to the collector."""
        ws.close()
        while await asyncio.wait_for(ws.read_message(), 30) is not None:
            pass

    def ask(self, msg_type: str, content: dict) -> dict:
        """One request on the shell channel; the reply to it."""

        async def exchange() -> dict:
            ws = await self.connect()
            try:
                return await self.reply(ws, msg_type, content)
            finally:
                await self.close(ws)

        return asyncio.run(exchange())


def test_labs_completer_and_tooltip_are_answered_by_the_rooms_kernel(lab, person) -> None:
    """Tab and shift-tab as Lab's front end sends them, on the notebook's kernel
    websocket: with no kernel running, empty answers at once; once the agent ran a cell,
    the room's kernel completes the name it defined and inspects a builtin."""
    channels = KernelChannels(lab, person)
    code = "my_vari"
    before = channels.ask("complete_request", {"code": code, "cursor_pos": len(code)})
    assert before["msg_type"] == "complete_reply"
    assert before["content"]["status"] == "ok"
    assert before["content"]["matches"] == []
    with lab.daemon.client(timeout=90) as agent:
        agent.request("attach", notebook_id=person.notebook_id, peer_label="agent")
        made = agent.request(
            "create_cell", notebook_id=person.notebook_id, source="my_variable = 42"
        )
        ran = agent.request(
            "execute", notebook_id=person.notebook_id, cell_id=made["cell_id"], wait_secs=80
        )
        assert ran["execution"]["status"] == "done"
        completed = channels.ask("complete_request", {"code": code, "cursor_pos": len(code)})
        assert completed["msg_type"] == "complete_reply"
        assert "my_variable" in completed["content"]["matches"]
        assert completed["content"]["cursor_start"] == 0
        inspected = channels.ask(
            "inspect_request", {"code": "len(", "cursor_pos": 3, "detail_level": 0}
        )
        assert inspected["msg_type"] == "inspect_reply"
        assert inspected["content"]["found"] is True
        assert "len" in inspected["content"]["data"]["text/plain"]


def test_a_kernel_websocket_offered_v1_speaks_it_and_refuses_a_broken_frame(lab, person) -> None:
    """Lab's front end offers v1.kernel.websocket.jupyter.org: the stand-in selects it and
    answers kernel_info and a completion in v1 frames. A frame that cuts nothing in order
    closes that socket with 4400 and the reason; the next socket is served."""
    channels = KernelChannels(lab, person, V1)

    async def exchange() -> None:
        ws = await channels.connect()
        info = await channels.reply(ws, "kernel_info_request", {})
        assert info["content"]["language_info"]["name"] == "python"
        code = "pri"
        done = await channels.reply(ws, "complete_request", {"code": code, "cursor_pos": 3})
        assert done["header"]["msg_type"] == "complete_reply"
        assert done["content"]["status"] == "ok"
        broken = (6).to_bytes(8, "little") + (10**6).to_bytes(8, "little") * 6
        await ws.write_message(broken, binary=True)
        while await asyncio.wait_for(ws.read_message(), 30) is not None:
            pass  # the completion's idle status, sent after its reply
        ws.close()
        assert ws.close_code == 4400
        assert "offset" in (ws.close_reason or ""), ws.close_reason
        again = await channels.connect()
        try:
            info = await channels.reply(again, "kernel_info_request", {})
            assert info["header"]["msg_type"] == "kernel_info_reply"
        finally:
            await channels.close(again)

    asyncio.run(exchange())


def test_a_notebook_outside_labs_root_is_refused(lab) -> None:
    """Lab's contents API keeps a person under its root; the edge's own routes to the
    daemon do as well: a session for ``../`` is a 404 and opens nothing."""
    outside = lab.root.parent / "outside-the-root.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), outside)
    body = {"format": "json", "type": "notebook"}
    with pytest.raises(urllib.error.HTTPError) as refused:
        lab.call("PUT", "/api/collaboration/session/..%2Foutside-the-root.ipynb", body)
    refused.value.close()
    assert refused.value.code == 404
    opened = [room["path"] for room in lab.daemon.request("list_rooms")["rooms"]]
    assert str(outside) not in opened, opened
