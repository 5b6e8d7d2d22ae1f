"""Where a kernel's Python comes from, in the daemon: the pool and inline environments,
projects and their approval, and the uv runs that build them."""
