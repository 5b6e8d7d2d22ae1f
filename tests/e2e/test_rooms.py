"""Rooms through the real daemon socket: admission, canonical paths, saves, autosave,
idempotent mutations, peers and events, and what survives a daemon restart (SPEC §3.3, §5).
"""

from __future__ import annotations

import json
import socket
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import nbformat
import pytest

from nbstage.entrypoints.control.daemon_client import DaemonClient, DaemonError
from nbstage.protocol.daemon.frames import encode_frame
from tests.support import RunningDaemon, daemon_running, wait_until

pytestmark = pytest.mark.e2e

EVENT_HEARTBEATS = 50
"""How many heartbeats (0.2 s each under the test settings) an expected event may take."""
QUIET_HEARTBEATS = 8
"""Heartbeats that cover well over the 1.0 s longest autosave delay of the test settings."""


# --- helpers ----------------------------------------------------------------------------


class Watcher:
    """A watch subscription: room events, with the daemon's heartbeats as the clock."""

    def __init__(self, daemon: RunningDaemon) -> None:
        self.client = daemon.client(timeout=15)
        self.client.send("watch", client={"label": "test-watcher"})
        first = self.client.receive()
        assert first["type"] == "heartbeat", first
        self.identity = first["identity"]
        self.backlog: list[dict[str, Any]] = []

    def close(self) -> None:
        self.client.close()

    def next_event(
        self,
        kind: str,
        notebook_id: str | None = None,
        within: int = EVENT_HEARTBEATS,
        **detail: Any,
    ) -> dict[str, Any]:
        """The first event of ``kind`` (for ``notebook_id``, with ``detail``) not yet taken."""

        def matches(event: dict[str, Any]) -> bool:
            return (
                event["kind"] == kind
                and (notebook_id is None or event["notebook_id"] == notebook_id)
                and all(event.get(k) == v for k, v in detail.items())
            )

        for event in self.backlog:
            if matches(event):
                self.backlog.remove(event)
                return event
        beats = 0
        while True:
            frame = self.client.receive()
            if frame["type"] == "heartbeat":
                beats += 1
                if beats > within:
                    raise AssertionError(
                        f"no {kind} event for {notebook_id} {detail} within {within} heartbeats;"
                        f" other events: {self.backlog}"
                    )
                continue
            event = frame["event"]
            if matches(event):
                return event
            self.backlog.append(event)

    def events_during(self, heartbeats: int) -> list[dict[str, Any]]:
        """Every event (taken or not) that arrives while ``heartbeats`` heartbeats pass."""
        seen = list(self.backlog)
        self.backlog.clear()
        beats = 0
        while beats < heartbeats:
            frame = self.client.receive()
            if frame["type"] == "heartbeat":
                beats += 1
            else:
                seen.append(frame["event"])
        return seen


@pytest.fixture
def watch(daemon: RunningDaemon) -> Iterator[Watcher]:
    watcher = Watcher(daemon)
    yield watcher
    watcher.close()


@contextmanager
def restarted(daemon: RunningDaemon) -> Iterator[RunningDaemon]:
    """Stop the daemon and start a new one on the same state dir for the block."""
    daemon.stop()
    with daemon_running(daemon.paths.root, daemon.env) as again:
        assert again.pid != daemon.pid
        yield again


def write_notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nb, str(path))
    return path


