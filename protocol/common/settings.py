"""Daemon settings: defaults, then config.toml in the state dir, then the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.kernel_hosts import KernelHost, KernelHostError, decode_kernel_hosts
from nbstage.protocol.common.safe_files import (
    DEFAULT_MAX_FILE_BYTES,
    SMALL_FILE_BYTES,
    read_regular,
)

OUTPUT_LIMIT_BYTES = 12 * 1024 * 1024
"""Room for an image of about 4.5 MB in either half, and for a whole cell's reply inside
the 16 MiB frame."""


@frozen
class Settings:
    keep_alive_secs: float = 30.0
    """Kernel teardown delay after a room's last peer leaves."""
    reaper_interval_secs: float = 300.0
    """How often the reaper looks for rooms nobody uses."""
    reaper_ttl_secs: float = 86400.0
    """How long a room with no peer, no kernel and nothing in flight stays before the
    reaper closes it (after its final save)."""
    reaper_soft_cap: int = 32
    """Idle rooms beyond this many are closed early, oldest first."""
    heartbeat_secs: float = 1.0
    """How often the daemon sends its watchers a heartbeat and touches ``daemon.alive``;
    a watcher that misses several takes the daemon for gone."""
    autosave_delay_secs: float = 2.0
    """Quiet time after an edit before a file-backed room saves itself."""
    autosave_max_delay_secs: float = 10.0
    """Longest a file-backed room waits to save under continuous edits, counted from the first
    edit the last save's snapshot did not take: a steady stream is saved once in this long."""
    file_check_secs: float = 1.0
    """How often a file-backed room with peers looks whether its file changed on disk
    (a stat); 0 leaves it to the check every save makes."""
    execution_retention: int = 1000
    """How many finished execution records executions/ keeps."""
    max_rooms: int = 128
    """Resident rooms the daemon admits in all; a create or open beyond it is refused."""
    max_rooms_per_connection: int = 48
    """Resident rooms one client connection may have started."""
    max_unsent_bytes: int = 64 * 1024 * 1024
    """Bytes the daemon holds for one connection that has not read them (a watcher that
    stopped reading, or a client that sends requests and never reads the replies); past
    it the connection is closed. Four full frames."""
    uv_config_file: str = ""
    """A ``uv.toml`` every uv build and install of the daemon reads (an index mirror, say),
    as ``--config-file``; by default they read none (``--no-config``)."""
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    """The largest notebook file (or execution record) the daemon reads; a larger one is
    refused before it is read (``protocol/common/safe_files.py``)."""
    output_limit_bytes: int = OUTPUT_LIMIT_BYTES
    """Output one cell keeps (in the notebook, its file and its execution record): the
    first and the last half of it, with a notice of what was dropped between (at least
    4 KiB; actors/common/output_bounds.py)."""
    figure_files: int = 64
    """How many image files figures/ in the state dir keeps: each PNG or JPEG a tool result
    attaches is also written there, for clients that drop image content (Codex); 0 writes
    none. Read by `nbstage mcp` when it starts."""
    lab_open_browser: bool = True
    """Whether ``show_notebook`` also opens the notebook in a browser, where a display is
    there to open one on (never under CI; entrypoints/common/lab_browser.py). Read by
    `nbstage mcp` at each ``show_notebook``."""
    shared_doc_idle_secs: float = 30.0
    """How long a room's shared Y document stays whole after the last person left
    JupyterLab; then it is kept as its compressed update and made again on the next join
    (ADR 0004)."""
    kernel_host_check_secs: float = 2.0
    """How often the daemon asks each kernel host whether it answers (``GET /api``); two
    failures in a row make the host lost."""
    kernel_hosts: tuple[KernelHost, ...] = ()
    """Jupyter Kernel Gateways for kernels, ``[[kernel_hosts]]`` tables in config.toml only
    (protocol/common/kernel_hosts.py; see "Kernel hosts" below)."""


