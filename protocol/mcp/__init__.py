"""What an MCP client sees: JSON-RPC framing, the MCP lifecycle, the tool catalogue with
its names and output schemas."""
