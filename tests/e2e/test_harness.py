"""``nbstage harness`` (SPEC §9) run as a person or CI runs it: a subprocess on a script.

Every scenario in ``examples/`` must pass. Around them: a failing step says what it
expected and what came back, a bad script is refused before anything starts, the run's
timeout and Ctrl-C end it early, and after every run no process it started remains
(checked against the daemon and client pids its JSON report names).
"""

from __future__ import annotations

import json
import signal
import subprocess
import textwrap
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from nbstage.entrypoints.common.statedir import state_paths
from nbstage.entrypoints.control.daemon_control import query_status, stop
from tests.support import NBSTAGE, processes_of_daemon, wait_until

pytestmark = pytest.mark.e2e

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.toml"))
RUN_BOUND_SECS = 240
"""The longest one harness subprocess may take; a bound on failure, never a wait."""
GONE_DEADLINE_SECS = 60
"""How long a run's processes may take to be gone after it; a bound on failure."""
RUN_TIMEOUT_SECS = 30
"""The whole-run timeout under test. It also covers starting the daemon, so it is ten
times what that takes on a busy machine; the step in flight when it runs out sleeps far
longer, so the timeout, not the step, ends the run at any speed."""


def harness(script: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*NBSTAGE, "harness", str(script), *extra],
        capture_output=True,
        text=True,
        timeout=RUN_BOUND_SECS,
    )


def run_reported(script: Path, report: Path) -> tuple[subprocess.CompletedProcess[str], dict]:
    result = harness(script, "--json", str(report))
    return result, json.loads(report.read_text())


