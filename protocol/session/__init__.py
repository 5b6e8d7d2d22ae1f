"""Conversations of one MCP client's processes: `nbstage mcp` and its session child,
the SessionManager and the WatchLoop, and their timers."""
