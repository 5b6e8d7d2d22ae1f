"""How a thread in an nbstage process hands a message to one of its actors.

Actors run on the process's event loop (``entrypoints/actor_host.py``). A few
helpers must block somewhere, such as a kernel's socket waker or a daemon link's
reader, and they live in threads of their own; this is their only way back in.
The host installs the hop onto its loop when it starts. Without a host (unit tests
on a bare ``simpleSystemBase``), :func:`self_poster` returns None and actors fall
back to timer ticks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_post: Callable[[Any, Any], None] | None = None


def install(post: Callable[[Any, Any], None] | None) -> None:
    global _post
    _post = post


def self_poster(actor: Any) -> Callable[[object], None] | None:
    """A function any thread may call to send ``actor`` a message, or None without a host."""
    post = _post
    if post is None:
        return None
    address = actor.myAddress

    def to_actor(message: object) -> None:
        post(address, message)

    return to_actor
