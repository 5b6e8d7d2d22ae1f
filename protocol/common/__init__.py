"""What every conversation shares: the frozen dataclass, the wire codec, error codes,
settings, safe file opening, path and label checks, and offloaded-work messages."""
