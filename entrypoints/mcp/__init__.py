"""The `nbstage mcp` process: its own lean process image and its stdio edge."""
