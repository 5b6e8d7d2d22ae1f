"""Structured logs: one JSON object per line, to stderr and to the state dir's logs/."""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

import orjson

from nbstage.protocol.common.safe_files import open_private


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry).decode()


class PrivateFileHandler(logging.FileHandler):
    """Appends to a log file that is this user's alone (0600, whatever the umask); a link
    or a FIFO in its place is refused instead of followed or waited on."""

    def _open(self):
        fd = open_private(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        return open(fd, "a", encoding=self.encoding, errors=self.errors)


def setup_logging(logs_dir: Path, name: str, level: int = logging.INFO) -> None:
    """Send this process's logs to stderr and to ``logs/<name>.log``; never to stdout."""
    logs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    formatter = JsonFormatter()
    root = logging.getLogger()
    root.handlers.clear()
    for handler in (
        logging.StreamHandler(sys.stderr),
        PrivateFileHandler(logs_dir / f"{name}.log"),
    ):
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.setLevel(level)
    logging.Formatter.converter = time.gmtime
