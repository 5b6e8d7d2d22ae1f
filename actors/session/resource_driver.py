"""The SessionManager's handlers for notebooks as MCP resources (issue 25).

They run in the SessionManager (its one table takes them in, ``handlers``) and use its
daemon requests, its session state and its supervisor; what they decide is in
``resources.py`` and ``change_bursts.py``. A list or a read is driven like a tool
handler, request by request, so a slow read never blocks the mailbox.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from nbstage.actors.common.base import Key, wakeup
from nbstage.actors.session import resources
from nbstage.actors.session.resources import NotebookResources, Work
from nbstage.actors.session.tool_runs import Ask
from nbstage.protocol.mcp import resources as res
from nbstage.protocol.session.resource_messages import (
    NotebookChanged,
    QuietCheckDue,
    ResourceAnswered,
    ResourceListChanged,
    ResourceRefused,
    ResourceRequested,
    ResourceSubscriptionsChanged,
    ResourceUpdated,
    RoomsChanged,
)

REFRESH = "resources:list"
"""The call id of the SessionManager's own list refreshes."""


class ResourceDriver:
    def __init__(self, manager: Any) -> None:
        self.manager = manager
        self.part = NotebookResources()

    def handlers(self) -> dict[Key, Callable[..., None]]:
        return {
            ResourceRequested: self.requested,
            ResourceSubscriptionsChanged: lambda msg, _: self.part.subscribe(msg.uris),
            NotebookChanged: self._notebook_changed,
            RoomsChanged: lambda msg, _: self.refresh(),
            wakeup(QuietCheckDue): self._quiet_check_due,
        }

    def _tell(self, message: object) -> None:
        if self.manager.supervisor is not None:
            self.manager.send(self.manager.supervisor, message)

    def requested(self, msg: ResourceRequested, sender: Any) -> None:
        # While the daemon this client started comes up, a list or read waits for the
        # first link as a tool call does, rather than failing as unreachable.
        if self.manager.held.hold_for_first_link(msg):
            return
        if msg.method is res.ResourceMethod.LIST:
            self._drive(resources.listing(self.manager.state), msg.call_id, None, self._tell)
            return
        try:
            ref = res.parse_uri(msg.uri)
        except res.ResourceUriError as exc:
            self._tell(ResourceRefused(msg.call_id, exc.failure, exc.message, msg.uri))
            return
        self._drive(resources.read(ref), msg.call_id, msg.uri, self._tell)

    def _drive(
        self,
        work: Work,
        call_id: str,
        uri: str | None,
        done: Callable[[Any], None],
        reply: Any = None,
    ) -> None:
        match resources.step(work, reply, call_id, uri):
            case Ask(request):
                resume = lambda answer: self._drive(work, call_id, uri, done, answer)  # noqa: E731
                self.manager.daemon.send(request, resume)
            case outcome:
                done(outcome)

    # --- the list, and what changes it ----------------------------------------------------

    def refresh(self) -> None:
        """Work out the list again; the supervisor hears of it if it differs. One refresh
        at a time: a change during one starts another when it ends."""
        if self.part.refreshing:
            self.part.refresh_again = True
            return
        self.part.refreshing = True
        self._drive(resources.listing(self.manager.state), REFRESH, None, self._refreshed)

    def _refreshed(self, outcome: ResourceAnswered | ResourceRefused) -> None:
        self.part.refreshing = False
        if isinstance(outcome, ResourceAnswered):
            fresh = self.part.listed_now(outcome.result())
            if fresh is not None:
                self._tell(ResourceListChanged(fresh))
        if self.part.refresh_again:
            self.part.refresh_again = False
            self.refresh()

    # --- subscribed notebooks that change -------------------------------------------------

    def _notebook_changed(self, msg: NotebookChanged, sender: Any) -> None:
        self._arm(msg.notebook_id, self.part.changed(msg.notebook_id, time.monotonic()))

    def _quiet_check_due(self, due: QuietCheckDue) -> None:
        uris, arm = self.part.due(due.notebook_id, due.token, time.monotonic())
        for uri in uris:
            self._tell(ResourceUpdated(uri))
        self._arm(due.notebook_id, arm)

    def _arm(self, notebook_id: str, arm: Any) -> None:
        if arm is not None:
            payload = QuietCheckDue(notebook_id, arm.token)
            self.manager.wakeupAfter(timedelta(seconds=arm.after), payload=payload)
