"""The one check a peer's label passes as it is decoded, and how a client makes one fit.

A label is shown to people (``admin peers``, ``admin rooms``) and sent to every watcher
with each ``peer_joined`` and ``peer_left`` event, so an unbounded one costs every
watcher its size on each join (issue 20: 200 MB in 0.7 s). ``peer_label`` is refused
with ``bad_request`` when it is longer than ``MAX_LABEL_CHARS`` or holds a control
character (C0, DEL, C1).
"""

from __future__ import annotations

import re
from typing import Any

from nbstage.protocol.common.paths import check_fields

MAX_LABEL_CHARS = 256
LABEL_FIELDS = ("peer_label",)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def label_problem(value: str) -> str | None:
    """Why ``value`` cannot be a peer's label, or None."""
    if len(value) > MAX_LABEL_CHARS:
        return f"it is {len(value):,} characters long, over the limit of {MAX_LABEL_CHARS}"
    control = _CONTROL.search(value)
    if control is not None:
        return f"it contains the control character \\x{ord(control.group()):02x}"
    return None


def check_labels(decoded: Any) -> Any:
    """``decoded`` itself, after checking each of its ``LABEL_FIELDS`` that holds a string."""
    return check_fields(decoded, LABEL_FIELDS, label_problem, "label")


def fitted_label(value: str) -> str:
    """``value`` made a label the daemon accepts: control characters become spaces and
    it is cut to ``MAX_LABEL_CHARS``. For labels a client did not choose for the wire
    (an MCP client's name)."""
    return _CONTROL.sub(" ", value)[:MAX_LABEL_CHARS]
