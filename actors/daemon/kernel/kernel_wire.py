"""How the daemon reads a local kernel's ZMQ messages: jupyter_client's own ``Session``,
minus two costs that every message paid and nbstage never needed (ADR 0002).

- **Dates.** ``Session.deserialize`` parsed the two ISO 8601 dates in every message's
  headers with dateutil. nbstage reads no date of a kernel message; they stay strings.
- **The protocol adapter.** Every message went through ``adapter.adapt``, which imports a
  name and reads the header's version to find that nothing is to be adapted when the
  kernel speaks protocol 5, as every ipykernel nbstage runs does. A message of another
  major version still goes through it.
- **Reading until empty.** A non-blocking read of an empty socket raises ``zmq.Again``; a
  drain ended with one such exception per channel, and a pump of an idle channel was
  nothing but. The socket's ``EVENTS`` option says whether a message waits, for a
  third of that price when asked with plain ints (pyzmq's enum costs as much again).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import zmq
from jupyter_client import session as jupyter_session

_EVENTS = int(zmq.EVENTS)
_POLLIN = int(zmq.POLLIN)
_CURRENT = 5
_CURRENT_MAJOR = f"{_CURRENT}."

_adapt: Callable[..., dict[str, Any]] = jupyter_session.adapt


def _dates_as_sent(value: Any) -> Any:
    return value


def _adapt_older(msg: dict[str, Any], to_version: int = _CURRENT) -> dict[str, Any]:
    """``adapter.adapt``, skipped for a protocol 5 message adapted to protocol 5 (a send
    to an older kernel still goes through it)."""
    if to_version == _CURRENT and str(msg["header"].get("version", "")).startswith(_CURRENT_MAJOR):
        return msg
    return _adapt(msg, to_version)


jupyter_session.extract_dates = _dates_as_sent
jupyter_session.adapt = _adapt_older


def waiting(channel: Any) -> Iterator[dict[str, Any]]:
    """Every message already on ``channel``, without blocking, one read each; the socket's
    ``EVENTS`` is asked before each read, so an empty socket raises nothing. (The
    channel's ``msg_ready`` and ``get_msg`` build a zmq poller for every call.)"""
    socket = channel.socket
    if socket is None:
        return
    session = channel.session
    while socket.getsockopt(_EVENTS) & _POLLIN:
        msg = session.recv(socket, zmq.NOBLOCK)[1]
        if msg is None:
            return
        yield msg
