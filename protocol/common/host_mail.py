"""What an actor asks of its process's actor host (entrypoints/common/actor_host.py)
rather than of the edge behind it."""

from __future__ import annotations

from typing import Any

from nbstage.protocol.common.frozen import frozen


@frozen
class TellAfterMail:
    """Sent to the edge's address: the host tells ``message`` to ``to`` once the edge has
    every message of the delivery under way (an actor's answers are on their sockets),
    in a later turn of the process's loop."""

    to: Any
    message: Any
