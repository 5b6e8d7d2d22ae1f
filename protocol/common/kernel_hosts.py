"""Kernel hosts: the Jupyter Kernel Gateways named in ``config.toml`` (issue 26).

Each ``[[kernel_hosts]]`` table is decoded once, when the daemon starts, into a frozen
``KernelHost``; a malformed one is refused then, with a message that names it. The
token read from ``token_file`` is held like an inline one, so no later step reads a file.
"""

from __future__ import annotations

import re
from dataclasses import field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.safe_files import SMALL_FILE_BYTES, read_regular

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
"""A host's name: what notebooks' metadata and the admin console call it."""

KNOWN_KEYS = frozenset(
    {"name", "url", "token", "token_file", "ca_file", "max_kernels", "silence_secs"}
)

DEFAULT_SILENCE_SECS = 4.0
"""How long a kernel's channels may hear nothing from the host before it is taken for lost
(3 s took a gateway starting 11 kernels at once on a loaded machine for lost; 4 s still
tells a frozen host's rooms within issue 26's 5 s)."""
SILENCE_RANGE = (1.0, 300.0)


class KernelHostError(ValueError):
    """A ``[[kernel_hosts]]`` table that cannot be used; the message names the table."""


@frozen
class KernelHost:
    name: str
    """What notebooks ask for (``kernel_host`` in their metadata) and the console shows."""
    url: str
    """The gateway's base URL, ``http://`` or ``https://``, without a trailing slash."""
    token: str = field(default="", repr=False)
    """Sent as ``Authorization: token …`` on every call; never in a URL, never logged."""
    ca_file: str | None = None
    """A PEM file of the CAs that sign an https gateway's certificate (else the system's)."""
    max_kernels: int | None = None
    """The most kernels the daemon places there; none: no limit of its own."""
    silence_secs: float = DEFAULT_SILENCE_SECS
    """Seconds a kernel's channels hear nothing from the host (the channels ping it every
    second) before the host is taken for lost there and the kernel reported dead."""


def decode_kernel_hosts(raw: Any, config_dir: Path) -> tuple[KernelHost, ...]:
    """Every ``[[kernel_hosts]]`` table of a parsed ``config.toml``, in order. Relative
    ``token_file`` and ``ca_file`` paths are read from ``config_dir`` (the state dir)."""
    if not isinstance(raw, list):
        raise KernelHostError("kernel_hosts must be a list of tables ([[kernel_hosts]])")
    hosts = [_decode_one(table, at, config_dir) for at, table in enumerate(raw, start=1)]
    seen: set[str] = set()
    for host in hosts:
        if host.name in seen:
            raise KernelHostError(f"kernel host {host.name!r}: another table has that name")
        seen.add(host.name)
    return tuple(hosts)


def _decode_one(table: Any, at: int, config_dir: Path) -> KernelHost:
    label = f"[[kernel_hosts]] table {at}"
    if not isinstance(table, dict):
        raise KernelHostError(f"{label} must be a table")
    name = table.get("name")
    if isinstance(name, str) and NAME_PATTERN.fullmatch(name):
        label = f"kernel host {name!r} ({label})"
    else:
        raise KernelHostError(
            f"{label}: name must be letters, digits, '.', '_' or '-' (at most 63), not {name!r}"
        )
    unknown = set(table) - KNOWN_KEYS
    if unknown:
        raise KernelHostError(f"{label}: unknown keys {', '.join(sorted(unknown))}")
    return KernelHost(
        name,
        _url(table.get("url"), label),
        _token(table, label, config_dir),
        _ca_file(table.get("ca_file"), label, config_dir),
        _max_kernels(table.get("max_kernels"), label),
        _silence_secs(table.get("silence_secs"), label),
    )


def _url(url: Any, label: str) -> str:
    if not isinstance(url, str):
        raise KernelHostError(f"{label}: url must be a string such as 'http://host:8888'")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise KernelHostError(f"{label}: url must be http:// or https:// with a host, not {url!r}")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise KernelHostError(
            f"{label}: url must carry no query, fragment or credentials (use token or token_file)"
        )
    return url.rstrip("/")


def _token(table: dict[str, Any], label: str, config_dir: Path) -> str:
    token, token_file = table.get("token"), table.get("token_file")
    if token is not None and token_file is not None:
        raise KernelHostError(f"{label}: give token or token_file, not both")
    if token_file is not None:
        if not isinstance(token_file, str):
            raise KernelHostError(f"{label}: token_file must be a path")
        path = config_dir / Path(token_file).expanduser()
        try:
            token = read_regular(path, SMALL_FILE_BYTES)[0].decode("utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise KernelHostError(f"{label}: cannot read token_file {path}: {exc}") from None
    if not isinstance(token, str) or not token:
        raise KernelHostError(f"{label}: a token (or token_file) is required")
    if any(c.isspace() for c in token) or not token.isprintable():
        raise KernelHostError(f"{label}: the token holds spaces or control characters")
    return token


def _ca_file(ca_file: Any, label: str, config_dir: Path) -> str | None:
    if ca_file is None:
        return None
    if not isinstance(ca_file, str):
        raise KernelHostError(f"{label}: ca_file must be a path")
    path = config_dir / Path(ca_file).expanduser()
    if not path.is_file():
        raise KernelHostError(f"{label}: ca_file {path} is not a file")
    return str(path)


def _max_kernels(value: Any, label: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise KernelHostError(f"{label}: max_kernels must be a whole number of at least 1")
    return int(value)


def _silence_secs(value: Any, label: str) -> float:
    if value is None:
        return DEFAULT_SILENCE_SECS
    low, high = SILENCE_RANGE
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise KernelHostError(f"{label}: silence_secs must be a number from {low:g} to {high:g}")
    return float(value)