_ENV_NAMES = {
    "keep_alive_secs": "NBSTAGE_KEEP_ALIVE_SECS",
    "reaper_interval_secs": "NBSTAGE_REAPER_INTERVAL_SECS",
    "reaper_ttl_secs": "NBSTAGE_REAPER_TTL_SECS",
    "reaper_soft_cap": "NBSTAGE_REAPER_SOFT_CAP",
    "heartbeat_secs": "NBSTAGE_HEARTBEAT_SECS",
    "autosave_delay_secs": "NBSTAGE_AUTOSAVE_DELAY_SECS",
    "autosave_max_delay_secs": "NBSTAGE_AUTOSAVE_MAX_DELAY_SECS",
    "file_check_secs": "NBSTAGE_FILE_CHECK_SECS",
    "execution_retention": "NBSTAGE_EXECUTION_RETENTION",
    "max_rooms": "NBSTAGE_MAX_ROOMS",
    "max_rooms_per_connection": "NBSTAGE_MAX_ROOMS_PER_CONNECTION",
    "max_unsent_bytes": "NBSTAGE_MAX_UNSENT_BYTES",
    "uv_config_file": "NBSTAGE_UV_CONFIG_FILE",
    "max_file_bytes": "NBSTAGE_MAX_FILE_BYTES",
    "output_limit_bytes": "NBSTAGE_OUTPUT_LIMIT_BYTES",
    "figure_files": "NBSTAGE_FIGURE_FILES",
    "lab_open_browser": "NBSTAGE_LAB_OPEN_BROWSER",
    "kernel_host_check_secs": "NBSTAGE_KERNEL_HOST_CHECK_SECS",
    "shared_doc_idle_secs": "NBSTAGE_SHARED_DOC_IDLE_SECS",
}


VARIABLE_SETTINGS = frozenset(_ENV_NAMES)
"""The settings an environment variable may set: all but ``kernel_hosts``."""


def env_name(field_name: str) -> str:
    return _ENV_NAMES[field_name]


def load_settings(state_dir: Path, environ: dict[str, str] | None = None) -> Settings:
    """Read config.toml (if any) and let the environment override it."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    values: dict[str, object] = {}
    config = state_dir / "config.toml"
    try:
        text, _ = read_regular(config, SMALL_FILE_BYTES)
    except FileNotFoundError:
        pass
    else:
        import tomllib  # here: most state dirs have no config.toml, and every process loads this

        try:
            values.update(tomllib.loads(text.decode("utf-8")))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{config} is not valid TOML: {exc}") from exc
    hosts = decode_kernel_hosts(values.pop("kernel_hosts", []), state_dir)
    for name, var in _ENV_NAMES.items():
        if var in env:
            values[name] = env[var]
    settings = Settings()
    types = {f.name: type(getattr(settings, f.name)) for f in fields(Settings)}
    unknown = set(values) - set(_ENV_NAMES)
    if unknown:
        raise ValueError(f"unknown settings in {config}: {', '.join(sorted(unknown))}")
    typed = {}
    for name, value in values.items():
        try:
            typed[name] = _typed(types[name], value)
        except (TypeError, ValueError, ArithmeticError) as exc:
            where = _ENV_NAMES[name] if _ENV_NAMES[name] in env else str(config)
            kind = types[name].__name__
            raise ValueError(f"{name} = {value!r} ({where}) is not of type {kind}: {exc}") from exc
    return replace(settings, kernel_hosts=hosts, **typed)


def settings_problem(state_dir: Path, environ: dict[str, str] | None = None) -> str | None:
    """Why a daemon of this state dir would refuse its settings (config.toml, the
    ``NBSTAGE_*`` environment), or None when they read."""
    try:
        load_settings(state_dir, environ)
    except Exception as exc:  # a string, whatever the file holds: callers wait on it
        return refusal(exc, state_dir)
    return None


def refusal(exc: BaseException, state_dir: Path) -> str:
    """What ``load_settings``'s exception says, the file named where it is not."""
    config = state_dir / "config.toml"
    if isinstance(exc, KernelHostError):
        return f"{config}: {exc}"
    if isinstance(exc, (OSError, ValueError)):
        return str(exc)
    return f"{config}: {exc!r}"


def _typed(kind: type, value: object) -> Any:
    """A setting's value as its type; a switch from the environment is off for ``0``,
    ``false``, ``no`` or ``off`` (any case), on for ``1``, ``true``, ``yes`` or ``on``."""
    if kind is not bool or isinstance(value, bool):
        return kind(value)
    word = str(value).strip().lower()
    if word in ("0", "false", "no", "off"):
        return False
    if word in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"not a switch (on or off): {value!r}")
