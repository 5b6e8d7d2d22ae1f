"""The daemon process: its socket edge and its liveness stamp."""
