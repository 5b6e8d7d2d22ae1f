"""Structured logs: one JSON object per line, to stderr and to the state dir's logs/."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import orjson


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


def setup_logging(logs_dir: Path, name: str, level: int = logging.INFO) -> None:
    """Send this process's logs to stderr and to ``logs/<name>.log``; never to stdout."""
    logs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    formatter = JsonFormatter()
    root = logging.getLogger()
    root.handlers.clear()
    for handler in (
        logging.StreamHandler(sys.stderr),
        logging.FileHandler(logs_dir / f"{name}.log"),
    ):
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.setLevel(level)
    logging.Formatter.converter = time.gmtime
