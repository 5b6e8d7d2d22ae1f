"""Images built by hand, and a check that no base64 leaks into a tool result.

The builders use nothing but the standard library and import what they need inside, so
the e2e tests send their source (``BUILDERS_SOURCE``) to a kernel and build the very same
bytes there that the test builds here. No Pillow, no network.
"""

from __future__ import annotations

import inspect
import re
from typing import Any


def png_bytes(width: int, height: int, seed: int | None = None) -> bytes:
    """A valid 8-bit RGB PNG: black, or seeded random pixels (which do not compress)."""
    import random
    import struct
    import zlib

    row = 3 * width
    size = row * height
    pixels = bytes(size) if seed is None else random.Random(seed).randbytes(size)
    raw = b"".join(b"\0" + pixels[y * row : (y + 1) * row] for y in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def jpeg_bytes(width: int, height: int, app_padding: int = 0) -> bytes:
    """A valid baseline greyscale JPEG, mid-grey all over.

    Every 8x8 block has a DC difference of 0 and no AC terms, so with one-code Huffman
    tables each block is two 0 bits. ``app_padding`` bytes of an APP1 segment come
    before the frame header (as EXIF data would), at most 65,533.
    """
    import struct

    def segment(marker: int, body: bytes) -> bytes:
        return struct.pack(">BBH", 0xFF, marker, len(body) + 2) + body

    one_code = bytes([1] + [0] * 15) + b"\x00"  # one code of length 1, for symbol 0
    blocks = -(-width // 8) * -(-height // 8)
    bits = "00" * blocks
    bits += "1" * (-len(bits) % 8)
    scan = bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))
    parts = [
        b"\xff\xd8",
        segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"),
        segment(0xE1, bytes(app_padding)) if app_padding else b"",
        segment(0xDB, b"\x00" + bytes([1] * 64)),
        segment(0xC0, struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00"),
        segment(0xC4, b"\x00" + one_code),
        segment(0xC4, b"\x10" + one_code),
        segment(0xDA, b"\x01\x01\x00\x00\x3f\x00"),
        scan,
        b"\xff\xd9",
    ]
    return b"".join(parts)


def svg_text(width: int, height: int, embedded_png: bytes = b"") -> str:
    """An SVG of a rectangle, with ``embedded_png`` as a data URI image when given.

    Plotting libraries embed rasters like this, so an SVG's markup can carry base64 too.
    """
    import base64

    image = ""
    if embedded_png:
        uri = "data:image/png;base64," + base64.b64encode(embedded_png).decode()
        image = f'<image width="{width}" height="{height}" href="{uri}"/>'
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">'
        f'<rect width="{width}" height="{height}" fill="teal"/>{image}</svg>'
    )


BUILDERS_SOURCE = "\n\n".join(inspect.getsource(f) for f in (png_bytes, jpeg_bytes, svg_text))
"""The builders as source, to define them in a kernel: ``from __future__`` is not needed."""

BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{201,}")
"""More than 200 characters of the base64 alphabet in a row: a payload, not prose."""


def base64_runs(value: Any) -> list[str]:
    """The start of every base64 run over 200 characters in a JSON value, keys included."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found += [match.group()[:60] + "…" for match in BASE64_RUN.finditer(item)]
        elif isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, list | tuple):
            stack += item
    return found
