"""Actors of the `nbstage mcp` process: the ProxySupervisor, which keeps one MCP client's
connection alive across session-child restarts, and its pure restart decisions."""
