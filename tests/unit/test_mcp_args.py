"""`nbstage mcp`'s command line read without click (entrypoints/mcp/mcp_args.py): the plain
forms as click reads them, and None (click reads it) for everything else."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbstage.entrypoints.mcp.mcp_args import McpArgs, read_mcp_args

ENV = {"NBSTAGE_STATE_DIR": "/from/env"}


@pytest.mark.parametrize(
    ("argv", "environ", "expected"),
    [
        pytest.param([], {}, McpArgs(None, True, None), id="nothing: the defaults"),
        pytest.param([], ENV, McpArgs(None, True, "/from/env"), id="the state dir from the env"),
        pytest.param([], {"NBSTAGE_STATE_DIR": ""}, McpArgs(None, True, None), id="empty env"),
        pytest.param(
            ["--state-dir", "/s"], ENV, McpArgs(None, True, "/s"), id="the option over the env"
        ),
        pytest.param(["--state-dir=/s"], {}, McpArgs(None, True, "/s"), id="with ="),
        pytest.param(
            ["--label", "a b", "--no-autostart"], {}, McpArgs("a b", False, None), id="all"
        ),
        pytest.param(["--label=x=y"], {}, McpArgs("x=y", True, None), id="= in the value"),
        pytest.param(["--label", "a", "--label", "b"], {}, McpArgs("b", True, None), id="last"),
        pytest.param(["--help"], {}, None, id="help is click's"),
        pytest.param(["--bogus"], {}, None, id="an unknown option"),
        pytest.param(["extra"], {}, None, id="an argument"),
        pytest.param(["--label"], {}, None, id="a missing value"),
        pytest.param(["--label="], {}, None, id="an empty value"),
        pytest.param(["--label", "--no-autostart"], {}, None, id="a value like an option"),
        pytest.param(["--no-autostart=1"], {}, None, id="a flag with a value"),
        pytest.param(["--"], {}, None, id="the end of options"),
    ],
)
def test_the_plain_forms_are_read_and_the_rest_left_to_click(
    argv: list[str], environ: dict[str, str], expected: McpArgs | None
) -> None:
    assert read_mcp_args(argv, environ) == expected


def test_a_state_dir_that_is_a_file_is_left_to_click(tmp_path: Path) -> None:
    a_file = tmp_path / "state"
    a_file.write_text("")
    assert read_mcp_args(["--state-dir", str(a_file)], {}) is None
    assert read_mcp_args([], {"NBSTAGE_STATE_DIR": str(a_file)}) is None
    assert read_mcp_args(["--state-dir", str(tmp_path)], {}) == McpArgs(None, True, str(tmp_path))


@pytest.mark.parametrize(
    ("argv", "environ"),
    [
        ([], {}),
        ([], ENV),
        (["--state-dir", "/s"], ENV),
        (["--state-dir=/s", "--no-autostart"], {}),
        (["--label", "a", "--label=b"], {}),
        (["--no-autostart", "--label", "x=y", "--no-autostart"], {}),
    ],
)
def test_what_is_read_is_what_click_reads(
    argv: list[str], environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from nbstage.entrypoints.cli_commands import commands

    monkeypatch.delenv("NBSTAGE_STATE_DIR", raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    command = commands.commands["mcp"]
    clicks = command.make_context("mcp", list(argv)).params
    read = read_mcp_args(argv, environ)
    assert read == McpArgs(clicks["label"], not clicks["no_autostart"], clicks["state_dir"])
