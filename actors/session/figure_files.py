"""Images that tool results attach, also written as files for clients that drop image content.

Codex hands its model only a result's structuredContent when there is one, so an image
sent as MCP image content never reaches a Codex agent; Codex's own ``view_image`` tool
shows a local file instead. Each attached PNG or JPEG is therefore also written to
``figures/`` in the state dir (0700), as a 0600 file named by its content, and the
result's structured part names the file. The folder keeps the newest ``figure_files``
files (a setting); writing one more removes the oldest.

``figure_path`` is pure and used when rendering; ``write_figures`` is blocking work that
runs on the session child's worker threads before the result goes out.
"""

from __future__ import annotations

import base64
import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from nbstage.protocol.common.safe_files import write_private

FOLDER: Final = "figures"
EXTENSIONS: Final = {"image/png": ".png", "image/jpeg": ".jpg"}


def figure_path(folder: str, encoded: str, mime: str) -> str:
    """Where the image whose base64 is ``encoded`` is written: the same image, the same file."""
    # hashlib loads OpenSSL's libcrypto, about 3.6 MB that an idle session child does not
    # need (entrypoints/common/lean.py); it comes in with the first image.
    import hashlib

    digest = hashlib.sha256(encoded.encode("ascii", "replace")).hexdigest()[:32]
    return os.path.join(folder, digest + EXTENSIONS.get(mime, ".bin"))


def images_in(result: dict) -> list[tuple[str, str]]:
    """(base64, MIME type) of each image content item of an MCP tool result."""
    return [
        (item["data"], item.get("mimeType", ""))
        for item in result.get("content", ())
        if item.get("type") == "image" and isinstance(item.get("data"), str)
    ]


def write_figures(folder: str, images: Iterable[tuple[str, str]], keep: int) -> None:
    """Write each image to its file unless it is there already (then mark it as new), and
    remove the oldest files beyond ``keep``."""
    root = Path(folder)
    root.mkdir(mode=0o700, exist_ok=True)
    for encoded, mime in images:
        path = Path(figure_path(folder, encoded, mime))
        if path.exists():
            os.utime(path)
            continue
        write_private(path, base64.b64decode(encoded))
    _trim(root, keep)


def _trim(root: Path, keep: int) -> None:
    files = []
    for entry in os.scandir(root):
        if entry.is_file() and not entry.name.startswith("."):
            with contextlib.suppress(OSError):
                files.append((entry.stat().st_mtime_ns, entry.path))
    files.sort()
    for _, path in files[: max(0, len(files) - keep)]:
        with contextlib.suppress(OSError):
            os.unlink(path)


def without_files(result: dict) -> dict:
    """``result`` with no figure file named in its structured part (the write failed)."""
    structured = result.get("structuredContent")
    if structured is None:
        return result
    return {**result, "structuredContent": _drop_file(structured)}


def _drop_file(value: object) -> object:
    if isinstance(value, list):
        return [_drop_file(v) for v in value]
    if not isinstance(value, dict):
        return value
    return {k: _drop_file(v) for k, v in value.items() if not (k == "file" and "attached" in value)}
