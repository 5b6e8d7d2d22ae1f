"""`nbstage harness SCRIPT.toml`: scripted multi-client runs against real processes."""
