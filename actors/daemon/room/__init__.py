"""The Room: one open notebook. The actor (actor.py) owns the document and its peers;
each other concern is a plain class of its own in this package (ADR 0003)."""

from nbstage.actors.daemon.room.actor import Room

__all__ = ["Room"]
