"""Actors of the session child: the SessionManager and the WatchLoop, the session model as
pure decisions, the tool handlers, and how daemon data is rendered as MCP content."""
