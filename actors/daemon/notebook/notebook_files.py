"""Reading and writing ``.ipynb`` files for a Room.

Loading upgrades any nbformat version to 4.5 and gives every cell a unique id before
nbformat validates, so nbformat never has to repair ids (and never warns about them).
Saving validates first and then replaces the file atomically (``atomic_writes``), so a
failed save leaves the previous file byte-identical.

nbformat is imported on first use, not with this module, and only through
:func:`_nbformat`: it brings jsonschema, which must come in without its IRI grammar
(entrypoints/common/lean.py), and the daemon should answer on its socket before paying
for either (it warms the import on a worker as soon as it listens; see ``warm_imports``).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING

from nbstage.actors.daemon.notebook.atomic_writes import file_stamp, stamp_of, write_atomic
from nbstage.actors.daemon.notebook.atomic_writes import (
    sweep_stale_temps as sweep_stale_temps,  # the Room's opening sweeps through here
)
from nbstage.actors.daemon.notebook.cell_model import fresh_cell_id, valid_cell_id
from nbstage.entrypoints.common.lean import jsonschema_without_iri_grammar
from nbstage.protocol.common.errors import ErrorCode, NbstageError
from nbstage.protocol.common.safe_files import (
    DEFAULT_MAX_FILE_BYTES,
    MAX_FILE_SETTING,
    FileRefused,
    read_regular,
)
from nbstage.protocol.daemon_actors.room_followups import DiskStamp, FileOnDisk

if TYPE_CHECKING:
    from nbstage.actors.daemon.notebook.save_target import SaveTarget

_PLAIN_PARSE_ERRORS = (ValueError, KeyError, TypeError, AttributeError)


def warm_imports() -> None:
    """Import what reading and writing notebooks needs (call it off the actor thread)."""
    _nbformat()


def _nbformat() -> types.ModuleType:
    if "nbformat" not in sys.modules:
        jsonschema_without_iri_grammar()
    import nbformat

    return nbformat


def _parse_errors() -> tuple[type[BaseException], ...]:
    nbformat = _nbformat()
    return (*_PLAIN_PARSE_ERRORS, nbformat.ValidationError)


def canonical_path(path: str | Path, base: Path | None = None) -> Path:
    """Absolute path with ``~`` expanded and symlinks resolved; the file need not exist."""
    if not str(path):
        raise NbstageError(ErrorCode.BAD_REQUEST, "The path is empty. Pass a notebook path.")
    expanded = Path(path).expanduser()
    if not expanded.is_absolute():
        expanded = (base or Path.cwd()) / expanded
    return expanded.resolve(strict=False)


def absolute_notebook_path(path: str) -> str:
    """The canonical form of a path a client sent; the daemon never guesses a working dir."""
    if not Path(path).expanduser().is_absolute():
        raise NbstageError(ErrorCode.BAD_REQUEST, f"path must be absolute, not {path!r}")
    return str(canonical_path(path))


def look_at_save_target(
    given: Path, target: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> SaveTarget:
    """What is at ``target`` (``given`` with its links resolved), for ``save_target``'s rules."""
    from nbstage.actors.daemon.notebook.save_target import SaveTarget, TargetKind

    def seen(kind: TargetKind, stamp: DiskStamp | None = None, problem: str | None = None):
        return SaveTarget(str(given), str(target), kind, stamp, problem)

    if os.path.islink(given) and not os.path.exists(given):
        return seen(TargetKind.DANGLING_LINK)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return seen(TargetKind.ABSENT)
    except OSError as exc:
        return seen(TargetKind.NOT_A_NOTEBOOK, None, f"it cannot be read ({exc.strerror})")
    if stat.S_ISDIR(info.st_mode):
        return seen(TargetKind.DIRECTORY, file_stamp(info))
    if not stat.S_ISREG(info.st_mode):
        return seen(TargetKind.NOT_A_NOTEBOOK, file_stamp(info), "it is not a regular file")
    on_disk = read_on_disk(target, max_bytes)
    if on_disk.notebook is not None:
        return seen(TargetKind.NOTEBOOK, on_disk.stamp)
    if on_disk.stamp is None and on_disk.problem is None:
        return seen(TargetKind.ABSENT)
    problem = (on_disk.problem or "").removeprefix(f"{target} is not a Jupyter notebook: ")
    return seen(TargetKind.NOT_A_NOTEBOOK, on_disk.stamp, problem.rstrip("."))


