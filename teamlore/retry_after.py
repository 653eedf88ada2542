"""How long a server asked us to wait: one reading of ``Retry-After`` for every HTTP client
(the model endpoint, Slack, Discord, Microsoft Graph)."""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from datetime import UTC, datetime


def retry_after(headers: Mapping[str, object]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), header names
    in any case; None when the server said nothing usable."""
    lowered = {str(k).lower(): (v[0] if isinstance(v, list) and v else v) for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis:
        try:
            return max(float(str(millis)) / 1000, 0.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(float(str(value)), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)
