"""The ``subscriptions/listen`` streams of a 2026-07-28 client (protocol/mcp/subscriptions.py),
held by the ProxySupervisor beside the legacy subscriptions of its ResourceDesk, so they
outlast a session child as those do.

A stream is acknowledged at once with what it will get: tool list changes, resource
list changes, and updates of the notebook and cell URIs it named (a URI that names
no notebook is left out of the acknowledgement). The URIs join the desk's, which the
session child is told, and whose changes it reports once per burst
(actors/session/change_bursts.py); each report reaches every stream that named the
URI, stamped with that stream's id. A cancel ends a stream; the supervisor's stop
closes the rest gracefully, with the listen request's result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from nbstage.protocol.mcp import jsonrpc
from nbstage.protocol.mcp import resources as res
from nbstage.protocol.mcp.subscriptions import (
    LISTEN_METHOD,
    Change,
    ListenFilter,
    ListenRefused,
    acknowledged,
    change_notice,
    closed,
    read_filter,
)
from nbstage.protocol.mcp.versions import is_modern_version


class Outbox(Protocol):
    def send_mcp(self, message: object) -> None: ...

    def answer(self, request_id: Any, result: dict[str, Any], version: str, method: str) -> None:
        """Send ``result``, shaped for the era of ``version``."""

    def uris_changed(self) -> None:
        """The URIs the streams watch changed: the session child must be told."""


@dataclass
class Stream:
    request_id: jsonrpc.RequestId
    version: str
    wanted: ListenFilter


class ListenStreams:
    def __init__(self, out: Outbox) -> None:
        self.out = out
        self.streams: dict[str, Stream] = {}

    def opened(self, call_id: str, request: jsonrpc.Request, version: str) -> None:
        asked = self._asked(call_id, request, version)
        if isinstance(asked, tuple):
            self.out.send_mcp(jsonrpc.ErrorResponse(request.id, *asked))
            return
        wanted = ListenFilter(asked.tools, asked.resources, _notebook_uris(asked.uris))
        self.streams[call_id] = Stream(request.id, version, wanted)
        self.out.send_mcp(acknowledged(request.id, wanted))
        if wanted.uris:
            self.out.uris_changed()

    def _asked(
        self, call_id: str, request: jsonrpc.Request, version: str
    ) -> ListenFilter | tuple[int, str]:
        """The filter the request asks for, or the JSON-RPC error that refuses it."""
        if not is_modern_version(version):
            return jsonrpc.METHOD_NOT_FOUND, f"Method not found: {LISTEN_METHOD} (2026-07-28 only)"
        if call_id in self.streams:
            return jsonrpc.INVALID_REQUEST, f"a stream with id {request.id!r} is already open"
        try:
            return read_filter(request.params)
        except ListenRefused as exc:
            return jsonrpc.INVALID_PARAMS, f"Invalid params: {exc}"

    def cancelled(self, call_id: str) -> None:
        stream = self.streams.pop(call_id, None)
        if stream is not None and stream.wanted.uris:
            self.out.uris_changed()

    def uris(self) -> list[str]:
        return list(dict.fromkeys(uri for s in self.streams.values() for uri in s.wanted.uris))

    def changed(self, change: Change, uri: str | None = None) -> None:
        for stream in self.streams.values():
            if stream.wanted.wants(change, uri):
                self.out.send_mcp(change_notice(stream.request_id, change, uri))

    def close_all(self) -> None:
        for stream in self.streams.values():
            result = closed(stream.request_id)
            self.out.answer(stream.request_id, result, stream.version, LISTEN_METHOD)
        self.streams.clear()


def _notebook_uris(uris: tuple[str, ...]) -> tuple[str, ...]:
    kept = []
    for uri in uris:
        try:
            res.parse_uri(uri)
        except res.ResourceUriError:
            continue
        kept.append(uri)
    return tuple(kept)
