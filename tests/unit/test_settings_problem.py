"""What a daemon would say of its settings before it starts, as the daemon and its
clients both say it: where the problem is (the file or the variable) and what it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbstage.actors.session.daemon_link import DaemonFailure, DaemonLinkClosed, DaemonLinkRefused
from nbstage.actors.session.daemon_requests import UNREACHABLE, DaemonRequests, settings_refused
from nbstage.protocol.common.settings import Settings, settings_problem
from nbstage.protocol.daemon.requests import GetIdentity

CASES = [
    (None, {}, None),
    ("max_rooms = 3\n", {}, None),
    ("figur = 3\n", {}, "unknown settings in {config}: figur"),
    ("figure_files = 'abc'\n", {}, "figure_files = 'abc' ({config}) is not of type int: "),
    ("figure_files = [1]\n", {}, "figure_files = [1] ({config}) is not of type int: "),
    (None, {"NBSTAGE_FIGURE_FILES": "many"}, "figure_files = 'many' (NBSTAGE_FIGURE_FILES) is"),
    ("figure_files = \n", {}, "{config} is not valid TOML: Invalid value (at line 1, column 16)"),
    ('[[kernel_hosts]]\nname = "x"\n', {}, "{config}: kernel host 'x' ([[kernel_hosts]] table 1)"),
    ("max_rooms = inf\n", {}, "max_rooms = inf ({config}) is not of type int: "),
    ("max_rooms = 1e400\n", {}, "max_rooms = inf ({config}) is not of type int: "),
]


@pytest.mark.parametrize(("toml", "environ", "said"), CASES)
def test_the_problem_names_where_it_is(
    tmp_path: Path, toml: str | None, environ: dict[str, str], said: str | None
) -> None:
    if toml is not None:
        (tmp_path / "config.toml").write_text(toml)
    problem = settings_problem(tmp_path, environ)
    if said is None:
        assert problem is None
    else:
        assert problem is not None
        assert problem.startswith(said.format(config=tmp_path / "config.toml")), problem


def test_a_refusal_for_the_settings_is_what_every_request_says_until_a_link_works() -> None:
    told: list[object] = []
    requests = DaemonRequests()
    requests.connect(told.append, "/nowhere.sock", owner=None)
    answers: list[object] = []
    requests.send(GetIdentity(), answers.append)
    assert requests.link is not None
    requests.lost(DaemonLinkRefused(requests.link.link, "refused", "config.toml: bad"))
    requests.send(GetIdentity(), answers.append)
    said = [a.message for a in answers if isinstance(a, DaemonFailure)]
    assert said == [settings_refused("config.toml: bad")] * 2
    assert requests.refused_in_a_row == 1

    requests.connect(told.append, "/nowhere.sock", owner=None)
    requests.lost(DaemonLinkRefused(requests.link.link, "refused", "config.toml: bad"))
    assert requests.refused_in_a_row == 2
    requests.connect(told.append, "/nowhere.sock", owner=None)
    requests.lost(DaemonLinkClosed(requests.link.link, "closed"))
    assert (requests.refused_in_a_row, requests.unreachable) == (0, UNREACHABLE)


def test_nbstage_mcp_takes_the_default_figure_files_when_the_settings_do_not_read(
    tmp_path: Path,
) -> None:
    """It used to log and send the class's slot descriptor instead of the default, which
    no frame could carry: the session child never started and calls timed out."""
    from nbstage.entrypoints.mcp.mcp_edge import _figure_files

    (tmp_path / "config.toml").write_text("figure_files = 5\n")
    assert _figure_files(tmp_path) == 5
    (tmp_path / "config.toml").write_text("figure_files = 'five'\n")
    assert _figure_files(tmp_path) == Settings().figure_files == 64
