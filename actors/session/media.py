"""Images, audio, video and other binary MIME values, as the tools show them.

PNG and JPEG images up to 1 MiB become MCP image content, each sent once; base64 never
appears in text or in structured values. Wherever an image (SVG included) or other
binary data would be shown, a description stands in for it (its kind, width and height,
size, and whether and how it was sent); larger images are described instead of sent.
"""

from __future__ import annotations

import binascii
import struct
from collections.abc import Callable, Mapping
from typing import Any, Final

from nbstage.actors.session.figure_files import figure_path
from nbstage.actors.session.text_forms import data_size, joined
from nbstage.protocol.common.frozen import frozen
from nbstage.protocol.common.words import plural
from nbstage.protocol.mcp.tool_results import image_content, text_content

IMAGE_LIMIT: Final = 1 << 20
SENT_IMAGE_MIMES: Final = ("image/png", "image/jpeg")
MEDIA_PREFIXES: Final = ("image/", "audio/", "video/")
BINARY_APPLICATION_MIMES: Final = ("application/pdf", "application/octet-stream")
"""Besides images, audio and video: MIME types whose nbformat value is base64, never shown."""

TIMES: Final = "\N{MULTIPLICATION SIGN}"
"""What joins an image's width and height in its description."""
SENT: Final = "sent as image content"
TOO_LARGE: Final = (
    "too large to send (over 1 MiB); to see it, display a smaller version, "
    "or write it to a file from the kernel"
)
NOT_SENT: Final = "not sent; only PNG and JPEG go out as image content"

_HEADER_BASE64_CHARS: Final = 256 * 1024
"""How much of an image's base64 is decoded to find its dimensions (192 KiB of bytes)."""
_PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
_JPEG_SOF_MARKERS: Final = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_JPEG_STANDALONE_MARKERS: Final = frozenset({0x01, 0xD8, *range(0xD0, 0xD8)})


@frozen
class Media:
    """An image, audio, video or other binary MIME value, as the tools show it.

    ``encoded`` is the base64 to send as MCP image content, set only for a PNG or JPEG of
    at most 1 MiB; everything else is described and never sent.
    """

    mime: str
    size: int
    dimensions: tuple[int, int] | None = None
    encoded: str | None = None

    def describe(self, figures: str | None = None) -> str:
        """What stands in for the value in JSON: ``<image 4x4, 93 bytes: sent as image content>``.

        The dimensions, when they could be read, are joined by U+00D7 (TIMES), not an x.
        With ``figures``, the figure folder, a sent image also names the file it is
        written to: ``<image 4x4, 93 bytes: sent as image content; file /…/figures/….png>``.
        """
        file = ""
        if figures is not None and self.encoded is not None:
            file = f"; file {figure_path(figures, self.encoded, self.mime)}"
        return f"<{self._kind()}{self._facts()}{file}>"

    def note(self) -> str:
        """The description in text, naming the MIME type: ``[image/png 4x4, 93 bytes: …]``."""
        return f"[{self.mime}{self._facts()}]"

    def _facts(self) -> str:
        if self.encoded is not None:
            fate = SENT
        elif self.mime in SENT_IMAGE_MIMES:
            fate = TOO_LARGE
        else:
            fate = NOT_SENT
        dimensions = f" {self.dimensions[0]}{TIMES}{self.dimensions[1]}" if self.dimensions else ""
        return f"{dimensions}, {plural(self.size, 'byte')}: {fate}"

    def shown(self, figures: str | None = None) -> dict[str, Any]:
        """The image in a structured output: its type, size and dimensions, whether it is
        attached as image content and, if so and ``figures`` is the figure folder, the file
        it is also written to; if not attached, why not."""
        shown: dict[str, Any] = {"mime_type": self.mime, "bytes": self.size}
        if self.dimensions:
            shown["width"], shown["height"] = self.dimensions
        shown["attached"] = self.encoded is not None
        if self.encoded is None:
            shown["note"] = TOO_LARGE if self.mime in SENT_IMAGE_MIMES else NOT_SENT
        elif figures is not None:
            shown["file"] = figure_path(figures, self.encoded, self.mime)
        return shown

    def item(self) -> dict[str, Any]:
        """The MCP content item: the image itself when it is sent, else its note as text."""
        if self.encoded is not None:
            return image_content(self.encoded, self.mime)
        return text_content(self.note())

    def _kind(self) -> str:
        if self.mime == "image/svg+xml":
            return "SVG"
        top = self.mime.partition("/")[0]
        return top if top in ("image", "audio", "video") else "data"


