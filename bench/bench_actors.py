"""Actor classes for bench/thespian_bases.py (they must be importable by actor processes)."""

from __future__ import annotations

import os

from thespian.actors import Actor


class Echo(Actor):
    def receiveMessage(self, msg, sender):
        if msg == "pid":
            self.send(sender, os.getpid())
        elif isinstance(msg, int):
            self.send(sender, msg)
