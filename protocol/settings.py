"""Daemon settings: defaults, then config.toml in the state dir, then the environment."""

from __future__ import annotations

import os
import tomllib
from dataclasses import fields, replace
from pathlib import Path

from nbstage.protocol.frozen import frozen


@frozen
class Settings:
    keep_alive_secs: float = 30.0
    """Kernel teardown delay after a room's last peer leaves."""
    reaper_interval_secs: float = 300.0
    reaper_ttl_secs: float = 86400.0
    reaper_soft_cap: int = 32
    heartbeat_secs: float = 1.0
    autosave_delay_secs: float = 2.0
    """Quiet time after an edit before a file-backed room saves itself."""
    autosave_max_delay_secs: float = 10.0
    """Longest a file-backed room waits to save under continuous edits."""
    file_check_secs: float = 1.0
    """How often a file-backed room with peers looks whether its file changed on disk
    (a stat); 0 leaves it to the check every save makes."""
    execution_retention: int = 1000
    """How many finished execution records executions/ keeps."""
    max_rooms: int = 128
    """Resident rooms the daemon admits in all; a create or open beyond it is refused."""
    max_rooms_per_connection: int = 48
    """Resident rooms one client connection may have started."""
    figure_files: int = 64
    """How many image files figures/ in the state dir keeps: each PNG or JPEG a tool result
    attaches is also written there, for clients that drop image content (Codex); 0 writes
    none. Read by `nbstage mcp` when it starts."""


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
    "figure_files": "NBSTAGE_FIGURE_FILES",
}


def env_name(field_name: str) -> str:
    return _ENV_NAMES[field_name]


def load_settings(state_dir: Path, environ: dict[str, str] | None = None) -> Settings:
    """Read config.toml (if any) and let the environment override it."""
    environ = os.environ if environ is None else environ
    values: dict[str, object] = {}
    config = state_dir / "config.toml"
    if config.exists():
        values.update(tomllib.loads(config.read_text()))
    for name, var in _ENV_NAMES.items():
        if var in environ:
            values[name] = environ[var]
    settings = Settings()
    types = {f.name: type(getattr(settings, f.name)) for f in fields(Settings)}
    unknown = set(values) - set(types)
    if unknown:
        raise ValueError(f"unknown settings in {config}: {', '.join(sorted(unknown))}")
    return replace(settings, **{k: types[k](v) for k, v in values.items()})
