"""The operator's console, ``nbstage admin`` (SPEC §10), against a live daemon.

One-shot commands run as ``nbstage`` subprocesses and are checked twice: their
``--json`` output against the daemon's own answers and the processes it names, and
their human output as an 80-column terminal would show it. The interactive console
runs in a pseudo-terminal, typed at and read like a person would.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pexpect
import psutil
import pytest

from tests.support import (
    NBSTAGE,
    RunningDaemon,
    daemon_running,
    mcp_client,
    pid_gone,
    room_view,
    run_cell,
    run_cli,
    wait_until,
)

pytestmark = pytest.mark.e2e

COLUMNS = 80
PROMPT = "nbstage> "
PTY_TIMEOUT = 20
"""The longest the console may take to answer one line; a bound on failure, never a wait."""

LONG_LABEL = "alice-the-analyst-with-a-label-far-too-long-for-any-table"
COMMAND_NAMES = [
    "status",
    "rooms",
    "room",
    "peers",
    "kernels",
    "tree",
    "clients",
    "evict",
    "restart-kernel",
    "shutdown-kernel",
    "reap",
    "log",
    "help",
    "quit",
]
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|[\x07\x08\r]")


# --- helpers ------------------------------------------------------------------------------


def admin(daemon_env: dict[str, str], state_dir: Path, *args: str) -> Any:
    """``nbstage admin ARGS`` as a subprocess whose terminal is 80 columns wide."""
    return run_cli("admin", *args, state_dir=state_dir, env={**daemon_env, "COLUMNS": "80"})


def admin_ok(daemon: RunningDaemon, *args: str) -> str:
    result = admin(daemon.env, daemon.paths.root, *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def admin_json(daemon: RunningDaemon, *args: str) -> Any:
    return json.loads(admin_ok(daemon, *args, "--json"))


def assert_fits(text: str) -> None:
    wide = [line for line in text.splitlines() if len(line) > COLUMNS]
    assert not wide, f"lines wider than {COLUMNS} columns: {wide}"


def one_line(text: str) -> str:
    return " ".join(text.split())


def unique_prefix(notebook_id: str, *others: str) -> str:
    """The shortest prefix (at least 3 characters) that names ``notebook_id`` alone."""
    size = 3
    while any(other.startswith(notebook_id[:size]) for other in others):
        size += 1
    return notebook_id[:size]


def rows_of(table: str) -> dict[str, list[str]]:
    """A table's lines by their first word (a short notebook id, or a label)."""
    return {line.split()[0]: line.split() for line in table.splitlines()[1:]}


def notebook_with_file(client: Any, folder: Path) -> tuple[str, Path]:
    """A kernel-less room saved under a deep folder, so its path is longer than any table."""
    folder.mkdir(parents=True)
    path = folder / "quarterly-results-with-a-long-name.ipynb"
    created = client.request("create", runtime=None, ephemeral=False, peer_label="bob")
    client.request("save", notebook_id=created["notebook_id"], path=str(path))
    return created["notebook_id"], path


def deep_folder(base: Path) -> Path:
    return base / "projects" / "a-rather-deep-folder-tree" / "that-goes-on" / "and-on-and-on"


