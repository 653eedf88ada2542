"""Pipeline stages (pure of transport) and, in production, the Celery tasks that wrap them."""
