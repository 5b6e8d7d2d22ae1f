"""Where the sockets go when the state dir's path is too long for them, and what to do
when that dir was taken by someone else.

The short dir, ``<runtime base>/nbstage-<uid>-<hash>`` (``statedir._short_socket_dir``),
is a path any user can compute and create first. nbstage never uses such a dir
(``ownership.check_private_dir``), but refusing alone left ``nbstage mcp`` exiting
before it answered ``initialize``, so the agent heard nothing. Instead:

- the daemon, holding its lock, serves in the dir its state dir records if that one is
  still its own; else in the short dir; else in a fresh dir ``tempfile.mkdtemp`` makes
  beside it (a random name, created 0700 atomically), which it records as usual, so
  clients and session children find it there;
- when not even a fresh dir can be made, ``nbstage mcp`` still answers ``initialize``
  and every tool call fails with :func:`client_problem`'s reason.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from nbstage.entrypoints.common.ownership import Untrusted, check_private_dir, make_private_dir
from nbstage.entrypoints.common.statedir import StatePaths, recorded_paths

log = logging.getLogger("nbstage.runtime")


class NoRuntimeDir(Untrusted):
    """No dir this user alone owns could be found or made for the daemon's sockets."""


def settle(paths: StatePaths) -> StatePaths:
    """``paths`` with the socket dir the daemon serves in, made if need be. Raises
    NoRuntimeDir when there is none; the caller holds the daemon lock and records it."""
    if paths.socket_dir == paths.root:
        make_private_dir(paths.kernel_dir)
        return paths
    recorded = own_recorded(paths)
    if recorded is not None:
        make_private_dir(recorded.kernel_dir)
        return recorded
    try:
        make_private_dir(paths.socket_dir)
        make_private_dir(paths.kernel_dir)
        return paths
    except (Untrusted, OSError) as exc:
        refused = exc
    try:
        fresh = StatePaths(paths.root, _fresh_dir(paths.socket_dir.parent))
    except OSError as exc:
        raise NoRuntimeDir(_no_way_out(paths, refused, exc)) from exc
    make_private_dir(fresh.kernel_dir)
    log.warning("%s The sockets go in %s instead.", _reason(refused), fresh.socket_dir)
    return fresh


def release(paths: StatePaths) -> None:
    """A stopping daemon, still holding its lock, removes the socket dir it served in
    outside its state dir, and the record naming it, once nothing is left in it (its
    socket is gone, its kernels' files were swept); a dir still holding files stays."""
    if paths.socket_dir == paths.root:
        return
    try:
        os.rmdir(paths.kernel_dir)
        os.rmdir(paths.socket_dir)
    except OSError as exc:
        log.info("kept the sockets' dir %s: %s", paths.socket_dir, exc.strerror)
        return
    with contextlib.suppress(FileNotFoundError):
        paths.socket_record.unlink()


def client_problem(paths: StatePaths) -> str | None:
    """Why no daemon could serve ``paths``' state dir, or None when one can: its recorded
    dir is its own, the short dir is (or can be made), or a fresh dir can be made for
    the daemon to fall back to (tried, and removed at once)."""
    if paths.socket_dir == paths.root or own_recorded(paths) is not None:
        return None
    try:
        check_private_dir(paths.socket_dir)
        return None
    except FileNotFoundError:
        return None
    except (Untrusted, OSError) as exc:
        refused = exc
    try:
        os.rmdir(_fresh_dir(paths.socket_dir.parent))
    except OSError as exc:
        return _no_way_out(paths, refused, exc)
    return None


def own_recorded(paths: StatePaths) -> StatePaths | None:
    """The paths the state dir records, when the dir they name is this user's alone: else
    None, for a dir someone else made or changed holds no daemon of ours. The one check of
    the record, for the daemon and its clients alike. Raises Untrusted when the state dir
    itself is not this user's alone (then nothing in it is believed)."""
    recorded = recorded_paths(paths)
    try:
        check_private_dir(recorded.socket_dir)
    except (Untrusted, OSError):
        return None
    return recorded


def _fresh_dir(base: Path) -> Path:
    import tempfile  # only here: it brings shutil, bz2 and lzma into every `nbstage mcp`

    return Path(tempfile.mkdtemp(prefix=f"nbstage-{os.getuid()}-", dir=base))


def _reason(refused: BaseException) -> str:
    if isinstance(refused, Untrusted):
        return str(refused)
    return f"nbstage cannot use its sockets' dir: {refused}."


def _no_way_out(paths: StatePaths, refused: BaseException, fresh_failed: OSError) -> str:
    return (
        f"{_reason(refused)} No other dir could be made for the daemon's sockets in "
        f"{paths.socket_dir.parent} ({fresh_failed.strerror}), so no daemon can run for "
        f"the state dir {paths.root}. Fix or remove that dir, set XDG_RUNTIME_DIR to a "
        "dir of yours, or use a shorter --state-dir."
    )