def write_json(path: Path, content: dict[str, Any]) -> Path:
    path.write_text(json.dumps(content, indent=1))
    return path


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """Read a file the daemon wrote and require that it is valid nbformat 4."""
    nb = nbformat.read(str(path), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    return nb


def cells_of(client: DaemonClient | RunningDaemon, notebook_id: str) -> list[dict[str, Any]]:
    return client.request("get_cells", notebook_id=notebook_id, format="json")["cells"]


def sources_of(client: DaemonClient | RunningDaemon, notebook_id: str) -> list[str]:
    return [cell["source"] for cell in cells_of(client, notebook_id)]


def room_ids(daemon: RunningDaemon) -> set[str]:
    return {room["notebook_id"] for room in daemon.request("list_rooms")["rooms"]}


def refusal(call, *args: Any, **kwargs: Any) -> DaemonError:
    with pytest.raises(DaemonError) as info:
        call(*args, **kwargs)
    return info.value


def untitled_content(daemon: RunningDaemon, notebook_id: str) -> bytes | None:
    """The persisted untitled copy of a notebook in registry.sqlite3, read-only."""
    uri = f"file:{daemon.paths.root / 'registry.sqlite3'}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True, timeout=5)) as db:
        row = db.execute(
            "SELECT content FROM untitled WHERE notebook_id = ?", (notebook_id,)
        ).fetchone()
    return bytes(row[0]) if row else None


# --- open, create, attach ---------------------------------------------------------------


def test_open_loads_a_file_into_a_room_and_joins_it(daemon: RunningDaemon, tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "nb.ipynb", "a = 1", "b = 2")
    opened = daemon.request("open", path=str(path), peer_label="me")
    assert opened["path"] == str(path.resolve())
    assert opened["ephemeral"] is False
    assert opened["runtime"]
    assert opened["cell_count"] == 2
    assert opened["created"] is False
    assert uuid.UUID(opened["notebook_id"])
    assert opened["peer_id"]
    assert sources_of(daemon, opened["notebook_id"]) == ["a = 1", "b = 2"]


def test_create_makes_an_empty_ephemeral_untitled_room_by_default(daemon: RunningDaemon) -> None:
    created = daemon.request("create")
    assert created["ephemeral"] is True
    assert created["path"] is None
    assert created["created"] is True
    assert created["cell_count"] == 0
    assert created["runtime"]
    (room,) = daemon.request("list_rooms")["rooms"]
    assert room["notebook_id"] == created["notebook_id"]
    assert (room["path"], room["ephemeral"]) == (None, True)


def test_create_without_a_runtime_makes_a_room_with_no_kernel(daemon: RunningDaemon) -> None:
    created = daemon.request("create", runtime=None)
    assert (created["runtime"], created["kernel_status"]) == (None, "none")


def test_create_with_ephemeral_false_makes_a_persisted_untitled_room(
    daemon: RunningDaemon,
) -> None:
    created = daemon.request("create", runtime=None, ephemeral=False)
    assert (created["ephemeral"], created["path"]) == (False, None)
    assert untitled_content(daemon, created["notebook_id"]) is not None


def test_opening_a_missing_file_is_refused_as_not_found_and_makes_no_room(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    missing = tmp_path / "missing.ipynb"
    error = refusal(daemon.request, "open", path=str(missing))
    assert error.code == "not_found"
    assert str(missing) in error.message
    assert room_ids(daemon) == set()
    assert not missing.exists()


def test_opening_a_file_that_is_not_a_notebook_is_refused_with_the_reason_and_makes_no_room(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    junk = tmp_path / "junk.ipynb"
    junk.write_text("this is not json")
    error = refusal(daemon.request, "open", path=str(junk))
    assert room_ids(daemon) == set()
    assert junk.read_text() == "this is not json"
    assert error.code == "bad_request", error
    assert "not a Jupyter notebook" in error.message


def test_attach_joins_a_resident_room_as_another_peer(daemon: RunningDaemon) -> None:
    created = daemon.request("create", runtime=None, peer_label="first")
    with daemon.client() as client:
        client.request("create_cell", notebook_id=created["notebook_id"], source="x")
        attached = client.request("attach", notebook_id=created["notebook_id"], peer_label="2nd")
    assert attached["notebook_id"] == created["notebook_id"]
    assert attached["created"] is False
    assert attached["cell_count"] == 1
    assert attached["peer_id"] != created["peer_id"]


def test_a_refused_attach_leaves_no_phantom_room(daemon: RunningDaemon) -> None:
    existing = daemon.request("create", runtime=None)["notebook_id"]
    rooms_before = daemon.status()["rooms"]
    unknown = str(uuid.uuid4())
    error = refusal(daemon.request, "attach", notebook_id=unknown)
    assert error.code == "notebook_unavailable"
    assert unknown in error.message
    assert room_ids(daemon) == {existing}
    assert daemon.status()["rooms"] == rooms_before == 1
    again = refusal(daemon.request, "get_cells", notebook_id=unknown)
    assert again.code == "notebook_unavailable"


def test_a_second_refused_attach_is_refused_the_same_way(daemon: RunningDaemon) -> None:
    unknown = str(uuid.uuid4())
    first = refusal(daemon.request, "attach", notebook_id=unknown)
    second = refusal(daemon.request, "attach", notebook_id=unknown)
    assert (first.code, first.message) == (second.code, second.message)
    assert daemon.status()["rooms"] == 0


def test_attach_by_a_binding_whose_file_is_gone_is_refused_after_a_restart(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    path = write_notebook(tmp_path / "gone.ipynb", "x = 1")
    notebook_id = daemon.request("open", path=str(path))["notebook_id"]
    with restarted(daemon) as again:
        path.unlink()
        error = refusal(again.request, "attach", notebook_id=notebook_id)
        assert error.code == "notebook_unavailable"
        assert room_ids(again) == set()
        assert again.status()["rooms"] == 0


# --- one room per canonical path --------------------------------------------------------


def test_a_dotdot_spelling_of_a_path_opens_the_same_room(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    path = write_notebook(tmp_path / "nb.ipynb", "x = 1")
    first = daemon.request("open", path=str(path))
    second = daemon.request("open", path=str(tmp_path / "sub" / ".." / "nb.ipynb"))
    assert second["notebook_id"] == first["notebook_id"]
    assert second["path"] == str(path.resolve())
    assert second["peer_id"] != first["peer_id"]
    assert room_ids(daemon) == {first["notebook_id"]}


def test_a_symlink_to_an_open_file_opens_the_same_room(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    path = write_notebook(tmp_path / "real.ipynb", "x = 1")
    link = tmp_path / "link.ipynb"
    link.symlink_to(path)
    via_link = daemon.request("open", path=str(link))
    direct = daemon.request("open", path=str(path))
    assert via_link["notebook_id"] == direct["notebook_id"]
    assert via_link["path"] == direct["path"] == str(path.resolve())
    (room,) = daemon.request("list_rooms")["rooms"]
    assert room["path"] == str(path.resolve())


def test_a_symlinked_directory_leads_to_the_same_room(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    (tmp_path / "real").mkdir()
    path = write_notebook(tmp_path / "real" / "nb.ipynb", "x = 1")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    direct = daemon.request("open", path=str(path))
    via_alias = daemon.request("open", path=str(tmp_path / "alias" / "nb.ipynb"))
    assert via_alias["notebook_id"] == direct["notebook_id"]


# --- loading older formats --------------------------------------------------------------


V3_NOTEBOOK = {
    "nbformat": 3,
    "nbformat_minor": 0,
    "metadata": {"name": "old"},
    "worksheets": [
        {
            "metadata": {},
            "cells": [
                {
                    "cell_type": "code",
                    "collapsed": False,
                    "input": "print('from v3')",
                    "language": "python",
                    "metadata": {},
                    "outputs": [],
                    "prompt_number": 1,
                },
                {"cell_type": "markdown", "metadata": {}, "source": "# Old title"},
            ],
        }
    ],
}

V44_NOTEBOOK = {
    "nbformat": 4,
    "nbformat_minor": 4,
    "metadata": {},
    "cells": [
        {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": f"x = {n}",
        }
        for n in range(3)
    ]
    + [{"cell_type": "markdown", "metadata": {}, "source": "notes"}],
}


def test_opening_an_nbformat_v3_file_upgrades_it_to_v4(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    path = write_json(tmp_path / "old.ipynb", V3_NOTEBOOK)
    opened = daemon.request("open", path=str(path))
    assert opened["cell_count"] == 2
    cells = cells_of(daemon, opened["notebook_id"])
    assert [(c["cell_type"], c["source"]) for c in cells] == [
        ("code", "print('from v3')"),
        ("markdown", "# Old title"),
    ]
    assert all(c["id"] for c in cells)
    daemon.request("save", notebook_id=opened["notebook_id"])
    saved = read_notebook(path)
    assert saved.nbformat_minor >= 5
    assert [c.source for c in saved.cells] == ["print('from v3')", "# Old title"]


def test_opening_a_4_4_file_without_ids_gives_every_cell_a_unique_lasting_id(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    path = write_json(tmp_path / "noids.ipynb", V44_NOTEBOOK)
    before = path.read_bytes()
    notebook_id = daemon.request("open", path=str(path))["notebook_id"]
    ids = [c["id"] for c in cells_of(daemon, notebook_id)]
    assert len(set(ids)) == 4
    assert all(isinstance(i, str) and 1 <= len(i) <= 64 for i in ids)
    assert [c["id"] for c in cells_of(daemon, notebook_id)] == ids
    assert path.read_bytes() == before, "opening alone must not rewrite the file"
    daemon.request("save", notebook_id=notebook_id)
    saved = read_notebook(path)
    assert saved.nbformat_minor >= 5
    assert [c.id for c in saved.cells] == ids


# --- saves ------------------------------------------------------------------------------


def test_saving_writes_valid_nbformat_atomically_and_leaves_no_temp_file(
    daemon: RunningDaemon, watch: Watcher, tmp_path: Path
) -> None:
    notebook_id = daemon.request("create", runtime=None)["notebook_id"]
    with daemon.client() as client:
        client.request("create_cell", notebook_id=notebook_id, source="import math")
        client.request(
            "create_cell", notebook_id=notebook_id, source="# Notes", cell_type="markdown"
        )
        target = tmp_path / "out" / "saved.ipynb"
        target.parent.mkdir()
        saved = client.request("save", notebook_id=notebook_id, path=str(target))
    assert saved == {"notebook_id": notebook_id, "path": str(target.resolve())}
    nb = read_notebook(target)
    assert [(c.cell_type, c.source) for c in nb.cells] == [
        ("code", "import math"),
        ("markdown", "# Notes"),
    ]
    assert sorted(p.name for p in target.parent.iterdir()) == ["saved.ipynb"]
    event = watch.next_event("saved", notebook_id)
    assert event["path"] == str(target.resolve())


def test_saving_an_untitled_room_without_a_path_is_refused_with_no_path(
    daemon: RunningDaemon,
) -> None:
    notebook_id = daemon.request("create", runtime=None)["notebook_id"]
    error = refusal(daemon.request, "save", notebook_id=notebook_id)
    assert error.code == "no_path"


def test_saving_to_a_path_that_is_not_an_ipynb_is_refused(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    notebook_id = daemon.request("create", runtime=None)["notebook_id"]
    error = refusal(daemon.request, "save", notebook_id=notebook_id, path=str(tmp_path / "x.txt"))
    assert error.code == "bad_request"
    assert list(tmp_path.iterdir()) == []


def test_saving_a_file_backed_room_keeps_the_files_permission_bits(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    path = write_notebook(tmp_path / "private.ipynb", "x = 1")
    path.chmod(0o600)
    notebook_id = daemon.request("open", path=str(path))["notebook_id"]
    daemon.request("create_cell", notebook_id=notebook_id, source="y = 2")
    daemon.request("save", notebook_id=notebook_id)
    assert path.stat().st_mode & 0o777 == 0o600
    assert [c.source for c in read_notebook(path).cells] == ["x = 1", "y = 2"]


def test_promoting_a_persisted_untitled_notebook_keeps_its_uuid_and_reloads_from_the_file(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    created = daemon.request("create", runtime=None, ephemeral=False)
    notebook_id = created["notebook_id"]
    daemon.request("create_cell", notebook_id=notebook_id, source="promoted = True")
    target = tmp_path / "promoted.ipynb"
    saved = daemon.request("save", notebook_id=notebook_id, path=str(target))
    assert saved == {"notebook_id": notebook_id, "path": str(target.resolve())}
    (room,) = daemon.request("list_rooms")["rooms"]
    assert (room["notebook_id"], room["path"]) == (notebook_id, str(target.resolve()))
    assert room["ephemeral"] is False
    assert [c.source for c in read_notebook(target).cells] == ["promoted = True"]
    with restarted(daemon) as again:
        write_notebook(target, "edited on disk while the daemon was down")
        attached = again.request("attach", notebook_id=notebook_id)
        assert attached["notebook_id"] == notebook_id
        assert attached["path"] == str(target.resolve())
        assert attached["created"] is False
        assert sources_of(again, notebook_id) == ["edited on disk while the daemon was down"]


def test_a_failed_promotion_keeps_the_untitled_notebook_attachable_after_a_restart(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    notebook_id = daemon.request("create", runtime=None, ephemeral=False)["notebook_id"]
    daemon.request("create_cell", notebook_id=notebook_id, source="keep me")
    wait_until(
        lambda: b"keep me" in (untitled_content(daemon, notebook_id) or b""),
        10,
        "the edit to reach the untitled journal",
    )
    nowhere = tmp_path / "no-such-dir" / "nb.ipynb"
    error = refusal(daemon.request, "save", notebook_id=notebook_id, path=str(nowhere))
    assert error.code == "save_failed"
    assert not nowhere.parent.exists()
    with restarted(daemon) as again:
        attached = again.request("attach", notebook_id=notebook_id)
        assert attached["path"] is None
        assert sources_of(again, notebook_id) == ["keep me"]


def test_saving_to_a_path_another_room_holds_is_refused_and_that_file_is_untouched(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    held = write_notebook(tmp_path / "held.ipynb", "owned by the first room")
    before = held.read_bytes()
    mtime_before = held.stat().st_mtime_ns
    holder = daemon.request("open", path=str(held))["notebook_id"]
    other = daemon.request("create", runtime=None)["notebook_id"]
    daemon.request("create_cell", notebook_id=other, source="would overwrite")
    error = refusal(daemon.request, "save", notebook_id=other, path=str(held))
    assert error.code == "path_already_open"
    assert holder in error.message
    assert held.read_bytes() == before
    assert held.stat().st_mtime_ns == mtime_before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["held.ipynb"]
    rooms = {r["notebook_id"]: r["path"] for r in daemon.request("list_rooms")["rooms"]}
    assert rooms == {holder: str(held.resolve()), other: None}


def test_saving_a_file_backed_room_over_another_rooms_file_is_refused(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    first = write_notebook(tmp_path / "first.ipynb", "first")
    second = write_notebook(tmp_path / "second.ipynb", "second")
    before = first.read_bytes()
    daemon.request("open", path=str(first))
    second_id = daemon.request("open", path=str(second))["notebook_id"]
    (tmp_path / "sub").mkdir()
    via_dotdot = f"{tmp_path}/sub/../first.ipynb"
    error = refusal(daemon.request, "save", notebook_id=second_id, path=via_dotdot)
    assert error.code == "path_already_open"
    assert first.read_bytes() == before


# --- autosave ---------------------------------------------------------------------------


def test_a_file_backed_room_autosaves_after_an_edit(
    daemon: RunningDaemon, watch: Watcher, tmp_path: Path
) -> None:
    path = write_notebook(tmp_path / "auto.ipynb", "x = 1")
    notebook_id = daemon.request("open", path=str(path))["notebook_id"]
    (cell_id,) = [c["id"] for c in cells_of(daemon, notebook_id)]
    daemon.request("set_cell", notebook_id=notebook_id, cell_id=cell_id, source="x = 'autosaved'")
    wait_until(lambda: "autosaved" in path.read_text(), 10, "the autosave to reach the file")
    assert [c.source for c in read_notebook(path).cells] == ["x = 'autosaved'"]
    assert watch.next_event("saved", notebook_id)["path"] == str(path.resolve())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["auto.ipynb"]


def test_an_unchanged_file_is_never_rewritten(
    daemon: RunningDaemon, watch: Watcher, tmp_path: Path
) -> None:
    path = write_notebook(tmp_path / "still.ipynb", "x = 1")
    notebook_id = daemon.request("open", path=str(path))["notebook_id"]
    (cell_id,) = [c["id"] for c in cells_of(daemon, notebook_id)]
    daemon.request("set_cell", notebook_id=notebook_id, cell_id=cell_id, source="x = 2")
    watch.next_event("saved", notebook_id)
    content, mtime = path.read_bytes(), path.stat().st_mtime_ns
    with daemon.client() as client:
        cells_of(client, notebook_id)
        client.request("get_cells", notebook_id=notebook_id)
        client.request("get_cell", notebook_id=notebook_id, cell_id=cell_id)
        client.request("set_cell", notebook_id=notebook_id, cell_id=cell_id, source="x = 2")
        client.request("move_cell", notebook_id=notebook_id, cell_id=cell_id)
    events = watch.events_during(QUIET_HEARTBEATS)
    assert [e for e in events if e["kind"] == "saved"] == []
    assert path.stat().st_mtime_ns == mtime
    assert path.read_bytes() == content


def test_an_untouched_opened_file_is_not_rewritten(
    daemon: RunningDaemon, watch: Watcher, tmp_path: Path
) -> None:
    path = write_notebook(tmp_path / "untouched.ipynb", "x = 1")
    content, mtime = path.read_bytes(), path.stat().st_mtime_ns
    notebook_id = daemon.request("open", path=str(path))["notebook_id"]
    cells_of(daemon, notebook_id)
    assert [e for e in watch.events_during(QUIET_HEARTBEATS) if e["kind"] == "saved"] == []
    assert (path.read_bytes(), path.stat().st_mtime_ns) == (content, mtime)


# --- idempotent mutations ---------------------------------------------------------------


def test_a_repeated_create_cell_key_returns_the_first_result_and_adds_one_cell(
    daemon: RunningDaemon,
) -> None:
    notebook_id = daemon.request("create", runtime=None)["notebook_id"]
    with daemon.client() as first, daemon.client() as retry:
        once = first.request("create_cell", notebook_id=notebook_id, source="once", key="k-1")
        twice = retry.request("create_cell", notebook_id=notebook_id, source="once", key="k-1")
    assert twice == once
    assert sources_of(daemon, notebook_id) == ["once"]
    other = daemon.request("create_cell", notebook_id=notebook_id, source="again", key="k-2")
    assert other["cell_id"] != once["cell_id"]
    assert sources_of(daemon, notebook_id) == ["once", "again"]


def test_a_repeated_replace_match_key_is_applied_once(daemon: RunningDaemon) -> None:
    notebook_id = daemon.request("create", runtime=None)["notebook_id"]
    cell_id = daemon.request("create_cell", notebook_id=notebook_id, source="a")["cell_id"]
    request = {"notebook_id": notebook_id, "cell_id": cell_id, "match": "a", "content": "aa"}
    first = daemon.request("replace_match", key="grow", **request)
    second = daemon.request("replace_match", key="grow", **request)
    assert second == first
    assert sources_of(daemon, notebook_id) == ["aa"]


def test_a_repeated_delete_key_answers_the_first_result_instead_of_cell_not_found(
    daemon: RunningDaemon,
) -> None:
    notebook_id = daemon.request("create", runtime=None)["notebook_id"]
    cell_id = daemon.request("create_cell", notebook_id=notebook_id, source="bye")["cell_id"]
    first = daemon.request("delete_cell", notebook_id=notebook_id, cell_id=cell_id, key="del")
    second = daemon.request("delete_cell", notebook_id=notebook_id, cell_id=cell_id, key="del")
    assert first == second == {"deleted": cell_id}
    error = refusal(daemon.request, "delete_cell", notebook_id=notebook_id, cell_id=cell_id)
    assert error.code == "cell_not_found"


def test_an_execute_reusing_a_mutation_key_is_not_an_internal_error(
    daemon: RunningDaemon,
) -> None:
    notebook_id = daemon.request("create", runtime=None)["notebook_id"]
    cell_id = daemon.request("create_cell", notebook_id=notebook_id, source="1 + 1", key="shared")[
        "cell_id"
    ]
    with daemon.client() as client:
        client.send("execute", notebook_id=notebook_id, cell_id=cell_id, key="shared")
        answer = client.receive()
    assert answer["type"] == "result" or answer["error"]["code"] != "internal", answer
    assert sources_of(daemon, notebook_id) == ["1 + 1"]


# --- peers and events -------------------------------------------------------------------


def test_two_peers_on_two_connections_see_each_others_edits_joins_and_leaves(
    daemon: RunningDaemon, watch: Watcher
) -> None:
    with daemon.client() as alice, daemon.client() as bob:
        a = alice.request("create", runtime=None, peer_label="alice")
        notebook_id = a["notebook_id"]
        b = bob.request("attach", notebook_id=notebook_id, peer_label="bob")
        assert watch.next_event("created", notebook_id)["path"] is None
        assert (
            watch.next_event("peer_joined", notebook_id, label="alice")["peer_id"] == a["peer_id"]
        )
        assert watch.next_event("peer_joined", notebook_id, label="bob")["peer_id"] == b["peer_id"]

        cell_id = alice.request("create_cell", notebook_id=notebook_id, source="by alice")[
            "cell_id"
        ]
        seen_by_bob = bob.request("get_cell", notebook_id=notebook_id, cell_id=cell_id)["cell"]
        assert seen_by_bob["source"] == "by alice"
        bob.request("set_cell", notebook_id=notebook_id, cell_id=cell_id, source="by bob")
        seen_by_alice = alice.request("get_cell", notebook_id=notebook_id, cell_id=cell_id)["cell"]
        assert seen_by_alice["source"] == "by bob"

        assert bob.request("leave", notebook_id=notebook_id, peer_id=b["peer_id"]) == {"left": True}
        left = watch.next_event("peer_left", notebook_id)
        assert (left["peer_id"], left["label"]) == (b["peer_id"], "bob")
        error = refusal(bob.request, "leave", notebook_id=notebook_id, peer_id=b["peer_id"])
        assert error.code == "not_a_peer"


def test_closing_a_connection_makes_its_peer_leave(daemon: RunningDaemon, watch: Watcher) -> None:
    notebook_id = daemon.request("create", runtime=None, peer_label="short-lived")["notebook_id"]
    left = watch.next_event("peer_left", notebook_id)
    assert left["label"] == "short-lived"
    with daemon.client() as stayer:
        stayer.request("attach", notebook_id=notebook_id, peer_label="stayer")
        goer = daemon.client()
        gone = goer.request("attach", notebook_id=notebook_id, peer_label="goer")
        goer.close()
        left = watch.next_event("peer_left", notebook_id, label="goer")
        assert left["peer_id"] == gone["peer_id"]
        assert stayer.request("get_cells", notebook_id=notebook_id)["total"] == 0


def test_a_connection_closed_before_its_join_is_answered_leaves_no_peer_behind(
    daemon: RunningDaemon, watch: Watcher
) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(daemon.paths.socket))
        sock.sendall(
            encode_frame(
                {"v": 1, "type": "create", "id": 1, "runtime": None, "peer_label": "hasty"}
            )
        )
    joined = watch.next_event("peer_joined", label="hasty")
    left = watch.next_event("peer_left", joined["notebook_id"])
    assert left["peer_id"] == joined["peer_id"]


def test_room_requests_for_an_unknown_notebook_are_refused_as_unavailable(
    daemon: RunningDaemon,
) -> None:
    unknown = str(uuid.uuid4())
    for kind, fields in [
        ("get_cells", {}),
        ("create_cell", {"source": "x"}),
        ("save", {}),
        ("leave", {"peer_id": "p"}),
    ]:
        error = refusal(daemon.request, kind, notebook_id=unknown, **fields)
        assert error.code == "notebook_unavailable", kind
    assert daemon.status()["rooms"] == 0


# --- what survives a restart ------------------------------------------------------------


def test_a_saved_notebook_reopens_by_path_after_a_restart_with_the_same_id_and_content(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    notebook_id = daemon.request("create", runtime=None)["notebook_id"]
    daemon.request("create_cell", notebook_id=notebook_id, source="first")
    daemon.request("create_cell", notebook_id=notebook_id, source="## second", cell_type="markdown")
    target = tmp_path / "kept.ipynb"
    daemon.request("save", notebook_id=notebook_id, path=str(target))
    before = cells_of(daemon, notebook_id)
    with restarted(daemon) as again:
        reopened = again.request("open", path=str(target))
        assert reopened["notebook_id"] == notebook_id
        assert reopened["created"] is False
        assert cells_of(again, notebook_id) == before


def test_unsaved_edits_to_a_file_backed_room_are_saved_when_the_daemon_stops(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    path = write_notebook(tmp_path / "stop.ipynb", "x = 1")
    notebook_id = daemon.request("open", path=str(path))["notebook_id"]
    daemon.request("create_cell", notebook_id=notebook_id, source="added before stop")
    with restarted(daemon) as again:
        assert [c.source for c in read_notebook(path).cells] == ["x = 1", "added before stop"]
        assert again.request("open", path=str(path))["notebook_id"] == notebook_id


def test_a_persisted_untitled_notebook_survives_a_daemon_restart(daemon: RunningDaemon) -> None:
    notebook_id = daemon.request("create", runtime=None, ephemeral=False)["notebook_id"]
    daemon.request("create_cell", notebook_id=notebook_id, source="durable")
    daemon.request("create_cell", notebook_id=notebook_id, source="# md", cell_type="markdown")
    before = cells_of(daemon, notebook_id)
    with restarted(daemon) as again:
        assert again.status()["rooms"] == 0
        attached = again.request("attach", notebook_id=notebook_id)
        assert attached["notebook_id"] == notebook_id
        assert (attached["path"], attached["ephemeral"]) == (None, False)
        assert attached["cell_count"] == 2
        assert cells_of(again, notebook_id) == before


def test_an_ephemeral_notebook_is_unavailable_after_a_daemon_restart(
    daemon: RunningDaemon,
) -> None:
    notebook_id = daemon.request("create", runtime=None)["notebook_id"]
    daemon.request("create_cell", notebook_id=notebook_id, source="gone with the daemon")
    with restarted(daemon) as again:
        error = refusal(again.request, "attach", notebook_id=notebook_id)
        assert error.code == "notebook_unavailable"
        assert room_ids(again) == set()
        assert again.status()["rooms"] == 0
