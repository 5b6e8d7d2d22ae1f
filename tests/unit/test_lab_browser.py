"""show_notebook's browser: when it is opened (a table of settings, environments and
platforms), how the switch is read, and that a refusal opens nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbstage.entrypoints.common.lab_browser import open_url, refusal
from nbstage.protocol.common.settings import load_settings

X = {"DISPLAY": ":0"}
WAYLAND = {"WAYLAND_DISPLAY": "wayland-0"}
SSH = {"SSH_CONNECTION": "10.0.0.2 5000 10.0.0.1 22"}

DECISIONS = [
    # wanted, environment, platform, the reason's first words (None: open it)
    (True, X, "linux", None),
    (True, WAYLAND, "linux", None),
    (True, {}, "linux", "no display"),
    (True, {"DISPLAY": ""}, "linux", "no display"),
    (True, SSH, "linux", "an SSH login"),
    (True, {**SSH, **X}, "linux", None),
    (True, {"SSH_TTY": "/dev/pts/1"}, "darwin", "an SSH login"),
    (True, {}, "darwin", None),
    (True, {}, "win32", None),
    (True, {}, "freebsd14", "no display"),
    (True, {**X, "CI": "true"}, "linux", "running under CI"),
    (True, {"CI": "1"}, "darwin", "running under CI"),
    (True, {**X, "CI": "false"}, "linux", None),
    (True, {**X, "CI": ""}, "linux", None),
    (False, X, "linux", "turned off"),
    (False, {}, "darwin", "turned off"),
]


@pytest.mark.parametrize(("wanted", "env", "platform", "reason"), DECISIONS)
def test_the_browser_is_opened_only_where_a_display_is_there(wanted, env, platform, reason):
    why_not = refusal(wanted, env, platform)
    assert (why_not or "")[: len(reason or "")] == (reason or "")
    assert (why_not is None) == (reason is None)


@pytest.mark.parametrize(
    ("word", "on"),
    [("0", False), ("false", False), ("No", False), ("off", False), ("1", True), ("TRUE", True)],
)
def test_the_switch_is_read_from_the_environment(tmp_path: Path, word: str, on: bool) -> None:
    settings = load_settings(tmp_path, {"NBSTAGE_LAB_OPEN_BROWSER": word})
    assert settings.lab_open_browser is on


def test_a_word_that_is_no_switch_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a switch"):
        load_settings(tmp_path, {"NBSTAGE_LAB_OPEN_BROWSER": "maybe"})


def test_the_switch_is_read_from_config_toml(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("lab_open_browser = false\n")
    assert load_settings(tmp_path, {}).lab_open_browser is False
    assert load_settings(tmp_path, {"NBSTAGE_LAB_OPEN_BROWSER": "on"}).lab_open_browser


def test_a_refusal_runs_no_browser_and_says_why(tmp_path: Path) -> None:
    opened = tmp_path / "opened"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(0o755)
    env = {**X, "BROWSER": str(browser), "NBSTAGE_LAB_OPEN_BROWSER": "0"}
    result = open_url(str(tmp_path / "state"), "http://127.0.0.1:1/lab", env)
    assert result["opened_browser"] is False
    assert result["browser_reason"].startswith("turned off")
    assert not opened.exists()


def test_the_browser_named_in_browser_is_run_on_the_url(tmp_path: Path) -> None:
    """Where a display is there, webbrowser runs $BROWSER with the URL, out of stdout."""
    opened = tmp_path / "opened"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\necho printed\n')
    browser.chmod(0o755)
    env = {**X, "BROWSER": str(browser), "PATH": "/usr/bin:/bin"}
    result = open_url(str(tmp_path / "state"), "http://127.0.0.1:1/lab?token=t", env)
    assert result == {"opened_browser": True}
    assert opened.read_text() == "http://127.0.0.1:1/lab?token=t\n"
