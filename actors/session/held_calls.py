"""The tool calls the SessionManager holds back, and what each waits for.

While a daemon this client started comes up, every call, and every resource list or
read, waits for the first link. After
that, a new link may reach a restarted daemon, so session calls wait until the link's
identity answer shows which daemon it is (SPEC §7: no stale handle). And while a rejoin
is under way with no active session, session calls wait for it (``deferred``), each no
longer than the SessionManager's deferral limit. The daemon version this process first
saw is kept here too: the link is confirmed only by a daemon of that version.
"""

from __future__ import annotations

from typing import Any

from nbstage.actors.session import reconcile


class HeldCalls:
    def __init__(self) -> None:
        self.awaiting_first_link = False
        self.confirmed = False
        """Whether the current link's identity answer came back."""
        self.before_link: list[Any] = []
        """Calls (ToolCallRequested, ResourceRequested) held until the link answers, oldest
        first."""
        self.deferred: list[tuple[Any, Any, Any]] = []
        """Session calls (call, its tool spec, its arguments) held while a rejoin is under way."""
        self.baseline_version: str | None = None

    def hold_for_first_link(self, call: Any) -> bool:
        """Hold any call while the first link is awaited; True when held."""
        return self._hold(call, self.awaiting_first_link)

    def hold_until_confirmed(self, call: Any, linked: bool) -> bool:
        """Hold a session call while a link is up but unconfirmed; True when held."""
        return self._hold(call, linked and not self.confirmed)

    def _hold(self, call: Any, needed: bool) -> bool:
        if needed:
            self.before_link.append(call)
        return needed

    def release(self) -> list[Any]:
        held, self.before_link = self.before_link, []
        return held

    def defer(self, call: Any, spec: Any, args: Any) -> None:
        self.deferred.append((call, spec, args))

    def release_deferred(self) -> list[tuple[Any, Any, Any]]:
        deferred, self.deferred = self.deferred, []
        return deferred

    def expire(self, call_id: str) -> list[Any]:
        """The deferred calls with this id, no longer held."""
        expired = [call for call, _spec, _args in self.deferred if call.call_id == call_id]
        self.deferred = [held for held in self.deferred if held[0].call_id != call_id]
        return expired

    def cancel(self, call_id: str) -> None:
        self.before_link = [call for call in self.before_link if call.call_id != call_id]

    def version_seen(self, version: str) -> reconcile.Handoff | None:
        """The first version seen, by the link or the watch loop, is the baseline (the
        watch loop may start late and first see an already upgraded daemon); a later
        different one is a handoff."""
        self.baseline_version, handoff = reconcile.against_baseline(self.baseline_version, version)
        return handoff
