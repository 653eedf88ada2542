"""Server-side stores on Redis: the durable dirty set (AOF on in production)."""