def test_a_file_name_with_terminal_escapes_is_printed_escaped(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """Issue 20 §5: a notebook's file name could retitle or clear the operator's terminal."""
    name = "\x1b]0;owned\x07\x1b[2J\x9b1m.ipynb"
    with daemon.client() as client:
        created = client.request("create", runtime=None, ephemeral=False, peer_label="ops")
        client.request("save", notebook_id=created["notebook_id"], path=str(tmp_path / name))
        shown = "\\x1b]0;owned\\x07\\x1b[2J\\x9b1m.ipynb"
        for args in (["rooms"], ["room", created["notebook_id"]]):
            printed = admin_ok(daemon, *args)
            assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", printed), repr(printed)
            assert shown in one_line(printed).replace(" ", ""), printed
        as_json = admin_ok(daemon, "rooms", "--json")
        assert not re.search("[\x1b\x9b]", as_json), repr(as_json)
        paths = [room["path"] for room in json.loads(as_json)["rooms"]]
        assert paths == [str(tmp_path / name)]


# --- one-shot read commands ---------------------------------------------------------------


def test_read_commands_answer_from_the_live_daemon_as_json_and_as_80_column_tables(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    with daemon.client() as client:
        kernel_room = client.request("create", peer_label=LONG_LABEL)["notebook_id"]
        assert run_cell(client, kernel_room, "40 + 2")["status"] == "done"
        file_room, path = notebook_with_file(client, deep_folder(tmp_path))
        described = daemon.request("describe_room", notebook_id=kernel_room)
        kernel_pid = described["kernel_pid"]
        assert psutil.pid_exists(kernel_pid)

        status = admin_json(daemon, "status")
        assert status["pid"] == daemon.pid
        assert (status["rooms"], status["kernels"]) == (2, 1)
        assert status["socket"] == str(daemon.paths.socket)

        rooms = {room["notebook_id"]: room for room in admin_json(daemon, "rooms")["rooms"]}
        assert set(rooms) == {kernel_room, file_room}
        assert rooms[kernel_room]["kernel_pid"] == kernel_pid
        assert rooms[kernel_room]["peers"][0]["label"] == LONG_LABEL
        assert rooms[file_room]["path"] == str(path)
        assert rooms[file_room]["kernel_status"] == "none"

        kernel_prefix = unique_prefix(kernel_room, file_room)
        room = admin_json(daemon, "room", kernel_prefix)
        assert room["notebook_id"] == kernel_room
        assert room["kernel_pid"] == kernel_pid
        assert room["kernel_actor_pid"] == described["kernel_actor_pid"]
        assert room["executions"] == {"live": [], "finished": 1}
        assert room["latch"]["kernel_attached"] is True
        assert room["keep_alive"]["pending"] is False
        assert [peer["label"] for peer in room["peers"]] == [LONG_LABEL]
        assert admin_json(daemon, "room", file_room)["path"] == str(path)

        peers = admin_json(daemon, "peers")["peers"]
        assert sorted((p["notebook_id"], p["label"]) for p in peers) == sorted(
            [(kernel_room, LONG_LABEL), (file_room, "bob")]
        )

        kernels = admin_json(daemon, "kernels")["kernels"]
        assert [(k["notebook_id"], k["kernel_pid"]) for k in kernels] == [(kernel_room, kernel_pid)]
        assert kernels[0]["actor_pid"] == described["kernel_actor_pid"]
        assert psutil.pid_exists(kernels[0]["actor_pid"])

        tree = admin_json(daemon, "tree")
        assert tree["actor"] == "Daemon"
        assert psutil.pid_exists(tree["pid"])
        by_room = {node["notebook_id"]: node for node in tree["rooms"]}
        assert by_room[kernel_room]["pid"] == rooms[kernel_room]["room_pid"]
        assert by_room[kernel_room]["kernel"] == {
            "actor_pid": described["kernel_actor_pid"],
            "kernel_pid": kernel_pid,
        }
        assert by_room[file_room]["kernel"] is None
        assert all(node["address"] for node in tree["rooms"])

        assert admin_json(daemon, "clients") == {"clients": []}

        tables = {
            name: admin_ok(daemon, name)
            for name in ("status", "rooms", "peers", "kernels", "tree", "clients", "help")
        }
        tables["room"] = admin_ok(daemon, "room", kernel_prefix)
        tables["room file"] = admin_ok(daemon, "room", unique_prefix(file_room, kernel_room))
        for name, text in tables.items():
            assert text.strip(), name
            assert_fits(text)

    short_k, short_f = kernel_room[:8], file_room[:8]
    assert f"pid {daemon.pid}" in tables["status"]
    assert "rooms      2" in tables["status"]
    listed = rows_of(tables["rooms"])
    assert tables["rooms"].split()[:6] == ["ID", "PATH", "PEERS", "KERNEL", "KPID", "ROOM"]
    path_cell, peers_cell, *kernel_cells = listed[short_k][1:]
    assert path_cell == "(ephemeral)"
    assert kernel_cells == ["idle", str(kernel_pid), str(rooms[kernel_room]["room_pid"])]
    assert peers_cell.startswith("alice-the")
    assert peers_cell.endswith("...")
    assert listed[short_f][1].startswith("...")
    assert listed[short_f][1].endswith("name.ipynb")
    assert listed[short_f][2:4] == ["bob", "none"]
    assert f"kernel          idle, pid {kernel_pid}" in tables["room"]
    assert f"notebook        {kernel_room}" in tables["room"]
    assert "executions      0 live, 1 finished" in tables["room"]
    assert re.search(
        r"\npath {12}\.\.\.[^ ]*/and-on-and-on/quarterly-results-with-a-long-name\.ipynb\n",
        tables["room file"],
    )
    assert rows_of(tables["kernels"])[short_k][:3] == [short_k, "idle", str(kernel_pid)]
    assert short_f not in tables["kernels"]
    assert f"`- Kernel actor pid {described['kernel_actor_pid']}" in tables["tree"]
    assert f"kernel pid {kernel_pid}" in tables["tree"]
    assert tables["clients"].strip() == "No nbstage mcp clients are connected."
    for name in COMMAND_NAMES:
        assert f"\n  {name}" in tables["help"], name


def test_clients_shows_each_connected_nbstage_mcp_with_its_notebooks(
    daemon: RunningDaemon,
) -> None:
    async def body() -> None:
        session = mcp_client(daemon, "legacy", label="night-shift")
        async with session as client:
            first = await client.call_tool("create_notebook", {})
            second = await client.call_tool("create_notebook", {})
            parked = first.structured_content["notebook_id"]
            active = second.structured_content["notebook_id"]

            def reported() -> dict[str, Any] | None:
                clients = admin_json(daemon, "clients")["clients"]
                mine = [c for c in clients if c["active"] == active and parked in c["parked"]]
                return mine[0] if mine else None

            entry = await anyio.to_thread.run_sync(
                wait_until, reported, 20, "the session manager's report of both notebooks"
            )
            assert entry["label"] == "night-shift"
            assert entry["supervisor_pid"] == session.server_pid
            assert psutil.pid_exists(entry["session_manager_pid"])
            assert entry["session_manager_pid"] != session.server_pid
            assert entry["restarts"] == 0
            assert entry["operator_id"] == "agent::night-shift"

            table = await anyio.to_thread.run_sync(admin_ok, daemon, "clients")
            assert_fits(table)
            row = rows_of(table)["night-shift"]
            assert row == [
                "night-shift",
                "agent::night-shift",
                str(session.server_pid),
                str(entry["session_manager_pid"]),
                "0",
                active[:8],
                parked[:8],
            ]

    async def bounded() -> None:
        with anyio.fail_after(90):
            await body()

    anyio.run(bounded)


def test_log_gives_the_newest_lines_wrapped_to_the_terminal(daemon: RunningDaemon) -> None:
    newest = admin_json(daemon, "log", "1")["lines"]
    assert len(newest) == 1
    assert set(newest[0]) >= {"ts", "level", "logger", "pid", "msg"}

    lines = admin_json(daemon, "log", "500")["lines"]
    assert any(f"daemon ready on {daemon.paths.socket}" in line["msg"] for line in lines)

    with daemon.client() as client:
        nid = client.request("create")["notebook_id"]
        run_cell(client, nid, "1+1")
        kernel = room_view(daemon, nid)["kernel_pid"]
        client.request("evict", notebook_id=nid)
    said = [line["msg"] for line in admin_json(daemon, "log", "500")["lines"]]
    for event in (
        "anonymous joins an untitled notebook",
        f"room {nid} opened: untitled",
        f"kernel pid {kernel} of room {nid} ready",
        f"kernel pid {kernel} of room {nid} stopped",
        f"room {nid} closed (evicted by the operator)",
    ):
        assert event in said, f"the operator's log says {event!r}"

    text = admin_ok(daemon, "log", "500")
    assert_fits(text)
    assert f"daemon ready on {daemon.paths.socket}" in one_line(text)
    assert re.match(r"\d\d:\d\d:\d\d (debug|info|warning|error)", text)


# --- one-shot commands that change things -------------------------------------------------


def test_kernel_commands_and_evict_say_what_they_did_and_do_it(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    with daemon.client() as client:
        kept = client.request("create", peer_label="keeper")["notebook_id"]
        assert run_cell(client, kept, "1")["status"] == "done"
        filed, path = notebook_with_file(client, tmp_path / "saved")
        old_pid = room_view(daemon, kept)["kernel_pid"]
        prefix = unique_prefix(kept, filed)

        restarted = admin_ok(daemon, "restart-kernel", prefix)
        new_pid = room_view(daemon, kept)["kernel_pid"]
        assert new_pid != old_pid
        assert restarted == f"restarted kernel of {kept}: new pid {new_pid}\n"
        wait_until(lambda: pid_gone(old_pid), 15, "the old kernel to exit")
        assert psutil.pid_exists(new_pid)
        assert run_cell(client, kept, "2")["status"] == "done"

        stopped = admin(daemon.env, daemon.paths.root, "shutdown-kernel", prefix, "--json")
        assert stopped.returncode == 0, stopped.stderr
        assert json.loads(stopped.stdout) == {"shutdown": True, "kernel_pid": new_pid}
        wait_until(lambda: pid_gone(new_pid), 15, "the stopped kernel to exit")
        assert room_view(daemon, kept)["kernel_status"] == "none"

        again = admin(daemon.env, daemon.paths.root, "shutdown-kernel", prefix)
        assert again.returncode == 1
        assert again.stdout == ""
        assert again.stderr == f"{kept[:8]}: This notebook has no running kernel.\n"

        ambiguous = admin(daemon.env, daemon.paths.root, "evict", "")
        assert ambiguous.returncode == 1
        assert one_line(ambiguous.stderr).startswith("'' matches 2 rooms (")
        assert one_line(ambiguous.stderr).endswith("); type more of the notebook id.")
        unknown = admin(daemon.env, daemon.paths.root, "evict", "zzz")
        assert unknown.returncode == 1
        message = one_line(unknown.stderr)
        assert message.startswith("No room's notebook id starts with 'zzz' (resident: ")
        assert kept[:8] in message
        assert filed[:8] in message
        assert {room["notebook_id"] for room in daemon.request("list_rooms")["rooms"]} == {
            kept,
            filed,
        }

        client.request("create_cell", notebook_id=filed, source="x = 'evicted'")
        assert {room_view(daemon, nid)["room_pid"] for nid in (kept, filed)} == {daemon.pid}
        assert admin_ok(daemon, "evict", unique_prefix(filed, kept)) == f"evicted {filed} (saved)\n"
        assert room_view(daemon, filed) is None
        assert "x = 'evicted'" in path.read_text()
        assert admin_ok(daemon, "evict", kept) == f"evicted {kept} (ephemeral, discarded)\n"
        assert daemon.request("list_rooms") == {"rooms": []}
        assert daemon.request("tree")["rooms"] == []


def test_reap_reaps_the_rooms_nobody_uses_and_names_them(state_dir: Path) -> None:
    settings = {"NBSTAGE_REAPER_TTL_SECS": "0", "NBSTAGE_KEEP_ALIVE_SECS": "0.2"}
    with daemon_running(state_dir, settings) as daemon:
        with daemon.client() as client:
            with_kernel = client.request("create", peer_label="gone")["notebook_id"]
            assert run_cell(client, with_kernel, "1")["status"] == "done"
            bare = client.request("create", runtime=None, peer_label="gone")["notebook_id"]
            kernel_pid = room_view(daemon, with_kernel)["kernel_pid"]
        wait_until(lambda: pid_gone(kernel_pid), 15, "the kernel to go after keep-alive")

        with daemon.client() as watcher:
            spared = watcher.request("create", runtime=None, peer_label="here")["notebook_id"]
            said = admin_ok(daemon, "reap")
            assert_fits(said)
            head, _, named = one_line(said).partition(": ")
            assert head == "reaped 2 rooms"
            assert sorted(named.split(", ")) == sorted([with_kernel, bare])
            assert [room["notebook_id"] for room in daemon.request("tree")["rooms"]] == [spared]
            assert [room["notebook_id"] for room in admin_json(daemon, "rooms")["rooms"]] == [
                spared
            ]
            assert admin_json(daemon, "reap") == {"reaped": [], "kept": []}
            assert admin_ok(daemon, "reap").startswith("reaped no rooms")


def unwritable(folder: Path) -> Callable[[], None]:
    """Make every save into ``folder`` fail; returns what undoes it.

    chmod 0o555 does it, except for root, whom permissions do not stop: then a plain
    file takes the folder's place, and a save into it fails with "Not a directory"."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return lambda: folder.chmod(0o755)
    aside = folder.with_name(folder.name + "-aside")
    folder.rename(aside)
    folder.write_text("not a directory")

    def restore() -> None:
        folder.unlink()
        aside.rename(folder)

    return restore


def squeezed(text: str) -> str:
    return "".join(text.split())


def test_reap_keeps_a_room_whose_save_fails_with_its_edits_and_says_why(
    state_dir: Path, tmp_path: Path
) -> None:
    settings = {
        "NBSTAGE_REAPER_TTL_SECS": "0",
        "NBSTAGE_REAPER_INTERVAL_SECS": "3600",
        "NBSTAGE_AUTOSAVE_DELAY_SECS": "3600",
        "NBSTAGE_AUTOSAVE_MAX_DELAY_SECS": "3600",
    }
    with daemon_running(state_dir, settings) as daemon:
        with daemon.client() as client:
            notebook_id, path = notebook_with_file(client, tmp_path / "read-only")
            client.request("create_cell", notebook_id=notebook_id, source="x = 'only in memory'")
        wait_until(lambda: room_view(daemon, notebook_id)["peers"] == [], 15, "the writer to go")
        restore = unwritable(path.parent)
        try:
            answer = admin_json(daemon, "reap")
            assert answer["reaped"] == []
            [kept] = answer["kept"]
            assert (kept["notebook_id"], kept["reason"]) == (notebook_id, "reaped")
            assert str(path) in kept["problem"]
            assert room_view(daemon, notebook_id) is not None

            said = admin_ok(daemon, "reap")
            assert_fits(said)
            lines = said.splitlines()
            assert lines[:2] == [
                "reaped no rooms",
                "kept 1 room, because saving before removal failed:",
            ]
            assert lines[2].startswith(f"  {notebook_id}: at ")
            assert "closing (reaped):" in one_line(said)
            assert squeezed(kept["problem"]) in squeezed(said)

            described = admin_json(daemon, "room", notebook_id)
            assert described["unsaved"] is True
            assert (described["kept"]["reason"], described["kept"]["problem"]) == (
                "reaped",
                kept["problem"],
            )
            shown = admin_ok(daemon, "room", notebook_id[:8])
            assert_fits(shown)
            failure = (
                r"\ncells +1, unsaved changes\nsave failed +at \d\d:\d\d:\d\d, closing \(reaped\): "
            )
            assert re.search(failure, shown), shown
            assert squeezed(kept["problem"]) in squeezed(shown)

            logged = [line["msg"] for line in admin_json(daemon, "log", "200")["lines"]]
            assert any(f"kept room {notebook_id}" in msg and str(path) in msg for msg in logged)

            with daemon.client() as client:
                client.request("attach", notebook_id=notebook_id, peer_label="reader")
                cells = client.request("get_cells", notebook_id=notebook_id, format="json")
                assert [cell["source"] for cell in cells["cells"]] == ["x = 'only in memory'"]
        finally:
            restore()
        wait_until(lambda: room_view(daemon, notebook_id)["peers"] == [], 15, "the reader to go")
        assert admin_json(daemon, "reap") == {"reaped": [notebook_id], "kept": []}
        assert room_view(daemon, notebook_id) is None
        assert "x = 'only in memory'" in path.read_text()


# --- mistakes and a daemon that is not there ----------------------------------------------


def test_a_daemon_that_is_not_running_gets_one_sentence_and_exit_code_1(state_dir: Path) -> None:
    sentence = (
        f"The nbstage daemon is not running (no socket at {state_dir / 'daemon.sock'}). "
        "Start it with: nbstage daemon start"
    )
    for args in (["status"], ["rooms", "--json"], ["evict", "abc"], []):
        result = run_cli("admin", *args, state_dir=state_dir, env={"COLUMNS": "80"})
        assert result.returncode == 1, args
        assert result.stdout == "", args
        assert one_line(result.stderr) == sentence, args
        assert_fits(result.stderr)
    assert not (state_dir / "daemon.sock").exists()


def test_a_wrong_command_line_lists_the_commands_and_exits_2(state_dir: Path) -> None:
    unknown = run_cli("admin", "romms", state_dir=state_dir, env={"COLUMNS": "80"})
    assert unknown.returncode == 2
    message = one_line(unknown.stderr)
    assert message.startswith("Unknown command 'romms' (did you mean rooms?). Commands: status,")
    assert all(name in message for name in COMMAND_NAMES)
    assert_fits(unknown.stderr)

    missing = run_cli("admin", "room", state_dir=state_dir)
    assert (missing.returncode, missing.stderr) == (2, "Usage: room ID\n")
    bad_count = run_cli("admin", "log", "many", state_dir=state_dir)
    assert (bad_count.returncode, bad_count.stderr) == (2, "Usage: log [N]\n")


# --- the interactive console --------------------------------------------------------------


class Terminal:
    """A person at an 80x24 terminal running ``nbstage admin``: types lines, reads the screen."""

    def __init__(self, daemon: RunningDaemon) -> None:
        env = {**os.environ, **daemon.env, "TERM": "xterm"}
        env.pop("COLUMNS", None)
        env.pop("LINES", None)
        self.child = pexpect.spawn(
            sys.executable,
            [*NBSTAGE[1:], "admin", "--state-dir", str(daemon.paths.root)],
            env=env,
            dimensions=(24, COLUMNS),
            encoding="utf-8",
            codec_errors="replace",
            timeout=PTY_TIMEOUT,
        )

    @staticmethod
    def clean(raw: str) -> str:
        return ESCAPES.sub("", raw)

    def until_prompt(self) -> str:
        """Everything shown up to the next prompt, as text."""
        self.child.expect_exact(PROMPT)
        return self.clean(self.child.before)

    def type_line(self, line: str) -> str:
        """Type a line and press Enter; the screen it produces, without the echoed line."""
        self.child.sendline(line)
        shown = self.until_prompt()
        echoed, _, answer = shown.partition("\n")
        assert echoed.endswith(line), shown
        assert_fits(answer)
        return answer

    def type_keys(self, keys: str, pattern: str) -> str:
        """Type keys without Enter; what the screen shows once it matches ``pattern``."""
        self.child.send(keys)
        self.child.expect(pattern)
        return self.clean(self.child.before + self.child.after)


def test_the_interactive_console_as_a_person_uses_it(daemon: RunningDaemon) -> None:
    with daemon.client() as client:
        kept = client.request("create", peer_label="alice")["notebook_id"]
        assert run_cell(client, kept, "7 * 6")["status"] == "done"
        doomed = client.request("create", runtime=None, peer_label="bob")["notebook_id"]
        kernel_pid = room_view(daemon, kept)["kernel_pid"]
        kept_prefix = unique_prefix(kept, doomed)
        history = daemon.paths.logs / "admin_history"
        assert not history.exists()

        term = Terminal(daemon)
        try:
            intro = term.until_prompt()
            assert f"nbstage admin: daemon 0.1.0 pid {daemon.pid}, 2 rooms, 1 kernel." in intro
            assert "Type help for the commands, quit to leave." in intro

            shown = term.type_line("help")
            assert shown.startswith("Commands (ID: a notebook id, or any unique prefix of one):")
            for name in COMMAND_NAMES:
                assert f"\n  {name}" in shown, name

            shown = term.type_line("rooms")
            table = rows_of(shown)
            assert shown.split()[:3] == ["ID", "PATH", "PEERS"]
            assert table[kept[:8]][1:5] == ["(ephemeral)", "alice", "idle", str(kernel_pid)]
            assert table[doomed[:8]][1:5] == ["(ephemeral)", "bob", "none", "-"]

            shown = term.type_line(f"room {kept_prefix}")
            assert f"notebook        {kept}\n" in shown
            assert f"kernel          idle, pid {kernel_pid}" in shown
            assert "agents          1\n" in shown
            assert "people          none\n" in shown
            assert "alice" in shown

            shown = term.type_line("frobnicate")
            assert one_line(shown).startswith("Unknown command 'frobnicate'. Commands: status,")
            assert "shutdown-kernel" in shown

            shown = term.type_line("room nope")
            assert one_line(shown).startswith("No room's notebook id starts with 'nope'")

            assert term.type_keys("ro\t", r"o\x07?om") == "room"
            listing = term.type_keys("\t\t", r"rooms\s")
            assert re.search(r"\nroom\s+rooms", listing), listing

            completed = term.type_keys(f" {kept_prefix}\t", re.escape(kept))
            assert completed.endswith(f"{PROMPT}room {kept}"), completed
            shown = term.type_line("")
            assert f"notebook        {kept}\n" in shown

            term.child.send("\x03")
            assert term.until_prompt().strip() == "^C"

            shown = term.type_line(f"evict {unique_prefix(doomed, kept)}")
            assert one_line(shown) == f"evicted {doomed} (ephemeral, discarded)"
            assert room_view(daemon, doomed) is None
            assert doomed not in {room["notebook_id"] for room in daemon.request("tree")["rooms"]}

            shown = term.type_line("rooms")
            assert doomed[:8] not in shown
            assert kept[:8] in shown

            daemon.stop()
            shown = term.type_line("status")
            assert one_line(shown) == (
                f"The nbstage daemon is not running (no socket at {daemon.paths.socket}). "
                f"Start it with: nbstage daemon start --state-dir {daemon.paths.root}"
            )

            term.child.sendline("quit")
            term.child.expect(pexpect.EOF)
        finally:
            term.child.close(force=True)
        assert term.child.exitstatus == 0
        typed = history.read_text().splitlines()
        assert typed[:4] == ["help", "rooms", f"room {kept_prefix}", "frobnicate"]
        evict_line = f"evict {unique_prefix(doomed, kept)}"
        assert typed[-5:] == [f"room {kept} ", evict_line, "rooms", "status", "quit"]
