"""Stores: a Protocol per seam, an embedded implementation (and server ones as they land)."""
