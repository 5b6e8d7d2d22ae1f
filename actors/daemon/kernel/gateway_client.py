"""A small client of one Jupyter Kernel Gateway: its kernels REST API and a kernel's
channels websocket, on tornado (issue 26; docs/adr/0007-kernel-hosts.md).

Not jupyter_server's ``GatewayClient``: that is a process-wide singleton configured for
one gateway, and its websocket sends no ``Authorization`` header. Here each host has its
own client, every call carries ``Authorization: token …`` (never a URL parameter, so no
URL that is logged holds it), and every call has a bound. The coroutines run on a
``LoopThread``: an asyncio loop on a thread of its own, so nothing waits on a gateway on
an actor's thread.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar
from urllib.parse import quote

import orjson
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from nbstage.actors.daemon.kernel import gateway_keepalive, gateway_quickack
from nbstage.protocol.common.kernel_hosts import KernelHost

T = TypeVar("T")

CALL_SECS = 10.0
"""The bound of one REST call (connecting included) and of opening the websocket."""
START_SECS = 60.0
"""Starting and restarting a kernel: the gateway answers once the kernel is up."""
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
"""The largest kernel message taken (tornado's default, 10 MiB, is below one cell's
output limit)."""


class GatewayError(Exception):
    """A gateway call failed; the message names the host and says what happened."""


class LoopThread:
    """An asyncio loop on a daemon thread of its own, for one backend's gateway IO."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def call(self, work: Coroutine[Any, Any, T], bound: float) -> T:
        """Run ``work`` on the loop and wait for it, at most ``bound`` seconds (blocking:
        only from a worker thread)."""
        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(work, bound), self.loop)
        return future.result(bound + 1.0)

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Start ``work`` on the loop and return at once."""
        asyncio.run_coroutine_threadsafe(work, self.loop)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5.0)
        if not self._thread.is_alive():
            self.loop.close()


def _failure(host: KernelHost, what: str, exc: BaseException) -> GatewayError:
    """One sentence for a call that did not get an HTTP answer."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        cause = f"its certificate is not trusted ({exc.verify_message}); set ca_file"
    elif isinstance(exc, ssl.SSLError):
        cause = f"TLS failed ({exc.reason or exc})"
    elif isinstance(exc, HTTPClientError) and exc.code == 599:
        cause = f"no answer ({exc.message})"
    elif isinstance(exc, asyncio.TimeoutError | TimeoutError):
        cause = "no answer in time"
    elif isinstance(exc, ConnectionRefusedError):
        cause = "the connection was refused"
    else:
        cause = f"{type(exc).__name__}: {exc}"
    return GatewayError(f"kernel host {host.name!r} ({host.url}): {what} failed: {cause}")


class GatewayClient:
    """The REST calls and channels of one host. Its coroutines run on one ``LoopThread``."""

    def __init__(self, host: KernelHost) -> None:
        self.host = host

    def _request(
        self, url: str, method: str = "GET", body: Any = None, bound: float = CALL_SECS
    ) -> HTTPRequest:
        headers = {"Authorization": f"token {self.host.token}"}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = orjson.dumps(body)
        return HTTPRequest(
            url,
            method=method,
            headers=headers,
            body=data,
            connect_timeout=min(bound, CALL_SECS),
            request_timeout=bound,
            ca_certs=self.host.ca_file,
            validate_cert=True,
            follow_redirects=False,
        )

    async def _call(
        self, what: str, path: str, method: str = "GET", body: Any = None, bound: float = CALL_SECS
    ) -> Any:
        request = self._request(self.host.url + path, method, body, bound)
        try:
            response = await asyncio.wait_for(
                AsyncHTTPClient().fetch(request, raise_error=False), bound + 1.0
            )
        except Exception as exc:
            raise _failure(self.host, what, exc) from None
        if response.code in (401, 403):
            raise GatewayError(
                f"kernel host {self.host.name!r} ({self.host.url}): {what} was refused "
                f"(HTTP {response.code}): check its token or token_file in config.toml"
            )
        if response.code == 599 and response.error is not None:
            raise _failure(self.host, what, response.error)
        if not 200 <= response.code < 300:
            said = _said(response.body)
            raise GatewayError(
                f"kernel host {self.host.name!r} ({self.host.url}): {what} failed "
                f"(HTTP {response.code}{': ' + said if said else ''})"
            )
        return orjson.loads(response.body) if response.body else None

    async def version(self) -> str:
        """The gateway's version: a cheap call that proves it answers, with this token.
        (Listing its kernels would be refused: a gateway lists them only when started
        with ``--KernelGatewayApp.list_kernels=True``.)"""
        said = await self._call("asking its version", "/api")
        return str(said.get("version", "")) if isinstance(said, dict) else ""

    async def start_kernel(self, kernel_name: str) -> str:
        """Start a kernel of ``kernel_name``; its id."""
        started = await self._call(
            f"starting a {kernel_name!r} kernel",
            "/api/kernels",
            "POST",
            {"name": kernel_name},
            START_SECS,
        )
        if not isinstance(started, dict) or not isinstance(started.get("id"), str):
            raise GatewayError(f"kernel host {self.host.name!r}: a start answered no kernel id")
        return started["id"]

    def _kernel(self, kernel_id: str) -> str:
        return f"/api/kernels/{quote(kernel_id, safe='')}"

    async def interrupt(self, kernel_id: str) -> None:
        await self._call("interrupting", self._kernel(kernel_id) + "/interrupt", "POST", {})

    async def restart(self, kernel_id: str) -> None:
        path = self._kernel(kernel_id) + "/restart"
        await self._call("restarting", path, "POST", {}, START_SECS)

    async def shutdown(self, kernel_id: str) -> None:
        await self._call("shutting down", self._kernel(kernel_id), "DELETE")

    async def channels(
        self, kernel_id: str, session_id: str, bound: float = CALL_SECS
    ) -> gateway_keepalive.KeptAlive:
        """The kernel's channels websocket, in Jupyter's JSON protocol (no subprotocol),
        opened within ``bound`` seconds; the caller runs its keepalive."""
        base = "ws" + self.host.url[len("http") :]
        url = f"{base}{self._kernel(kernel_id)}/channels?session_id={quote(session_id)}"
        request = self._request(url, bound=bound)
        try:
            ws = await asyncio.wait_for(
                gateway_keepalive.connect(request, MAX_MESSAGE_BYTES), bound
            )
        except HTTPClientError as exc:
            if exc.code in (401, 403):
                raise GatewayError(
                    f"kernel host {self.host.name!r} ({self.host.url}): the kernel's channels "
                    f"were refused (HTTP {exc.code}): check its token"
                ) from None
            raise _failure(self.host, "opening the kernel's channels", exc) from None
        except Exception as exc:
            raise _failure(self.host, "opening the kernel's channels", exc) from None
        if ws.protocol is None:
            raise GatewayError(
                f"kernel host {self.host.name!r} ({self.host.url}): the kernel's channels "
                "closed as they opened"
            )
        gateway_quickack.tune(ws.protocol.stream)
        return ws


def _said(body: bytes | None) -> str:
    """The ``message`` or ``reason`` of a gateway's JSON error body, shortened."""
    try:
        parsed = orjson.loads(body or b"")
    except orjson.JSONDecodeError:
        return ""
    if not isinstance(parsed, dict):
        return ""
    said = parsed.get("message") or parsed.get("reason") or ""
    return str(said)[:300]
