"""The CLI's side of the daemon: starting it (also `nbstage mcp`'s autostart), stopping
it, and the blocking client the CLI, the console and the harness use."""
