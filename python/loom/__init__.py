"""loom: Python helpers for the loom resource manager (ctypes bindings to libloom)."""
