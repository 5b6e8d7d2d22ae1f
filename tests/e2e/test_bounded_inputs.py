"""Issue 13 §2 and §3 through real processes: a real daemon in a temp state dir, real
``nbstage mcp`` processes driven by the official MCP client, and raw daemon frames.

Each test reproduces the attack or bad input from the issue first:
- save_notebook over a text file, an unrelated notebook, dangling and directory links,
  and a relative path, in a daemon started under umask 027;
- a NUL byte or an over-PATH_MAX path, on the wire and through MCP;
- a 300-level watcher description, then ``clients``;
- an oversized error echo, a get_cells reply over the frame limit, and a tool call
  too large for one frame.
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import orjson
import pytest

from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonError
from nbstage.protocol.common.labels import MAX_LABEL_CHARS
from nbstage.protocol.common.paths import PATH_MAX
from nbstage.protocol.daemon.frames import MAX_FRAME_BYTES, recv_frame
from tests.conftest import FAST_SETTINGS
from tests.support import RunningDaemon, daemon_running, mcp_client, run_bounded, texts_of

pytestmark = pytest.mark.e2e

MODE = "legacy"
READ_TIMEOUT = 30.0
HEADER = struct.Struct(">I")


@pytest.fixture
def daemon(state_dir: Path) -> Iterator[RunningDaemon]:
    """A daemon started under umask 027, so a new notebook file must come out 0640."""
    before = os.umask(0o027)
    try:
        running = daemon_running(state_dir, FAST_SETTINGS)
        entered = running.__enter__()
    finally:
        os.umask(before)
    try:
        yield entered
    finally:
        running.__exit__(None, None, None)


async def ok(client: Any, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, f"{name}({arguments}) failed: {texts_of(result)}"
    return result.structured_content


async def fails_with_code(client: Any, name: str, code: str, **arguments: Any) -> str:
    result = await client.call_tool(name, arguments)
    assert result.is_error, f"{name}({arguments}) should fail: {result.structured_content}"
    assert result.structured_content["code"] == code, texts_of(result)
    return "\n".join(texts_of(result))


def a_notebook(path: Path, source: str) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(source))
    nbformat.write(nb, path)
    return path.read_bytes()


# --- §2 save_notebook never destroys a file that is not this notebook's -------------------


def test_save_notebook_refuses_files_that_are_not_its_own(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "outside").mkdir()
    notes = work / "notes.ipynb"
    notes.write_text("my notes, not a notebook\n")
    other = work / "other.ipynb"
    other_bytes = a_notebook(other, "theirs = 1")
    (work / "dangling.ipynb").symlink_to(work / "nowhere.ipynb")
    (work / "dir.ipynb").mkdir()
    (work / "dirlink.ipynb").symlink_to(work / "dir.ipynb")
    (work / "etc.ipynb").symlink_to("/etc/passwd")

    async def body() -> None:
        async with mcp_client(daemon, MODE, cwd=work) as client:
            nb = (await ok(client, "create_notebook"))["notebook_id"]
            await ok(client, "create_cell", source="mine = 1")

            for overwrite in (False, True):
                text = await fails_with_code(
                    client, "save_notebook", "path_exists", path="notes.ipynb", overwrite=overwrite
                )
                assert "is not a notebook" in text
            assert notes.read_text() == "my notes, not a notebook\n"

            text = await fails_with_code(client, "save_notebook", "path_exists", path="other.ipynb")
            assert "overwrite=true" in text
            assert other.read_bytes() == other_bytes

            for link in ("dangling.ipynb", "dirlink.ipynb", "etc.ipynb"):
                await fails_with_code(
                    client, "save_notebook", "bad_request", path=link, overwrite=True
                )
            assert not (work / "nowhere.ipynb").exists()
            assert list((work / "dir.ipynb").iterdir()) == []

            saved = await ok(client, "save_notebook", path="../outside/new.ipynb")
            new = (tmp_path / "outside" / "new.ipynb").resolve()
            assert saved == {"notebook_id": nb, "path": str(new), "working_dir": str(work)}
            assert stat.S_IMODE(new.stat().st_mode) == 0o640, "new files follow the umask"

            # Its own file is its own: saved again, with and without the path.
            await ok(client, "create_cell", source="mine = 2")
            assert (await ok(client, "save_notebook", path=str(new)))["path"] == str(new)
            await ok(client, "save_notebook")

            saved = await ok(client, "save_notebook", path="other.ipynb", overwrite=True)
            assert saved["path"] == str(other.resolve())
            sources = ["".join(c.source) for c in nbformat.read(other, as_version=4).cells]
            assert sources == ["mine = 1", "mine = 2"]
            assert sorted(p.name for p in work.iterdir()) == sorted(
                [
                    "notes.ipynb",
                    "other.ipynb",
                    "dangling.ipynb",
                    "dir.ipynb",
                    "dirlink.ipynb",
                    "etc.ipynb",
                ]
            )

    run_bounded(body)


# --- §3 paths with a NUL byte or over PATH_MAX -------------------------------------------

BAD_PATHS = ["/tmp/a\0b.ipynb", "/" + "x" * PATH_MAX + ".ipynb"]


@pytest.mark.parametrize("bad", BAD_PATHS, ids=["nul", "over-path-max"])
def test_a_bad_path_on_the_wire_is_a_bad_request_and_the_connection_stays(
    daemon: RunningDaemon, bad: str
) -> None:
    with daemon.client(timeout=READ_TIMEOUT) as client:
        notebook_id = client.request("create", runtime=None)["notebook_id"]
        for kind, fields in (
            ("open", {"path": bad}),
            ("create", {"runtime": None, "working_dir": bad}),
            ("save", {"notebook_id": notebook_id, "path": bad}),
        ):
            with pytest.raises(DaemonError) as caught:
                client.request(kind, **fields)
            assert caught.value.code == "bad_request", (kind, caught.value.message)
        assert client.request("identity")["pid"] == daemon.pid


def test_a_bad_path_through_mcp_is_answered_at_once(daemon: RunningDaemon, tmp_path: Path) -> None:
    async def body() -> None:
        async with mcp_client(daemon, MODE, cwd=tmp_path) as client:
            for bad in BAD_PATHS:
                for name, arguments in (
                    ("connect_notebook", {"path": bad}),
                    ("create_notebook", {"working_dir": bad}),
                ):
                    result = await client.call_tool(name, arguments)
                    assert result.is_error
                    assert "is not a usable path" in texts_of(result)[0]
            await ok(client, "create_notebook")
            result = await client.call_tool("save_notebook", {"path": "a\0.ipynb"})
            assert result.is_error
            assert "NUL" in texts_of(result)[0]

    run_bounded(body, budget=60)


# --- §3 watcher descriptions -------------------------------------------------------------


def test_a_300_level_watcher_description_does_not_break_clients(daemon: RunningDaemon) -> None:
    deep: dict[str, Any] = {"end": True}
    for _ in range(300):
        deep = {"down": deep}
    client = {"label": "deep", "pids": [1], "extra": deep}
    body = json.dumps({"v": 1, "type": "watch", "id": 1, "client": client}).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as watcher:
        watcher.settimeout(READ_TIMEOUT)
        watcher.connect(str(daemon.paths.socket))
        watcher.sendall(HEADER.pack(len(body)) + body)
        assert recv_frame(watcher)["type"] == "heartbeat"
        with daemon.client(timeout=READ_TIMEOUT) as admin:
            clients = admin.request("clients")["clients"]
        (record,) = [c for c in clients if c.get("label") == "deep"]
        assert record["pids"] == [1]
        assert "<nested too deep>" in orjson.dumps(record).decode()


# --- issue 20 §5: labels and watchers that never read ------------------------------------

UNSENT_LIMIT = 256 * 1024
DROPPED = re.compile(r"dropped connection \d+ \(never-reads\): (\d+) bytes")


def test_a_watcher_that_never_reads_is_dropped_while_others_are_served(state_dir: Path) -> None:
    """A watcher that subscribes and never reads, beside a client that joins and leaves a
    room as fast as it can (each join and leave is an event with its label for every
    watcher): the daemon drops the watcher once 256 KiB wait for it, and says so."""
    settings = {**FAST_SETTINGS, "NBSTAGE_MAX_UNSENT_BYTES": str(UNSENT_LIMIT)}
    with (
        daemon_running(state_dir, settings) as daemon,
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as watcher,
        daemon.client(timeout=READ_TIMEOUT) as busy,
        daemon.client(timeout=READ_TIMEOUT) as other,
    ):
        watcher.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        watcher.connect(str(daemon.paths.socket))
        body = orjson.dumps({"v": 1, "type": "watch", "id": 1, "client": {"label": "never-reads"}})
        watcher.sendall(HEADER.pack(len(body)) + body)

        notebook_id = busy.request("create", runtime=None, peer_label="busy")["notebook_id"]
        label = "b" * MAX_LABEL_CHARS
        dropped = None
        for cycle in range(10_000):
            peer = busy.request("attach", notebook_id=notebook_id, peer_label=label)["peer_id"]
            busy.request("leave", notebook_id=notebook_id, peer_id=peer)
            if cycle % 100 == 99:
                log = orjson.dumps(other.request("log", lines=200)).decode()
                dropped = DROPPED.search(log)
                if dropped:
                    break
        assert dropped, "the watcher was never dropped: the daemon holds all it was sent"
        assert UNSENT_LIMIT < int(dropped.group(1)) < UNSENT_LIMIT + 4096

        watcher.settimeout(READ_TIMEOUT)
        while watcher.recv(65536):
            pass
        assert other.request("identity")["pid"] == daemon.pid
        clients = other.request("clients")["clients"]
        assert "never-reads" not in [c.get("label") for c in clients]


def test_an_over_long_or_escaping_peer_label_is_refused_and_the_connection_stays(
    daemon: RunningDaemon,
) -> None:
    with daemon.client(timeout=READ_TIMEOUT) as client:
        for label, phrase in (
            ("x" * 1_000_000, "1,000,000 characters long, over the limit of 256"),
            ("\x1b]0;owned\x07", "control character \\x1b"),
        ):
            with pytest.raises(DaemonError) as refused:
                client.request("create", runtime=None, peer_label=label)
            assert refused.value.code == "bad_request"
            assert "'peer_label' is not a usable label" in refused.value.message
            assert phrase in refused.value.message
        assert client.request("identity")["pid"] == daemon.pid
        assert daemon.request("list_rooms")["rooms"] == []


def test_an_mcp_client_with_an_over_long_name_still_opens_notebooks(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """The supervisor fits the client's label to the daemon's rules instead of having
    every join refused."""

    async def body() -> None:
        async with mcp_client(daemon, MODE, label="c" * 5000 + "\x1b", cwd=tmp_path) as client:
            await ok(client, "create_notebook")
            (room,) = daemon.request("list_rooms")["rooms"]
            assert [peer["label"] for peer in room["peers"]] == ["c" * MAX_LABEL_CHARS]

    run_bounded(body, budget=60)


# --- §3 replies over the frame limit -----------------------------------------------------


def test_an_oversized_error_echo_is_answered_with_a_frame(daemon: RunningDaemon) -> None:
    kind = "x" * (MAX_FRAME_BYTES - 200)
    body = orjson.dumps({"v": 1, "type": kind, "id": 1})
    assert len(body) <= MAX_FRAME_BYTES
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(READ_TIMEOUT)
        sock.connect(str(daemon.paths.socket))
        sock.sendall(HEADER.pack(len(body)) + body)
        frame = recv_frame(sock)
    assert (frame["id"], frame["type"]) == (1, "error")
    assert frame["error"]["code"] == "result_too_large"
    assert daemon.request("identity")["pid"] == daemon.pid


def test_a_reply_over_the_frame_limit_becomes_result_too_large_and_mcp_pages(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    big = "y" * (9 * 1024 * 1024)

    async def body() -> None:
        async with mcp_client(daemon, MODE, cwd=tmp_path) as client:
            nb = (await ok(client, "create_notebook"))["notebook_id"]
            for n in range(2):
                await ok(client, "create_cell", source=f"# {n}\n{big}")
            with daemon.client(timeout=READ_TIMEOUT) as raw:
                with pytest.raises(DaemonError) as caught:
                    raw.request("get_cells", notebook_id=nb, format="json")
                assert caught.value.code == "result_too_large"
                assert "start and count" in caught.value.message
                one = raw.request("get_cells", notebook_id=nb, format="json", start=1, count=1)
                assert one["total"] == 2
                assert one["cells"][0]["source"].startswith("# 1")
            shown = await ok(client, "get_all_cells", format="json")
            assert shown["total"] == 2
            assert [c["source"][:3] for c in shown["cells"]] == ["# 0", "# 1"]
            assert all(len(c["source"]) > len(big) for c in shown["cells"])

            result = await client.call_tool("create_cell", {"source": "z" * MAX_FRAME_BYTES})
            assert result.is_error
            assert result.structured_content["code"] == "bad_request"
            assert "was not sent" in texts_of(result)[0]

    run_bounded(body, budget=120)


# --- §3 patterns ---------------------------------------------------------------------------


def test_a_pathological_pattern_is_refused_and_the_notebook_stays_usable(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    async def body() -> None:
        async with mcp_client(daemon, MODE, cwd=tmp_path) as client:
            await ok(client, "create_notebook")
            made = await ok(client, "create_cell", source="a" * 40 + "b")
            for pattern in (r"^(a+)+$", r"(a|a)+$"):
                result = await client.call_tool(
                    "replace_regex",
                    {"cell_id": made["cell_id"], "pattern": pattern, "content": "x"},
                )
                assert result.is_error, texts_of(result)
                assert result.structured_content["code"] in ("no_match", "bad_pattern")
            cell = await ok(client, "get_cell", cell_id=made["cell_id"])
            assert cell["cell"]["source"] == "a" * 40 + "b"

    run_bounded(body, budget=60)


def test_a_pattern_too_large_to_compile_is_refused_through_the_tool(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """Issue 20 §5: a 3 MB pattern took 18.7 s and 866 MB to compile in the daemon."""

    async def body() -> None:
        async with mcp_client(daemon, MODE, cwd=tmp_path) as client:
            await ok(client, "create_notebook")
            made = await ok(client, "create_cell", source="a = 1")
            for pattern, phrase in (("a" * 3_000_000, "characters long"), ("a{1000000}", "items")):
                said = await fails_with_code(
                    client,
                    "replace_regex",
                    "bad_pattern",
                    cell_id=made["cell_id"],
                    pattern=pattern,
                    content="x",
                )
                assert phrase in said, said
            done = await ok(
                client, "replace_regex", cell_id=made["cell_id"], pattern="a = 1", content="b = 2"
            )
            assert done["cell_id"] == made["cell_id"]

    run_bounded(body, budget=60)


# --- §3 resident rooms ---------------------------------------------------------------------


def test_rooms_beyond_the_limits_are_refused_by_name(tmp_path: Path) -> None:
    limits = {"NBSTAGE_MAX_ROOMS": "3", "NBSTAGE_MAX_ROOMS_PER_CONNECTION": "2"}
    with (
        daemon_running(tmp_path / "state", limits) as daemon,
        DaemonClient(daemon.paths.socket) as first,
        DaemonClient(daemon.paths.socket) as second,
    ):
        for _ in range(2):
            first.request("create", runtime=None)
        with pytest.raises(DaemonError) as mine:
            first.request("create", runtime=None)
        assert mine.value.code == "too_many_rooms"
        assert "max_rooms_per_connection" in str(mine.value)
        assert "nbstage admin evict" in str(mine.value)
        second.request("create", runtime=None)
        with pytest.raises(DaemonError) as full:
            second.request("create", runtime=None)
        assert full.value.code == "too_many_rooms"
        assert "(max_rooms)" in str(full.value)
        assert len(first.request("list_rooms")["rooms"]) == 3
