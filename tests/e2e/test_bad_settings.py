"""A state dir whose settings a daemon refuses: a typo in config.toml, say.

The daemon says what is wrong and where, and exits 78 before it starts anything (not
even the spare kernel an autostart asks for). An agent whose `nbstage mcp` found no
daemon and autostarted one is answered at once with the same words, not after the
first link's wait with "unreachable, reconnecting", and its session log says it once,
not at every retry. Once the file is mended, that client's next call starts the daemon
and is served.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio

from nbstage.entrypoints.common.statedir import state_paths
from nbstage.entrypoints.control.daemon_client import DaemonNotRunning
from nbstage.entrypoints.control.daemon_control import SETTINGS_REFUSED_EXIT
from tests.conftest import FAST_SETTINGS
from tests.support import RunningDaemon, mcp_client, run_bounded, run_cli, texts_of

MALFORMED = '[[kernel_hosts]]\nname = "typo"\n'
PROBLEM = "kernel host 'typo' ([[kernel_hosts]] table 1): url must be a string"


def with_malformed_config(state_dir: Path) -> Path:
    state_dir.mkdir(mode=0o700)
    config = state_dir / "config.toml"
    config.write_text(MALFORMED)
    return config


def test_daemon_start_and_restart_name_the_problem_and_exit_78(state_dir: Path) -> None:
    config = with_malformed_config(state_dir)
    for how in (["start", "--foreground"], ["start"], ["restart"]):
        done = run_cli("daemon", *how, "--state-dir", str(state_dir), state_dir=state_dir)
        assert done.returncode == SETTINGS_REFUSED_EXIT, (how, done.stdout, done.stderr)
        assert f"nbstage daemon: not started: {config}: {PROBLEM}" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
    assert not state_paths(state_dir).socket.exists()


def test_an_agents_first_call_says_what_is_wrong_and_a_mended_file_serves_it(
    state_dir: Path,
) -> None:
    config = with_malformed_config(state_dir)
    daemon = RunningDaemon(state_paths(state_dir), dict(FAST_SETTINGS), pid=0)
    logs = state_dir / "logs"

    async def body() -> None:
        async with mcp_client(daemon, "legacy", label="typo") as client:
            refused = await client.call_tool("create_notebook", {})
            assert refused.is_error, refused.structured_content
            said = " ".join(texts_of(refused))
            assert f"The nbstage daemon cannot start: {config}: {PROBLEM}" in said, said
            assert "the next call starts it" in said, said
            logged = (logs / "daemon.log").read_text()
            assert f"the daemon refuses to start: {config}: {PROBLEM}" in logged, logged
            assert "spare kernel" not in logged, "a spare kernel was launched before the refusal"

            config.unlink()
            # Nobody starts the daemon here: the client does, once the settings read.
            with anyio.fail_after(60):
                while (created := await client.call_tool("create_notebook", {})).is_error:
                    said = texts_of(created)[-1]
                    assert "unreachable" in said or "cannot start" in said, said
                    await anyio.sleep(0.05)
            assert created.structured_content["notebook_id"], created.structured_content
            daemon.pid = (await anyio.to_thread.run_sync(daemon.request, "identity"))["pid"]

    try:
        run_bounded(body, budget=120)
    finally:
        with contextlib.suppress(DaemonNotRunning, OSError):
            run_cli("daemon", "stop", "--state-dir", str(state_dir), state_dir=state_dir)
    said_in_log = (logs / "session.log").read_text().count(PROBLEM)
    assert said_in_log == 1, f"the refusal was logged {said_in_log} times"
