"""Issue 13 §2: save_notebook(path=…) never destroys a file that is not this notebook's.

The rules are pure (``actors/daemon/notebook/save_target.py``) and tested as tables; the facts come
from
``look_at_save_target`` and the write from ``persistence.save_to_new_path``, both tested
here on real files, links and directories: each attack from the issue first.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson
import pytest

from nbstage.actors.daemon.notebook.notebook_files import load_notebook, look_at_save_target
from nbstage.actors.daemon.notebook.persistence import save_to_new_path
from nbstage.actors.daemon.notebook.save_target import (
    SaveTarget,
    TargetKind,
    existing_refusal,
    path_refusal,
)
from nbstage.protocol.common.errors import ErrorCode, NbstageError

OWN = "/w/own.ipynb"
T = TargetKind


def notebook_json(source: str = "x = 1") -> dict:
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {
                "id": "c1",
                "cell_type": "code",
                "source": source,
                "metadata": {},
                "outputs": [],
                "execution_count": None,
            }
        ],
    }


SNAPSHOT = orjson.dumps(notebook_json("mine = True"))


def source_of(path: Path) -> str:
    return "".join(load_notebook(path)["cells"][0]["source"])


def code_of(error: NbstageError | None) -> str | None:
    return None if error is None else error.code.value


# --- the rules ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "target", "expected"),
    [
        ("/w/a.ipynb", "/w/a.ipynb", None),
        ("/w/a.txt", "/w/a.txt", "bad_request"),
        ("/w/link.ipynb", "/etc/passwd", "bad_request"),
        ("/w/link.txt", "/w/real.ipynb", "bad_request"),
        ("/w/link.ipynb", "/w/real.ipynb", None),
    ],
)
def test_both_the_path_and_its_target_must_end_in_ipynb(given, target, expected):
    assert code_of(path_refusal(given, target)) == expected


@pytest.mark.parametrize(
    ("kind", "target", "overwrite", "expected"),
    [
        pytest.param(T.ABSENT, "/w/new.ipynb", False, None, id="a new file is written"),
        pytest.param(T.NOTEBOOK, "/w/b.ipynb", False, "path_exists", id="another notebook"),
        pytest.param(T.NOTEBOOK, "/w/b.ipynb", True, None, id="another notebook, overwrite"),
        pytest.param(T.NOT_A_NOTEBOOK, "/w/n.ipynb", False, "path_exists", id="a text file"),
        pytest.param(
            T.NOT_A_NOTEBOOK, "/w/n.ipynb", True, "path_exists", id="a text file, overwrite"
        ),
        pytest.param(T.DIRECTORY, "/w/d.ipynb", True, "bad_request", id="a directory"),
        pytest.param(T.DANGLING_LINK, "/w/gone.ipynb", True, "bad_request", id="dangling link"),
        pytest.param(T.NOTEBOOK, OWN, False, None, id="its own file"),
        pytest.param(T.NOT_A_NOTEBOOK, OWN, False, None, id="its own file, broken"),
        pytest.param(T.DANGLING_LINK, OWN, False, "bad_request", id="a dangling link to it"),
    ],
)
def test_what_a_save_may_write_over(kind, target, overwrite, expected):
    seen = SaveTarget("/w/asked.ipynb", target, kind, None, "it is not valid JSON")
    assert code_of(existing_refusal(seen, OWN, overwrite)) == expected


def test_a_refusal_to_replace_a_non_notebook_says_overwrite_does_not_help():
    seen = SaveTarget("/w/n.ipynb", "/w/n.ipynb", T.NOT_A_NOTEBOOK, None, "it is not JSON")
    message = existing_refusal(seen, None, True).message
    assert "not a notebook (it is not JSON)" in message
    assert "also not with overwrite=true" in message


# --- the facts, on disk -----------------------------------------------------------------


def test_the_facts_of_each_kind_of_target(tmp_path: Path):
    (tmp_path / "nb.ipynb").write_bytes(orjson.dumps(notebook_json()))
    (tmp_path / "notes.ipynb").write_text("my notes, not a notebook\n")
    (tmp_path / "dir.ipynb").mkdir()
    (tmp_path / "dangling.ipynb").symlink_to(tmp_path / "nowhere.ipynb")
    (tmp_path / "dirlink.ipynb").symlink_to(tmp_path / "dir.ipynb")
    os.mkfifo(tmp_path / "fifo.ipynb")

    def kind(name: str) -> TargetKind:
        given = tmp_path / name
        return look_at_save_target(given, given.resolve()).kind

    notes = tmp_path / "notes.ipynb"
    assert look_at_save_target(notes, notes).problem.startswith("it is not valid JSON")
    assert kind("new.ipynb") is T.ABSENT
    assert kind("nb.ipynb") is T.NOTEBOOK
    assert kind("notes.ipynb") is T.NOT_A_NOTEBOOK
    assert kind("dir.ipynb") is T.DIRECTORY
    assert kind("dirlink.ipynb") is T.DIRECTORY
    assert kind("dangling.ipynb") is T.DANGLING_LINK
    assert kind("fifo.ipynb") is T.NOT_A_NOTEBOOK, "a FIFO is never opened (it would block)"


# --- the attacks from the issue, through the offloaded save ------------------------------


def save(given: Path, own: str | None = None, overwrite: bool = False):
    return save_to_new_path(given, given.resolve(), SNAPSHOT, own, overwrite)


def refused(given: Path, code: ErrorCode, **kwargs) -> str:
    with pytest.raises(NbstageError) as caught:
        save(given, **kwargs)
    assert caught.value.code is code, caught.value.message
    return caught.value.message


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_text_file_named_notes_ipynb_is_never_overwritten(tmp_path: Path, overwrite: bool):
    notes = tmp_path / "notes.ipynb"
    notes.write_text("my notes\n")
    refused(notes, ErrorCode.PATH_EXISTS, overwrite=overwrite)
    assert notes.read_text() == "my notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.ipynb"]


def test_an_unrelated_notebook_is_replaced_only_with_overwrite(tmp_path: Path):
    other = tmp_path / "other.ipynb"
    other.write_bytes(orjson.dumps(notebook_json("theirs = True")))
    before = other.read_bytes()
    message = refused(other, ErrorCode.PATH_EXISTS)
    assert "overwrite=true" in message
    assert other.read_bytes() == before
    save(other, overwrite=True)
    assert source_of(other) == "mine = True"


def test_a_dangling_link_is_refused_and_nothing_is_created(tmp_path: Path):
    link = tmp_path / "link.ipynb"
    link.symlink_to(tmp_path / "elsewhere.ipynb")
    refused(link, ErrorCode.BAD_REQUEST, overwrite=True)
    assert not (tmp_path / "elsewhere.ipynb").exists()
    assert link.is_symlink()


def test_a_link_to_a_directory_is_refused(tmp_path: Path):
    (tmp_path / "d.ipynb").mkdir()
    (tmp_path / "link.ipynb").symlink_to(tmp_path / "d.ipynb")
    refused(tmp_path / "link.ipynb", ErrorCode.BAD_REQUEST, overwrite=True)
    assert list((tmp_path / "d.ipynb").iterdir()) == []


def test_a_link_to_an_unrelated_notebook_follows_the_rules_for_its_target(tmp_path: Path):
    real = tmp_path / "real.ipynb"
    real.write_bytes(orjson.dumps(notebook_json("theirs = True")))
    (tmp_path / "link.ipynb").symlink_to(real)
    refused(tmp_path / "link.ipynb", ErrorCode.PATH_EXISTS)
    save(tmp_path / "link.ipynb", overwrite=True)
    assert (tmp_path / "link.ipynb").is_symlink(), "the link is kept; its target is written"
    assert source_of(real) == "mine = True"


def test_the_room_s_own_file_is_written_even_when_it_does_not_parse(tmp_path: Path):
    own = tmp_path / "own.ipynb"
    own.write_text("{ broken")
    save(own, own=str(own.resolve()))
    assert source_of(own) == "mine = True"


def test_a_file_that_appears_after_the_look_is_not_replaced(tmp_path: Path, monkeypatch):
    from nbstage.actors.daemon.notebook import notebook_files

    target = tmp_path / "new.ipynb"
    real_look = notebook_files.look_at_save_target

    def look_then_someone_writes(given: Path, resolved: Path, limit: int):
        seen = real_look(given, resolved, limit)
        resolved.write_text("written meanwhile\n")
        return seen

    monkeypatch.setattr(notebook_files, "look_at_save_target", look_then_someone_writes)
    refused(target, ErrorCode.PATH_EXISTS)
    assert target.read_text() == "written meanwhile\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.ipynb"]


def test_a_new_file_follows_the_umask(tmp_path: Path):
    before = os.umask(0o027)
    try:
        save(tmp_path / "new.ipynb")
    finally:
        os.umask(before)
    assert stat.S_IMODE((tmp_path / "new.ipynb").stat().st_mode) == 0o640
