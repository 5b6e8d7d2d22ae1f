"""The MCP protocol versions nbstage serves, the keys of the 2026-07-28 request
envelope, and how a result is shaped for the era of the version it answers.

Two eras share one process. Legacy (2024-11-05 .. 2025-11-25): ``initialize`` negotiates
a version once. Modern (2026-07-28): every request carries its version and capabilities
in ``_meta``, and results carry a ``resultType`` and, for cacheable methods, cache hints.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

SUPPORTED_LEGACY_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_LEGACY_VERSION: Final = SUPPORTED_LEGACY_VERSIONS[-1]
MODERN_VERSION: Final = "2026-07-28"
SUPPORTED_MODERN_VERSIONS: Final = (MODERN_VERSION,)

PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"

# Keys that exist only in the 2026-07-28 request envelope. Other reserved keys, such as
# 2025-11-25's "io.modelcontextprotocol/related-task", say nothing about the era.
ENVELOPE_KEYS: Final = frozenset(
    {PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY}
)

LOG_LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

# Results of these methods carry cache hints in 2026-07-28; clients reject them without.
CACHEABLE_METHODS: Final = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
LEGACY_ONLY_RESULT_KEYS: Final = ("resultType", "ttlMs", "cacheScope")


def is_modern_version(version: str) -> bool:
    return version in SUPPORTED_MODERN_VERSIONS


def negotiate_version(requested: str) -> str:
    """The legacy version to answer ``initialize`` with."""
    return requested if requested in SUPPORTED_LEGACY_VERSIONS else LATEST_LEGACY_VERSION


def decorate_result(
    result: Mapping[str, Any],
    *,
    version: str,
    method: str | None = None,
    server_info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Shape a result for the era of ``version``; returns a new dict.

    Modern: ``resultType`` defaults to ``"complete"``, results of cacheable methods get
    ``ttlMs: 0`` and ``cacheScope: "private"`` unless set, and ``server_info`` is stamped
    into ``_meta`` unless the result already names one. Legacy: those 2026-only keys are
    removed.
    """
    shaped = dict(result)
    if not is_modern_version(version):
        for key in LEGACY_ONLY_RESULT_KEYS:
            shaped.pop(key, None)
        return shaped
    shaped.setdefault("resultType", "complete")
    if method in CACHEABLE_METHODS:
        shaped.setdefault("ttlMs", 0)
        shaped.setdefault("cacheScope", "private")
    if server_info is not None:
        meta = shaped.get("_meta")
        if meta is None:
            shaped["_meta"] = {SERVER_INFO_KEY: dict(server_info)}
        elif isinstance(meta, Mapping) and meta.get(SERVER_INFO_KEY) is None:
            shaped["_meta"] = {**meta, SERVER_INFO_KEY: dict(server_info)}
    return shaped
