"""A package index on 127.0.0.1 that serves one wheel slowly, for tests that need a uv
build to last a while.

Point uv at it with ``UV_INDEX=<url>`` (uv 0.13 reads ``UV_INDEX`` as ``--index``). The
index answers 404 for every other project, and with uv's default index strategy
(``first-index``) a project the first index does not have is looked up on the default
index, PyPI, so the wheel's neighbours in an install still resolve as usual.

Give each test its own distribution name (``nbstage-slow-`` and random hex, say): uv caches
wheels by name and version, and a cached one would not be downloaded, slowly, again.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import http.server
import os
import re
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

PADDING_BYTES = 1 << 20
CHUNKS = 64


def normalise(name: str) -> str:
    """A project's name as PEP 503 spells it in an index's URLs."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def build_wheel(folder: Path, name: str, version: str = "1.0") -> Path:
    """A pure-Python wheel of ``name`` with one module, ``VALUE = 1``, padded with about a
    megabyte of random bytes, written into ``folder``."""
    stem = re.sub(r"[-_.]+", "_", name).lower()
    dist_info = f"{stem}-{version}.dist-info"
    files = {
        f"{name.replace('-', '_')}.py": b"VALUE = 1\n",
        f"{dist_info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
        ),
        f"{dist_info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: nbstage-tests\n"
            b"Root-Is-Purelib: true\nTag: py3-none-any\n"
        ),
        f"{dist_info}/padding.bin": os.urandom(PADDING_BYTES),
    }
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    files[f"{dist_info}/RECORD"] = f"{record}{dist_info}/RECORD,,\n".encode()
    wheel = folder / f"{stem}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def _handler(
    project: str, wheel: bytes, filename: str, seconds: float
) -> type[http.server.BaseHTTPRequestHandler]:
    sha256 = hashlib.sha256(wheel).hexdigest()
    page = (
        "<!DOCTYPE html><html><body>"
        f'<a href="/files/{html.escape(filename)}#sha256={sha256}">{html.escape(filename)}</a>'
        "</body></html>\n"
    ).encode()

    class SlowIndex(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._answer(body=True)

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def _answer(self, *, body: bool) -> None:
            path = self.path.split("?", 1)[0]
            if path in (f"/simple/{project}/", f"/simple/{project}"):
                self._headers(len(page), "text/html")
                if body:
                    self.wfile.write(page)
            elif path == f"/files/{filename}":
                self._headers(len(wheel), "application/octet-stream")
                if body:
                    self._trickle()
            else:
                self.send_error(404)

        def _headers(self, length: int, content_type: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(length))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()

        def _trickle(self) -> None:
            size = -(-len(wheel) // CHUNKS)
            offsets = range(0, len(wheel), size)
            start = time.monotonic()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                for index, offset in enumerate(offsets, start=1):
                    due = start + seconds * index / len(offsets)
                    time.sleep(max(0.0, due - time.monotonic()))
                    self.wfile.write(wheel[offset : offset + size])
                    self.wfile.flush()

        def log_message(self, format: str, *args: object) -> None:
            pass

    return SlowIndex


@contextlib.contextmanager
def slow_index(tmp: Path, name: str, seconds: float) -> Iterator[str]:
    """Serve a wheel of ``name`` 1.0 whose download takes ``seconds``; yields the index's
    URL (``http://127.0.0.1:PORT/simple``) and stops serving on exit."""
    tmp.mkdir(parents=True, exist_ok=True)
    wheel = build_wheel(tmp, name)
    handler = _handler(normalise(name), wheel.read_bytes(), wheel.name, seconds)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="slow-index", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
