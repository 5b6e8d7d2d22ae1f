"""Keeping the per-client processes small (SPEC §11: an idle `nbstage mcp` is two
processes and about 40 MB together).

asyncio imports ``ssl`` only to offer TLS, and loading OpenSSL costs each process
about 4 MB. `nbstage mcp` and its session child speak only stdio and Unix sockets,
so they keep it out. This must run before anything imports asyncio, and only in
those two processes: a process that does need TLS (the harness, with the MCP SDK)
never calls it.
"""

from __future__ import annotations

import sys


def without_tls() -> None:
    sys.modules.setdefault("ssl", None)
