"""HTTP: the JSON API, the signed push endpoint and the web wiki (FastAPI, server-rendered)."""

from teamlore.web.app import create_app

__all__ = ["create_app"]
