"""The session child process: its main module, its edge, and the tests' fault point."""
