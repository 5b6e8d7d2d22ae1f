"""Loading, validating and atomically writing notebook files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import nbformat
import orjson
import pytest

from nbstage.actors.daemon.notebook import atomic_writes
from nbstage.actors.daemon.notebook.atomic_writes import write_atomic
from nbstage.actors.daemon.notebook.document import Document
from nbstage.actors.daemon.notebook.notebook_files import (
    canonical_path,
    load_notebook,
    save_notebook,
    serialize_notebook,
)
from nbstage.protocol.common.errors import ErrorCode, NbstageError

V3_NOTEBOOK = {
    "metadata": {"name": "old"},
    "nbformat": 3,
    "nbformat_minor": 0,
    "worksheets": [
        {
            "metadata": {},
            "cells": [
                {"cell_type": "heading", "level": 1, "metadata": {}, "source": "Title"},
                {
                    "cell_type": "code",
                    "collapsed": False,
                    "input": "print('hi')",
                    "language": "python",
                    "metadata": {},
                    "outputs": [{"output_type": "stream", "stream": "stdout", "text": "hi\n"}],
                    "prompt_number": 1,
                },
                {"cell_type": "markdown", "metadata": {}, "source": "some *text*"},
            ],
        }
    ],
}


def v4_notebook(minor: int, ids: list[str | None]) -> dict:
    cells = []
    for i, cell_id in enumerate(ids):
        cell = {"cell_type": "markdown", "metadata": {}, "source": f"cell {i}"}
        if cell_id is not None:
            cell["id"] = cell_id
        cells.append(cell)
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": minor}


def write_json(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def valid_nb(source: str = "x = 1") -> dict:
    doc = Document.empty()
    doc.create_cell(source)
    return doc.to_json()


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


# load_notebook


def test_a_v3_notebook_is_upgraded_to_v4_5_with_ids(tmp_path):
    nb = load_notebook(write_json(tmp_path / "old.ipynb", V3_NOTEBOOK))
    assert (nb["nbformat"], nb["nbformat_minor"]) == (4, 5)
    assert [c["cell_type"] for c in nb["cells"]] == ["markdown", "code", "markdown"]
    assert nb["cells"][0]["source"] == "# Title"
    assert nb["cells"][1]["outputs"][0]["name"] == "stdout"
    assert all(c["id"] for c in nb["cells"])
    doc = Document.from_json(nb)
    assert doc.cells[1].source == "print('hi')"
    nbformat.validate(nbformat.from_dict(doc.to_json()))


def test_a_v4_4_notebook_without_ids_gets_unique_ids(tmp_path):
    nb = load_notebook(write_json(tmp_path / "a.ipynb", v4_notebook(4, [None, None, None])))
    got = [c["id"] for c in nb["cells"]]
    assert nb["nbformat_minor"] == 5
    assert len(set(got)) == 3
    assert [c.id for c in Document.from_json(nb).cells] == got


@pytest.mark.parametrize(
    ("ids", "kept"),
    [
        pytest.param(["same", "same", "other"], {"same", "other"}, id="repeated ids"),
        pytest.param([None, "ok", None], {"ok"}, id="some ids missing"),
        pytest.param(["has space", "ok", "ok"], {"ok"}, id="a forbidden id and a repeat"),
    ],
)
def test_a_v4_5_notebook_with_bad_ids_is_repaired_without_warnings(tmp_path, ids, kept):
    nb = load_notebook(write_json(tmp_path / "a.ipynb", v4_notebook(5, ids)))
    got = [c["id"] for c in nb["cells"]]
    assert len(set(got)) == 3
    assert kept <= set(got)
    assert [c["source"] for c in nb["cells"]] == ["cell 0", "cell 1", "cell 2"]


def test_a_loaded_notebook_is_plain_json_data(tmp_path):
    path = write_json(tmp_path / "a.ipynb", v4_notebook(5, ["a"]))
    nb = load_notebook(path)
    assert type(nb) is dict
    assert type(nb["cells"][0]) is dict
    assert json.loads(json.dumps(nb)) == nb


def test_a_missing_file_is_not_found(tmp_path):
    with pytest.raises(NbstageError) as info:
        load_notebook(tmp_path / "nope.ipynb")
    assert info.value.code == ErrorCode.NOT_FOUND
    assert "create_notebook" in info.value.message


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        pytest.param(b"not json", "not valid JSON", id="text that is not JSON"),
        pytest.param(b"[1, 2]", "no 'nbformat'", id="a JSON list"),
        pytest.param(b'{"cells": []}', "no 'nbformat'", id="an object without nbformat"),
        pytest.param(b'{"nbformat": 4, "nbformat_minor": 5}', "cells", id="v4 without cells"),
        pytest.param(b'{"nbformat": 9}', "version 9 is not supported", id="an unknown version"),
        pytest.param(b'{"nbformat": [4]}', "version [4] is not", id="a version that is a list"),
        pytest.param(
            json.dumps(v4_notebook(5, ["a"]) | {"cells": [{"id": ["x"]}]}).encode(),
            "is not valid under any of the given schemas",
            id="a cell id that is a list",
        ),
        pytest.param(
            json.dumps(v4_notebook(5, ["a"]) | {"cells": [{"cell_type": "code"}]}).encode(),
            "required property",
            id="a v4 cell missing required keys",
        ),
        pytest.param(b"\xff\xfe{}", "UTF-8", id="bytes that are not UTF-8"),
    ],
)
def test_a_file_that_is_not_a_notebook_is_a_bad_request(tmp_path, content, reason):
    path = tmp_path / "bad.ipynb"
    path.write_bytes(content)
    with pytest.raises(NbstageError) as info:
        load_notebook(path)
    assert info.value.code == ErrorCode.BAD_REQUEST
    assert f"{path} is not a Jupyter notebook: " in info.value.message
    assert reason in info.value.message
    assert len(info.value.message) < 600


def test_a_directory_is_not_a_notebook(tmp_path):
    with pytest.raises(NbstageError) as info:
        load_notebook(tmp_path)
    assert info.value.code == ErrorCode.BAD_REQUEST
    assert "directory" in info.value.message


# serialize_notebook


def test_serialize_gives_utf8_nbformat_with_a_final_newline():
    nb = valid_nb("print('héllo')")
    data = serialize_notebook(nb)
    assert data.endswith(b"}\n")
    assert "héllo" in data.decode("utf-8")
    assert nbformat.reads(data.decode("utf-8"), as_version=4).cells[0].source == "print('héllo')"


def broken(change) -> dict:
    nb = valid_nb()
    change(nb)
    return nb


@pytest.mark.parametrize(
    "nb",
    [
        pytest.param(broken(lambda nb: nb["cells"][0].pop("metadata")), id="a cell lacks metadata"),
        pytest.param(
            broken(lambda nb: nb["cells"][0]["outputs"].append({"output_type": "nope"})),
            id="an unknown output type",
        ),
        pytest.param(broken(lambda nb: nb["cells"][0].pop("id")), id="a cell without an id"),
        pytest.param(
            broken(lambda nb: nb["cells"].append(dict(nb["cells"][0]))), id="two cells share an id"
        ),
        pytest.param(broken(lambda nb: nb.update(nbformat=3)), id="not nbformat 4"),
        pytest.param(broken(lambda nb: nb.pop("metadata")), id="no notebook metadata"),
    ],
)
def test_serialize_refuses_an_invalid_notebook(nb):
    with pytest.raises(NbstageError) as info:
        serialize_notebook(nb)
    assert info.value.code == ErrorCode.SAVE_FAILED
    assert "not valid nbformat" in info.value.message
    assert "not changed" in info.value.message


def test_serialize_leaves_its_argument_alone():
    nb = valid_nb()
    before = json.dumps(nb, sort_keys=True)
    serialize_notebook(nb)
    assert json.dumps(nb, sort_keys=True) == before


# save_notebook and write_atomic


def test_a_failed_validation_leaves_the_old_file_byte_identical(tmp_path):
    path = tmp_path / "a.ipynb"
    save_notebook(path, valid_nb("old"))
    old = path.read_bytes()
    with pytest.raises(NbstageError) as info:
        save_notebook(path, broken(lambda nb: nb["cells"][0].pop("metadata")))
    assert info.value.code == ErrorCode.SAVE_FAILED
    assert path.read_bytes() == old
    assert leftovers(tmp_path) == []


def test_a_saved_notebook_loads_back_the_same(tmp_path):
    path = tmp_path / "a.ipynb"
    nb = valid_nb("a = 1\nb = 2")
    save_notebook(path, nb)
    assert Document.from_json(load_notebook(path)).to_json() == nb


def test_write_atomic_replaces_the_content(tmp_path):
    path = tmp_path / "a.ipynb"
    path.write_bytes(b"old")
    write_atomic(path, b"new")
    assert path.read_bytes() == b"new"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("existing_mode", "expected_mode"),
    [
        pytest.param(0o600, 0o600, id="a private file stays private"),
        pytest.param(0o640, 0o640, id="group read is kept"),
        pytest.param(0o755, 0o755, id="execute bits are kept"),
    ],
)
def test_write_atomic_keeps_permission_bits(tmp_path, existing_mode, expected_mode):
    path = tmp_path / "a.ipynb"
    if existing_mode is not None:
        path.write_bytes(b"old")
        path.chmod(existing_mode)
    write_atomic(path, b"new")
    assert stat.S_IMODE(path.stat().st_mode) == expected_mode


@pytest.mark.parametrize(
    ("umask", "expected_mode"),
    [
        pytest.param(0o022, 0o644, id="umask 022 gives 0644"),
        pytest.param(0o077, 0o600, id="umask 077 gives 0600"),
        pytest.param(0o002, 0o664, id="umask 002 gives 0664"),
    ],
)
def test_write_atomic_gives_a_new_file_the_umask_s_mode(tmp_path, umask, expected_mode):
    before = os.umask(umask)
    try:
        write_atomic(tmp_path / "a.ipynb", b"new")
    finally:
        os.umask(before)
    assert stat.S_IMODE((tmp_path / "a.ipynb").stat().st_mode) == expected_mode
    assert leftovers(tmp_path) == []


def test_write_atomic_fsyncs_the_file_and_then_the_directory(tmp_path, monkeypatch):
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    write_atomic(tmp_path / "a.ipynb", b"data")
    assert synced == ["file", "dir"]


def fail(*_args, **_kwargs):
    raise OSError(5, "Input/output error")


@pytest.mark.parametrize(
    "broken_call",
    [
        pytest.param("replace", id="the rename fails"),
        pytest.param("fsync", id="the file fsync fails"),
        pytest.param("fchmod", id="setting the mode fails"),
    ],
)
def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch, broken_call):
    path = tmp_path / "a.ipynb"
    path.write_bytes(b"old")
    monkeypatch.setattr(os, broken_call, fail)
    with pytest.raises(NbstageError) as info:
        write_atomic(path, b"new")
    monkeypatch.undo()
    assert info.value.code == ErrorCode.SAVE_FAILED
    assert "Input/output error" in info.value.message
    assert "not changed" in info.value.message
    assert path.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_a_failed_directory_fsync_is_reported_after_the_rename(tmp_path, monkeypatch):
    path = tmp_path / "a.ipynb"
    monkeypatch.setattr(atomic_writes, "_fsync_directory", fail)
    with pytest.raises(NbstageError) as info:
        write_atomic(path, b"new")
    assert info.value.code == ErrorCode.SAVE_FAILED
    assert "in place" in info.value.message
    assert path.read_bytes() == b"new"


def test_writing_into_a_missing_directory_is_save_failed(tmp_path):
    with pytest.raises(NbstageError) as info:
        write_atomic(tmp_path / "missing" / "a.ipynb", b"x")
    assert info.value.code == ErrorCode.SAVE_FAILED


def test_the_temp_file_is_hidden_and_named_after_the_target(tmp_path, monkeypatch):
    seen: list[Path] = []
    real_replace = os.replace

    def spying_replace(src, dst):
        seen.append(Path(src))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spying_replace)
    write_atomic(tmp_path / "a.ipynb", b"x")
    [temp] = seen
    assert temp.parent == tmp_path
    assert temp.name.startswith(".a.ipynb.")


# canonical_path


def test_a_relative_path_is_made_absolute_against_the_base(tmp_path):
    assert canonical_path("sub/../a.ipynb", tmp_path) == tmp_path.resolve() / "a.ipynb"


def test_a_relative_path_without_a_base_uses_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert canonical_path("a.ipynb") == tmp_path.resolve() / "a.ipynb"


def test_a_tilde_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert canonical_path("~/n/a.ipynb", Path("/elsewhere")) == tmp_path.resolve() / "n/a.ipynb"


def test_symlinks_are_resolved(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert canonical_path(tmp_path / "link" / "a.ipynb") == real.resolve() / "a.ipynb"


def test_an_empty_path_is_a_bad_request():
    with pytest.raises(NbstageError) as info:
        canonical_path("")
    assert info.value.code == ErrorCode.BAD_REQUEST


def test_only_old_temp_files_of_this_notebooks_saves_are_swept(tmp_path: Path) -> None:
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text("{}")
    now = 1_000_000.0
    old, young = now - atomic_writes.STALE_TEMP_SECS - 1, now - 60

    def made(name: str, mtime: float) -> Path:
        path = tmp_path / name
        path.write_text("partial")
        os.utime(path, (mtime, mtime))
        return path

    stale = made(".nb.ipynb.0123456789ab.tmp", old)
    kept = [
        made(".nb.ipynb.ba9876543210.tmp", young),  # a save in flight
        made(".other.ipynb.0123456789ab.tmp", old),  # another notebook's
        made(".nb.ipynb.tmp", old),  # not a name a save makes
        made(".nb.ipynb.0123456789AB.tmp", old),
        made("nb.ipynb.0123456789ab.tmp", old),
    ]
    (tmp_path / ".nb.ipynb.aaaaaaaaaaaa.tmp").mkdir()
    assert atomic_writes.sweep_stale_temps(notebook, now) == 1
    assert not stale.exists()
    assert all(path.exists() for path in kept)
    assert notebook.read_text() == "{}"
    assert (tmp_path / ".nb.ipynb.aaaaaaaaaaaa.tmp").is_dir()


def test_a_save_names_its_temp_file_as_the_sweep_expects(tmp_path: Path) -> None:
    name = atomic_writes._temp_name(tmp_path / "nb.ipynb")
    made = tmp_path / name
    made.write_text("partial")
    stale = atomic_writes.STALE_TEMP_SECS + made.stat().st_mtime + 1
    assert atomic_writes.sweep_stale_temps(tmp_path / "nb.ipynb", stale) == 1


@pytest.mark.parametrize(
    ("number", "read_as"),
    [
        (2**63 - 1, 2**63 - 1),
        (-(2**63), -(2**63)),
        (2**63, float(2**63)),
        (2**64 - 1, float(2**64 - 1)),
        (2**70, float(2**70)),
        (-(2**63) - 1, float(-(2**63) - 1)),
    ],
)
def test_an_integer_orjson_or_pycrdt_cannot_hold_is_read_as_a_float(
    tmp_path, number, read_as
) -> None:
    """Kept as an int, a number past 64 bits in an output made every save, journal record
    and read of the cell fail, and one from 2**63 up made pycrdt panic building the
    people's Y document; the browser's JavaScript holds it as a float anyway."""
    output = {
        "output_type": "display_data",
        "metadata": {},
        "data": {"application/json": {"n": number}},
    }
    cell = {"id": "a", "cell_type": "code", "source": "", "metadata": {}, "execution_count": 1}
    notebook = {"cells": [{**cell, "outputs": [output]}], "metadata": {}, "nbformat": 4}
    path = tmp_path / "big.ipynb"
    path.write_text(json.dumps({**notebook, "nbformat_minor": 5}))
    doc = Document.from_json(load_notebook(path))
    value = doc.cells[0].outputs[0]["data"]["application/json"]["n"]
    assert value == read_as
    assert type(value) is type(read_as)
    assert orjson.loads(orjson.dumps(doc.to_json()))["cells"][0]["execution_count"] == 1


def test_an_integer_no_float_holds_refuses_the_file(tmp_path: Path) -> None:
    """float() of it raised OverflowError, which is no ValueError: it escaped the refusal
    and the open failed with an internal error."""
    path = tmp_path / "huge.ipynb"
    path.write_text('{"cells": [], "metadata": {"n": 1' + "0" * 400 + '}, "nbformat": 4}')
    with pytest.raises(NbstageError) as refused:
        load_notebook(path)
    assert "too large" in refused.value.message