def is_media_mime(mime: str) -> bool:
    """Whether ``mime``'s value is an image (SVG included) or binary data, never shown as is."""
    return mime.startswith(MEDIA_PREFIXES) or mime in BINARY_APPLICATION_MIMES


def media_of(mime: str, value: Any) -> Media | None:
    """``value`` under ``mime`` as Media (size, dimensions, what to send); None if not media.

    Base64 values are measured by their decoded size and, for images, their dimensions are
    read from the first bytes; SVG and other XML images are text, measured in UTF-8.
    """
    if not is_media_mime(mime):
        return None
    if not _is_base64_mime(mime):
        return Media(mime, data_size(mime, value))
    encoded = _base64_of(value)
    size = _decoded_size(encoded)
    dimensions = image_dimensions(_decoded_head(encoded)) if mime.startswith("image/") else None
    sent = mime in SENT_IMAGE_MIMES and size <= IMAGE_LIMIT
    return Media(mime, size, dimensions, encoded if sent else None)


def media_in(data: Mapping[str, Any]) -> dict[str, Media]:
    """The media values of a MIME bundle by MIME type, in the bundle's order."""
    found = {}
    for mime, value in data.items():
        media = media_of(mime, value)
        if media is not None:
            found[mime] = media
    return found


def described_data(
    data: Mapping[str, Any],
    media: Mapping[str, Media],
    value_of: Callable[[str, Any], Any],
    figures: str | None = None,
) -> dict:
    """``data`` with each media value's description in its place, others via ``value_of``."""
    return {
        mime: media[mime].describe(figures) if mime in media else value_of(mime, value)
        for mime, value in data.items()
    }


def image_dimensions(head: bytes) -> tuple[int, int] | None:
    """(width, height) from the first bytes of a PNG, JPEG or GIF file; None if unreadable.

    PNG and GIF keep them at fixed offsets; a JPEG's are in its first SOF segment, found by
    walking the segments before it, so ``head`` must reach that far.
    """
    if head.startswith(_PNG_SIGNATURE) and head[12:16] == b"IHDR" and len(head) >= 24:
        width, height = struct.unpack(">II", head[16:24])
    elif head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        width, height = struct.unpack("<HH", head[6:10])
    elif head.startswith(b"\xff\xd8"):
        found = _jpeg_dimensions(head)
        if found is None:
            return None
        width, height = found
    else:
        return None
    return (width, height) if width and height else None


def _is_base64_mime(mime: str) -> bool:
    if mime in BINARY_APPLICATION_MIMES:
        return True
    return mime.startswith(MEDIA_PREFIXES) and not mime.endswith(("+xml", "json"))


def _base64_of(value: Any) -> str:
    encoded = joined(value)
    if "\n" in encoded or "\r" in encoded or " " in encoded:
        encoded = "".join(encoded.split())
    return encoded


def _decoded_size(encoded: str) -> int:
    padding = 2 if encoded.endswith("==") else 1 if encoded.endswith("=") else 0
    return len(encoded) * 3 // 4 - padding


def _decoded_head(encoded: str) -> bytes:
    """The first bytes that base64 ``encoded`` stands for; b"" if they do not decode."""
    head = encoded[:_HEADER_BASE64_CHARS]
    head = head[: len(head) - len(head) % 4]
    try:
        return binascii.a2b_base64(head)
    except binascii.Error:
        return b""


def _jpeg_dimensions(head: bytes) -> tuple[int, int] | None:
    """(width, height) from the first SOF segment of a JPEG; None before it or if malformed."""
    at = 2
    while at + 4 <= len(head):
        if head[at] != 0xFF:
            return None
        marker = head[at + 1]
        if marker == 0xFF:
            at += 1
        elif marker in _JPEG_STANDALONE_MARKERS:
            at += 2
        elif marker in (0xD9, 0xDA):
            return None
        elif marker in _JPEG_SOF_MARKERS:
            if at + 9 > len(head):
                return None
            height, width = struct.unpack(">HH", head[at + 5 : at + 9])
            return width, height
        else:
            (length,) = struct.unpack(">H", head[at + 2 : at + 4])
            if length < 2:
                return None
            at += 2 + length
    return None
