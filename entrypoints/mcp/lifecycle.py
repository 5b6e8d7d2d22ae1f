"""The MCP lifecycle of one stdio connection, as a pure state machine run by the
`nbstage mcp` edge (``mcp_edge.py``).

A :class:`Lifecycle` sees every request before anything acts on it and returns an
:data:`~nbstage.entrypoints.mcp.envelope.Admission`: ``Answer`` (the lifecycle replies
itself: ``initialize``, ``ping``, ``server/discover``), ``Reject`` (a JSON-RPC error) or
``Dispatch`` (hand the request on, with the protocol version and client identity it runs
under). Nothing here does I/O or reads a clock.

Two protocol eras share one process:

* Legacy (2024-11-05 .. 2025-11-25): ``initialize`` negotiates a version once, and the
  rest of the connection runs under it.
* Modern (2026-07-28): no handshake. Every request carries
  ``_meta["io.modelcontextprotocol/protocolVersion"]`` and
  ``_meta["io.modelcontextprotocol/clientCapabilities"]`` (``clientInfo`` and
  ``logLevel`` are optional) and is judged on its own.

The first request that is admitted as ``initialize`` or with the modern ``_meta``
fixes the era; a rejected request fixes nothing. After that the connection does not
switch: a request carrying the modern envelope on a legacy connection gets -32600
(Invalid Request), and the ``initialize`` handshake on a modern connection gets -32022
naming the versions served there. This is how the official Python SDK's dual-era server
behaves, so clients that probe with ``server/discover`` and fall back see the same answers.

An ``initialize`` is the legacy handshake when its params name a ``protocolVersion``
(even if a client also stamped the modern envelope on it). Without one but with the
modern ``_meta``, it is a 2026-07-28 request: its envelope is checked like any other's,
and a valid one gets -32601 because that revision removed the method. The official
conformance suite's ``server-stateless`` scenario expects this; the SDK's stdio loop
answers -32602 or -32022 instead.

Other decisions the spec leaves open:

* A request before ``initialize`` that is neither ``ping`` nor modern gets -32600:
  the handshake must come first.
* ``ping`` without the modern ``_meta`` is answered before the era is fixed, and
  fixes nothing. With the modern ``_meta``, or on a modern connection, it is -32601:
  2026-07-28 removed it.
* A second ``initialize`` gets -32600.
* ``tools/call`` whose ``_meta`` is not an object, or whose ``_meta.progressToken`` is
  neither a string nor an integer, gets -32602 in both eras (booleans are not integers).
* ``server/discover`` lists only the modern version: it describes the per-request
  path. Its capabilities declare ``listChanged`` and ``subscribe`` as ``initialize``'s
  do: 2026-07-28 delivers those notifications on ``subscriptions/listen`` streams,
  which the supervisor serves (actors/proxy/listen_streams.py).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final

from nbstage.entrypoints.mcp.envelope import (
    Admission,
    Answer,
    ClientInfo,
    Dispatch,
    Reject,
    carries_modern_envelope,
    check_request_meta,
    method_not_found,
    modern_initialize,
    progress_token_of,
    read_envelope,
    unsupported_version,
)
from nbstage.protocol.mcp import mcp_apps, resources
from nbstage.protocol.mcp.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Notification,
    Request,
)
from nbstage.protocol.mcp.versions import (
    CLIENT_CAPABILITIES_KEY,
    LATEST_LEGACY_VERSION,
    MODERN_VERSION,
    PROTOCOL_VERSION_KEY,
    SUPPORTED_LEGACY_VERSIONS,
    SUPPORTED_MODERN_VERSIONS,
    decorate_result,
    negotiate_version,
)

INSTRUCTIONS: Final = (
    "nbstage runs Jupyter notebooks in a background daemon that outlives this "
    "connection. Start every task with connect_notebook (a .ipynb path, or a notebook_id "
    "from list_active_notebooks) or create_notebook; the cell tools then work on that "
    "active notebook. Read with get_all_cells or get_cell, edit with create_cell, set_cell, "
    "replace_match or move_cell, and run with execute_cell or and_run=true. A run that "
    "outlasts timeout_secs returns status 'running': fetch the rest with "
    "get_results(execution_id). After a restart your notebook is rejoined by itself: a "
    "server restart keeps the kernel and its variables; a daemon restart starts a new "
    "kernel, so rerun the cells you need. If a tool reports no active session, reconnect "
    "with connect_notebook(notebook_id=...). Call save_notebook to write the file."
)


class State(enum.Enum):
    NEW = "new"
    LEGACY_INITIALIZING = "legacy_initializing"
    """``initialize`` answered, ``notifications/initialized`` not yet received."""
    LEGACY_READY = "legacy_ready"
    MODERN = "modern"
    CLOSED = "closed"


class Lifecycle:
    """The protocol state of one client connection."""

    def __init__(
        self,
        *,
        version: str,
        name: str = "nbstage",
        title: str | None = None,
        instructions: str = INSTRUCTIONS,
    ) -> None:
        self.server_info: dict[str, Any] = {"name": name, "version": version}
        if title is not None:
            self.server_info["title"] = title
        self.instructions = instructions
        self.state = State.NEW
        self.legacy_version: str | None = None
        self.client_info: ClientInfo | None = None
        self.client_capabilities: Mapping[str, Any] = {}

    @property
    def client_label(self) -> str | None:
        """The client's display label (title, else name), once the client has said.

        Legacy: from ``initialize``. Modern: from the latest admitted request that named
        a ``clientInfo``; for display only, never for behaviour.
        """
        return self.client_info.label if self.client_info is not None else None

    @property
    def may_send_list_changed(self) -> bool:
        """Whether ``notifications/tools/list_changed`` may be written unasked.

        Only on a legacy connection past ``notifications/initialized``: 2026-07-28
        sends it on ``subscriptions/listen`` streams alone (listen_streams.py).
        """
        return self.state is State.LEGACY_READY

    def _capabilities(self, client: object = None) -> dict[str, Any]:
        """The server's capabilities, the same in both eras (2026-07-28 delivers the
        changes on subscriptions/listen streams); the MCP Apps extension only to a
        client that declared it (``client``: its capabilities)."""
        capabilities: dict[str, Any] = {
            "tools": {"listChanged": True},
            "resources": resources.capabilities(),
        }
        if mcp_apps.client_takes_apps(client):
            capabilities["extensions"] = mcp_apps.server_extensions()
        return capabilities

    def close(self) -> None:
        self.state = State.CLOSED

    def decorate(self, result: Mapping[str, Any], *, version: str, method: str) -> dict[str, Any]:
        """:func:`decorate_result` with this server's identity."""
        return decorate_result(result, version=version, method=method, server_info=self.server_info)

    def notice(self, notification: Notification) -> bool:
        """Take in a client notification; True when it should be passed on.

        ``notifications/initialized`` completes the legacy handshake and stops here.
        Anything arriving before an era is fixed, or after close, is dropped.
        """
        if notification.method == "notifications/initialized":
            if self.state is State.LEGACY_INITIALIZING:
                self.state = State.LEGACY_READY
            return False
        return self.state in (State.LEGACY_INITIALIZING, State.LEGACY_READY, State.MODERN)

    def admit(self, request: Request) -> Admission:
        match self.state:
            case State.NEW:
                return self._admit_new(request)
            case State.LEGACY_INITIALIZING | State.LEGACY_READY:
                return self._admit_legacy(request)
            case State.MODERN:
                return self._admit_modern(request)
        return Reject(INTERNAL_ERROR, "The server is shutting down")

    def _admit_new(self, request: Request) -> Admission:
        if request.method == "initialize":
            removed = modern_initialize(request.params)
            return removed if removed is not None else self._initialize(request.params)
        if carries_modern_envelope(request.params) or request.method == "server/discover":
            if request.method == "ping":
                return self._ping_removed()
            admission = self._admit_modern(request)
            if not isinstance(admission, Reject):
                self.state = State.MODERN
            return admission
        if request.method == "ping":
            return Answer({})
        return Reject(
            INVALID_REQUEST,
            f"Received '{request.method}' before initialize. Send initialize first "
            f"(protocol {SUPPORTED_LEGACY_VERSIONS[0]} to {LATEST_LEGACY_VERSION}), or carry "
            f"'{PROTOCOL_VERSION_KEY}' and '{CLIENT_CAPABILITIES_KEY}' in every request's _meta "
            f"(protocol {MODERN_VERSION}).",
        )

    def _admit_legacy(self, request: Request) -> Admission:
        assert self.legacy_version is not None
        if request.method == "initialize":
            return Reject(
                INVALID_REQUEST,
                f"Already initialized with protocol {self.legacy_version}; "
                "initialize is accepted once per connection",
            )
        if carries_modern_envelope(request.params):
            return Reject(
                INVALID_REQUEST,
                f"This connection was initialized with protocol {self.legacy_version}; "
                f"requests carrying the {MODERN_VERSION} _meta envelope are not accepted on it. "
                "Start a new connection to use the new protocol.",
            )
        if request.method == "ping":
            return Answer({})
        if request.method == "server/discover":
            return method_not_found(request.method)
        refusal = self._check_call_meta(request)
        if refusal is not None:
            return refusal
        return Dispatch(
            version=self.legacy_version,
            client_info=self.client_info,
            client_capabilities=self.client_capabilities,
            progress_token=progress_token_of(request.params),
        )

    def _admit_modern(self, request: Request) -> Admission:
        if request.method == "initialize":
            removed = modern_initialize(request.params)
            if removed is not None:
                return removed
            params = request.params if isinstance(request.params, Mapping) else {}
            rejection = unsupported_version(params.get("protocolVersion"))
            return Reject(
                rejection.code,
                f"This connection speaks protocol {MODERN_VERSION} with per-request _meta; "
                "initialize is not accepted on it",
                rejection.data,
            )
        if request.method == "ping":
            return self._ping_removed()
        admission = read_envelope(request.params)
        if isinstance(admission, Reject):
            return admission
        refusal = self._check_call_meta(request)
        if refusal is not None:
            return refusal
        if admission.client_info is not None:
            self.client_info = admission.client_info
        if request.method == "server/discover":
            return Answer(self._discover_result(admission.client_capabilities))
        return admission

    def _check_call_meta(self, request: Request) -> Reject | None:
        """A ``tools/call`` whose ``_meta`` or progress token is malformed is refused."""
        return check_request_meta(request.params) if request.method == "tools/call" else None

    def _ping_removed(self) -> Reject:
        message = f"Method not found: ping (removed in protocol {MODERN_VERSION})"
        return Reject(METHOD_NOT_FOUND, message, "ping")

    def _initialize(self, params: object) -> Admission:
        if not isinstance(params, Mapping):
            return Reject(INVALID_PARAMS, "Invalid params: initialize needs an object 'params'")
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            return Reject(INVALID_PARAMS, "Invalid params: 'protocolVersion' must be a string")
        capabilities = params.get("capabilities", {})
        if not isinstance(capabilities, Mapping):
            return Reject(INVALID_PARAMS, "Invalid params: 'capabilities' must be an object")
        client_info = None
        if params.get("clientInfo") is not None:
            try:
                client_info = ClientInfo.from_wire(params["clientInfo"])
            except ValueError as exc:
                return Reject(INVALID_PARAMS, f"Invalid params: 'clientInfo' {exc}")
        negotiated = negotiate_version(requested)
        self.state = State.LEGACY_INITIALIZING
        self.legacy_version = negotiated
        self.client_info = client_info
        self.client_capabilities = dict(capabilities)
        return Answer(
            {
                "protocolVersion": negotiated,
                "capabilities": self._capabilities(client=capabilities),
                "serverInfo": dict(self.server_info),
                "instructions": self.instructions,
            }
        )

    def _discover_result(self, client: Mapping[str, Any]) -> dict[str, Any]:
        result = {
            "supportedVersions": list(SUPPORTED_MODERN_VERSIONS),
            "capabilities": self._capabilities(client=client),
            "instructions": self.instructions,
        }
        return self.decorate(result, version=MODERN_VERSION, method="server/discover")
