"""What a MIME type says about how nbformat stores its value."""

from __future__ import annotations


def is_json_mime(mime: str) -> bool:
    """Whether ``mime``'s value is JSON, kept as it is: a list there is a JSON array, not
    a multiline string to join."""
    return mime == "application/json" or mime.endswith("+json")
