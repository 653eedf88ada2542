"""A Microsoft Graph token for the app itself (client credentials), for every Graph caller: the
Teams connector's history and the fetch of files shared in Teams."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from teamlore.errors import BackendUnavailable

TokenProvider = Callable[[], str]


def client_credentials_token(tenant_id: str, client_id: str, client_secret: str) -> TokenProvider:
    """A Graph token, cached and renewed by MSAL; the MSAL app is made on the first call, so
    building a provider neither imports MSAL nor reaches the sign-in service."""
    made: list[Any] = []

    def token() -> str:
        if not made:
            import msal  # installed with the Agents SDK's MSAL authentication

            authority = f"https://login.microsoftonline.com/{tenant_id}"
            made.append(
                msal.ConfidentialClientApplication(
                    client_id, client_credential=client_secret, authority=authority
                )
            )
        result = made[0].acquire_token_for_client(scopes=["https://graph.microsoft.com/.default"])
        if "access_token" not in result:
            raise BackendUnavailable(
                f"no Graph token: {result.get('error_description') or result.get('error')}"
            )
        return str(result["access_token"])

    return token
