"""The conversation over the daemon's Unix socket: frames, requests, replies and the
notices that travel with them."""
