"""nbstage's version, in one place: setup.cfg reads it, and the processes report it
without loading importlib.metadata (which costs an `nbstage mcp` about 1.5 MB)."""

VERSION = "0.1.0"