def load_notebook(path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> dict:
    """Read a notebook of any nbformat version as a plain, valid v4.5 notebook dict."""
    return load_notebook_stamped(path, max_bytes)[0]


def load_notebook_stamped(
    path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> tuple[dict, DiskStamp]:
    """``load_notebook``, with the stamp of the very file that was read."""
    text, stamp = _read_text(path, max_bytes)
    return _upgraded(_parse(text, path), path), stamp


def read_on_disk(path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> FileOnDisk:
    """The file as it is now, for a merge; what is wrong with it is reported, not raised.

    Cells that had no valid id of their own in the file come back with ``id`` None, so
    the merge can match them to the cells they stand for.
    """
    try:
        text, stamp = _read_text(path, max_bytes)
    except NbstageError as exc:
        if exc.code is ErrorCode.NOT_FOUND:
            return FileOnDisk(None, None)
        return FileOnDisk(stamp_of(path), None, exc.message)
    given: set[str] = set()
    try:
        raw = _parse(text, path, given)
        notebook = _upgraded(raw, path)
    except NbstageError as exc:
        return FileOnDisk(stamp, None, exc.message)
    if raw.get("nbformat") != 4:
        given = {c["id"] for c in notebook["cells"]}
    for cell in notebook["cells"]:
        if cell["id"] in given:
            cell["id"] = None
    return FileOnDisk(stamp, notebook)


def _upgraded(raw: dict, path: Path) -> dict:
    nbformat = _nbformat()
    try:
        node = nbformat.convert(nbformat.from_dict(raw), 4)
        node.nbformat_minor = max(node.get("nbformat_minor", 0), 5)
        nbformat.validate(node)
    except _parse_errors() as exc:
        raise _not_a_notebook(path, exc) from None
    return json.loads(json.dumps(node))


def serialize_notebook(nb: dict) -> bytes:
    """Validate ``nb`` as nbformat 4 and return its file content (UTF-8, final newline).

    Writes with ``nbformat.v4.writes``, the writer ``nbformat.writes`` ends in, so the
    notebook is validated once rather than twice.
    """
    nbformat = _nbformat()
    try:
        _check_ids(nb)
        node = nbformat.from_dict(nb)
        nbformat.validate(node)
        text = nbformat.v4.writes(node)
    except _parse_errors() as exc:
        raise NbstageError(
            ErrorCode.SAVE_FAILED,
            f"The notebook was not saved because it is not valid nbformat: {_reason(exc)}. "
            "The file on disk was not changed.",
        ) from None
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")


def save_notebook(path: Path, nb: dict) -> None:
    """Validate and atomically write ``nb`` to ``path``."""
    write_atomic(path, serialize_notebook(nb))


def _read_text(path: Path, max_bytes: int) -> tuple[str, DiskStamp]:
    """The file's text and the stamp of the file opened (FileNotFoundError as NOT_FOUND).

    A link, a FIFO or anything but a regular file, and a file over ``max_bytes``, are
    refused before anything is read (``safe_files.read_regular``)."""
    try:
        data, info = read_regular(path, max_bytes, MAX_FILE_SETTING)
        return data.decode("utf-8"), file_stamp(info)
    except FileNotFoundError:
        raise NbstageError(
            ErrorCode.NOT_FOUND,
            f"There is no file at {path}. Check the path, or call create_notebook() to start "
            "a new notebook.",
        ) from None
    except IsADirectoryError:
        raise _not_a_notebook(path, "it is a directory") from None
    except UnicodeDecodeError:
        raise _not_a_notebook(path, "it is not UTF-8 text") from None
    except FileRefused as exc:
        raise NbstageError(
            ErrorCode.BAD_REQUEST, f"{path} was not read as a notebook: {exc.reason}."
        ) from None
    except OSError as exc:
        raise _not_a_notebook(path, f"it cannot be read ({exc.strerror})") from None


INT_RANGE = range(-(2**63), 2**63)
"""The integers both orjson (the journal, the snapshots, the wire) and pycrdt (the
people's Y document) hold: a bigger one in a notebook file is read as a float, as every
browser's JavaScript holds it. Kept as an int, one past 64 bits made the notebook's
saves, its journal and every read of its cell fail; one from 2**63 up, which orjson
writes, made pycrdt panic (a BaseException) building or mirroring the Y document."""


def _bounded_int(digits: str) -> int | float:
    number = int(digits)
    return number if number in INT_RANGE else float(number)


def _parse(text: str, path: Path, given: set[str] | None = None) -> dict:
    nbformat = _nbformat()
    try:
        raw = json.loads(text, parse_int=_bounded_int)
    except ValueError as exc:
        raise _not_a_notebook(path, f"it is not valid JSON ({exc})") from None
    except OverflowError:
        raise _not_a_notebook(path, "it holds an integer too large for any number") from None
    if not isinstance(raw, dict) or "nbformat" not in raw:
        raise _not_a_notebook(path, "it has no 'nbformat' version field")
    version = raw["nbformat"]
    if not isinstance(version, int) or version not in nbformat.versions:
        raise _not_a_notebook(path, f"nbformat version {_clip(version)} is not supported")
    if version == 4:
        _give_ids(raw, set() if given is None else given)
    return raw


def _give_ids(raw: dict, given: set[str]) -> None:
    """Give cells a unique valid id where they have none, a bad one or a repeated one;
    the ids given are added to ``given``."""
    cells = raw.get("cells")
    if not isinstance(cells, list):
        return
    cells = [c for c in cells if isinstance(c, dict)]
    taken = {c["id"] for c in cells if isinstance(c.get("id"), str)}
    seen: set[str] = set()
    for cell in cells:
        if not valid_cell_id(cell.get("id")) or cell["id"] in seen:
            cell["id"] = fresh_cell_id(taken)
            taken.add(cell["id"])
            given.add(cell["id"])
        seen.add(cell["id"])


def _clip(value: object, limit: int = 40) -> str:
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _not_a_notebook(path: Path, why: object) -> NbstageError:
    reason = why if isinstance(why, str) else _reason(why)
    return NbstageError(ErrorCode.BAD_REQUEST, f"{path} is not a Jupyter notebook: {reason}.")


def _reason(exc: object, limit: int = 300) -> str:
    text = str(getattr(exc, "message", None) or exc).strip().rstrip(".")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_ids(nb: dict) -> None:
    ids = [c.get("id") for c in nb.get("cells", []) if isinstance(c, dict)]
    if not all(valid_cell_id(i) for i in ids):
        raise ValueError("a cell has a missing or malformed id")
    if len(set(ids)) != len(ids):
        raise ValueError("two cells share an id")
    if nb.get("nbformat") != 4:
        raise ValueError(f"nbformat is {nb.get('nbformat')!r}, expected 4")
