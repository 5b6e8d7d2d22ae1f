"""The operator's console, `nbstage admin`."""
