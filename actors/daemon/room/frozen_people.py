"""The people who stay joined to a shared document frozen while they watched (ADR 0004,
item 19): what of their messages is answered without the Y document, and what thaws it.

Their awareness (Lab's provider renews it about every 15 s) needs no document: pycrdt's
``Awareness`` reads its Doc's client id once, when made, and nothing after, so the one
the live document had is kept with the frozen form and goes on taking their states and
answering their queries; the agents' states are sent again as they were last computed
(``AgentMarks.renewed``). A sync step or an update needs the document: it thaws it.
So does, ahead of it, a person's awareness state that changed (``stirs``): Lab moves a
person's cursor or focus before their first keystroke, and the thaw starts then.
Pure, no actors.
"""

from __future__ import annotations

from typing import Any

from pycrdt import (
    Awareness,
    Decoder,
    YMessageType,
    YSyncMessageType,
    create_awareness_message,
)

from nbstage.actors.daemon.room.agent_marks import AgentMarks
from nbstage.actors.daemon.room.shared_doc import (
    EMPTY_UPDATE,
    KEEPALIVE,
    QUERY_AWARENESS,
    Heard,
    UnreadableMessage,
)


def needs_document(message: bytes) -> bool:
    """Whether a person's message needs the Y document: a sync step 1 or an update with
    something in it does; awareness, its query and an empty update do not.
    UnreadableMessage if it is not a y-websocket message this room takes."""
    if not message:
        raise UnreadableMessage("the message is empty")
    try:
        decoder = Decoder(message)
        kind = decoder.read_var_uint()
        if kind in (YMessageType.AWARENESS, QUERY_AWARENESS):
            return False
        if kind != YMessageType.SYNC:
            raise UnreadableMessage(
                f"message type {kind} is not a y-websocket sync or awareness type"
            )
        step = decoder.read_var_uint()
        payload = decoder.read_message()
    except UnreadableMessage:
        raise
    except Exception as exc:
        raise UnreadableMessage(f"the message could not be read: {exc}") from None
    if step == YSyncMessageType.SYNC_STEP1:
        return True
    if step not in (YSyncMessageType.SYNC_STEP2, YSyncMessageType.SYNC_UPDATE):
        raise UnreadableMessage(f"sync step {step} is not 0, 1 or 2")
    return payload != EMPTY_UPDATE


def stirs(before: dict[str, Any] | None, after: dict[str, Any] | None) -> bool:
    """Whether a client's awareness state, ``before`` and ``after`` an update was applied
    (None: none held), says a person is about to act, so a frozen document is thawed
    ahead of their keystroke. A changed state does (a cursor, a selection, a focus).
    A renewal does not (y-protocols sends the same state with a higher clock every
    15 s; thawing for it would keep every watched document whole), nor does a removal.
    Nor does a client's first state: a person's connection opens with a sync step 1,
    which thaws anyway, so a state never seen is a client the room lost track of, which
    says nothing about a keystroke to come."""
    return before is not None and after is not None and before != after


def heard(message: bytes, awareness: Awareness, marks: AgentMarks) -> Heard:
    """A message ``needs_document`` said needs none, answered from ``awareness``;
    ``stirred`` if a state it carried changed (``stirs``)."""
    decoder = Decoder(message)
    kind = decoder.read_var_uint()
    if kind == QUERY_AWARENESS:
        update = awareness.encode_awareness_update(list(awareness.states))
        return Heard(replies=[create_awareness_message(update)])
    if kind != YMessageType.AWARENESS:
        return Heard()
    payload = decoder.read_message()
    if payload is None:
        raise UnreadableMessage("the message ends before its payload")
    before = dict(awareness.states)
    try:
        awareness.apply_awareness_update(payload, "person")
    except Exception as exc:
        raise UnreadableMessage(f"the message could not be applied: {exc}") from None
    after = awareness.states
    stirred = any(stirs(before.get(client), after.get(client)) for client in after)
    ours = marks.renewed(awareness)
    renewed = [] if ours is None else [create_awareness_message(ours)]
    relay = [create_awareness_message(payload), *renewed]
    return Heard(replies=renewed or [KEEPALIVE], relay=relay, stirred=stirred)