def write_script(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario.toml"
    path.write_text(textwrap.dedent(text))
    return path


def lines_of(result: subprocess.CompletedProcess[str]) -> list[str]:
    return result.stdout.strip().splitlines()


def assert_nothing_left(report: dict[str, Any]) -> None:
    """No process of any daemon or nbstage mcp the run started, and no temp dir, remains."""
    pids = report["daemon_pids"] + [p for ps in report["client_pids"].values() for p in ps]
    assert report["daemon_pids"], "the report names the daemons it started"
    for pid in pids:
        wait_until(
            lambda pid=pid: not processes_of_daemon(pid),
            GONE_DEADLINE_SECS,
            f"processes of pid {pid}",
        )
    assert report["leftovers_killed"] == [], "stopping should have left nothing to kill"
    assert not Path(report["work_dir"]).exists()


# --- the shipped scenarios -----------------------------------------------------------------


@pytest.mark.timeout(RUN_BOUND_SECS + 30)
@pytest.mark.parametrize("script", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_every_example_scenario_passes_and_leaves_nothing_running(
    script: Path, tmp_path: Path
) -> None:
    result, report = run_reported(script, tmp_path / "report.json")
    steps = len(report["steps"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert lines_of(result)[-1] == f"{steps} passed, 0 failed"
    assert [line[:4] for line in lines_of(result)[:-1]] == ["PASS"] * steps
    assert [step["status"] for step in report["steps"]] == ["pass"] * steps
    assert all(step["duration_secs"] >= 0 for step in report["steps"])
    assert_nothing_left(report)


def test_the_examples_include_every_scenario_the_issue_asks_for() -> None:
    assert {path.stem for path in EXAMPLES} >= {
        "two-agents",
        "killed-child",
        "daemon-upgrade",
        "daemon-restart",
        "kernel-restart",
        "ephemeral-lost",
        "eight-clients",
    }


# --- failures, as a person reads them ------------------------------------------------------

FAILING = """
    [run]
    timeout_secs = 90

    [clients.alice]

    [[step]]
    client = "alice"
    call = "create_notebook"

    [[step]]
    client = "alice"
    call = "create_cell"
    args = { source = "print('answer', 6 * 7)", and_run = true }
    expect = { text_contains = "answer 43" }

    [[step]]
    fault = "stop_client"
    client = "alice"

    [[step]]
    client = "alice"
    call = "list_active_notebooks"

    [[step]]
    fault = "start_client"
    client = "alice"

    [[step]]
    client = "alice"
    call = "list_active_notebooks"

    [[step]]
    fault = "start_daemon"
"""


@pytest.mark.timeout(RUN_BOUND_SECS + 30)
def test_a_failing_step_says_what_it_expected_and_what_came_back(tmp_path: Path) -> None:
    """Also: a stopped client is unusable until started again, and a fault whose premise
    does not hold (starting a daemon that runs) fails instead of pretending."""
    result, report = run_reported(write_script(tmp_path, FAILING), tmp_path / "report.json")
    assert result.returncode == 1, result.stdout + result.stderr
    lines = lines_of(result)
    assert lines[-1] == "4 passed, 3 failed", result.stdout + result.stderr
    wrong = lines[1]
    assert wrong.startswith("FAIL   2  alice create_cell ")
    # Not a bare "43": a random cell or execution id in the text may hold that.
    assert "expected text containing 'answer 43'; got is_error=false, text='" in wrong
    assert "answer 42" in wrong.split("got", 1)[1]
    assert lines[3].startswith("FAIL   4  alice list_active_notebooks")
    assert "client alice is unusable: it was stopped" in lines[3]
    assert [line[:4] for line in (lines[0], lines[2], lines[4], lines[5])] == ["PASS"] * 4
    assert lines[6].startswith("FAIL   7  fault start_daemon")
    assert "a daemon was running already" in lines[6]
    step = report["steps"][1]
    assert (step["status"], step["expected"]) == ("fail", "text containing 'answer 43'")
    assert "answer 42" in step["got"]["text"]
    assert step["got"]["structured"]["execution"]["status"] == "done"
    assert len(report["client_pids"]["alice"]) == 2, "start_client started a fresh process"
    assert_nothing_left(report)


TWINS = """
    [run]
    timeout_secs = 90
    settings = { heartbeat_secs = 0.2 }

    [clients.first]
    label = "twin"

    [clients.second]
    label = "twin"
    mode = "2026-07-28"

    [[step]]
    client = "first"
    call = "create_notebook"

    [[step]]
    client = "second"
    call = "create_notebook"

    [[step]]
    fault = "kill_child"
    client = "second"

    [[step]]
    group = "after"
    client = "first"
    call = "get_all_cells"
    expect = { text_not_contains = "[nbstage]" }

    [[step]]
    group = "after"
    client = "second"
    call = "get_all_cells"
    expect = { text_contains = "[nbstage] Session server restarted" }
"""


@pytest.mark.timeout(RUN_BOUND_SECS + 30)
def test_kill_child_tells_clients_with_one_label_apart_by_their_process(tmp_path: Path) -> None:
    result, report = run_reported(write_script(tmp_path, TWINS), tmp_path / "report.json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert lines_of(result)[-1] == "5 passed, 0 failed"
    assert report["steps"][2]["detail"].startswith("session manager pid ")
    assert_nothing_left(report)


BAD_SCRIPTS = [
    (
        'client = "alice"\ncall = "get_all_cells"\nargz = {}\n',
        "step 2 (line 10): unknown key 'argz' in a call step",
    ),
    ('fault = "explode_daemon"\n', "step 2 (line 10): unknown fault 'explode_daemon'"),
    (
        'client = "alice"\ncall = "connect_notebook"\n'
        'args = { notebook_id = "${nb.notebook_id}" }\n',
        "step 2 (line 10): substitution ${nb...} refers to 'nb', which no earlier step saves",
    ),
]


@pytest.mark.parametrize(("second_step", "message"), BAD_SCRIPTS)
def test_a_bad_script_is_refused_before_anything_starts(
    tmp_path: Path, second_step: str, message: str
) -> None:
    state_dir = tmp_path / "state"
    head = (
        f'[run]\nstate_dir = "{state_dir}"\n\n[clients.alice]\n\n'
        '[[step]]\nclient = "alice"\ncall = "list_active_notebooks"\n\n[[step]]\n'
    )
    script = tmp_path / "bad.toml"
    script.write_text(head + second_step)
    result = harness(script)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"harness: {script}: {message}")
    assert result.stderr.count("\n") == 1
    assert not state_dir.exists(), "nothing was started, not even a state dir"
    assert query_status(state_paths(state_dir)) is None


# --- bounds: the run's timeout and Ctrl-C --------------------------------------------------


@pytest.mark.timeout(RUN_BOUND_SECS + 30)
def test_the_whole_run_timeout_cancels_the_step_in_flight(tmp_path: Path) -> None:
    """The step sleeps longer than the harness subprocess may run (RUN_BOUND_SECS), so
    a run that ends at all was ended by its timeout."""
    step_secs = 2 * RUN_BOUND_SECS
    script = write_script(
        tmp_path,
        f"""
        [run]
        timeout_secs = {RUN_TIMEOUT_SECS}

        [[step]]
        fault = "sleep"
        secs = {step_secs}

        [[step]]
        fault = "kill_daemon"
        """,
    )
    result, report = run_reported(script, tmp_path / "report.json")
    assert result.returncode == 1
    lines = lines_of(result)
    assert lines[0].startswith(f"FAIL   1  fault sleep {step_secs:.1f}s"), lines
    assert lines[0].endswith(f"cancelled: timeout_secs ({RUN_TIMEOUT_SECS}) ran out"), lines
    assert lines[1].endswith(f"not run: timeout_secs ({RUN_TIMEOUT_SECS}) ran out"), lines
    assert lines[-1] == "0 passed, 2 failed"
    assert_nothing_left(report)


def test_json_dash_prints_the_report_instead_of_the_lines(tmp_path: Path) -> None:
    script = write_script(tmp_path, '[[step]]\nfault = "sleep"\nsecs = 0\n')
    result = harness(script, "--json", "-")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["passed"], report["failed"], report["exit_code"]) == (1, 0, 0)
    assert report["steps"][0]["description"] == "fault sleep 0.0s"
    assert report["steps"][0]["status"] == "pass"
    assert_nothing_left(report)


INTERRUPTED = """
    [run]
    timeout_secs = 200
    state_dir = "{state_dir}"
    settings = {{ keep_alive_secs = 2, heartbeat_secs = 0.5 }}

    [clients.alice]

    [[step]]
    client = "alice"
    call = "create_notebook"

    [[step]]
    client = "alice"
    call = "create_cell"
    args = {{ source = "1 + 1", and_run = true }}
    expect = {{ status = "done" }}

    [[step]]
    fault = "sleep"
    secs = 150
"""


def _read_until(proc: subprocess.Popen[str], prefix: str, timeout: float) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline() if proc.stdout else ""
        if not line:
            break
        seen.append(line.rstrip("\n"))
        if line.startswith(prefix):
            return seen
    raise AssertionError(f"no line starting {prefix!r} within {timeout}s; saw {seen}")


IN_THE_BACKGROUND = ["/bin/sh", "-c", 'trap "" INT; exec "$@"', "sh"]
"""Start a command as a script's ``cmd &`` would: with SIGINT ignored."""


@pytest.mark.timeout(RUN_BOUND_SECS + 30)
@pytest.mark.parametrize(
    ("signum", "launcher"),
    [(signal.SIGINT, []), (signal.SIGTERM, []), (signal.SIGTERM, IN_THE_BACKGROUND)],
    ids=["ctrl-c", "sigterm", "sigterm-in-the-background"],
)
def test_ctrl_c_ends_the_run_and_everything_it_started(
    tmp_path: Path, signum: int, launcher: list[str]
) -> None:
    state_dir = tmp_path / "state"
    script = write_script(tmp_path, INTERRUPTED.format(state_dir=state_dir))
    report_path = tmp_path / "report.json"
    proc = subprocess.Popen(
        [*launcher, *NBSTAGE, "harness", str(script), "--json", str(report_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        seen = _read_until(proc, "PASS   2", 120)
        status = query_status(state_paths(state_dir))
        assert status is not None
        daemon_env = psutil.Process(status.pid).environ()
        assert daemon_env["NBSTAGE_KEEP_ALIVE_SECS"] == "2", "settings reach the daemon"
        assert daemon_env["NBSTAGE_HEARTBEAT_SECS"] == "0.5"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
            # The harness was killed before its own clean-up: its daemon would outlive the test.
            stop(state_paths(state_dir))
    lines = seen + out.strip().splitlines()
    assert proc.returncode == 130, err
    assert lines[2].startswith("FAIL   3  fault sleep 150.0s")
    assert lines[2].endswith("cancelled: the run was interrupted")
    assert lines[-1] == "2 passed, 1 failed"
    report = json.loads(report_path.read_text())
    assert report["interrupted"] is True
    assert report["daemon_pids"] == [status.pid]
    assert_nothing_left(report)
    assert query_status(state_paths(state_dir)) is None
