"""One package per paper; each exposes the functions its workflow rules call."""
