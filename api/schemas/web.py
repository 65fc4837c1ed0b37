"""What the web app asks of the service besides queries: its public configuration and the dev sign-in."""

from __future__ import annotations

from pydantic import BaseModel, Field


class FirebaseConfig(BaseModel):
    """Public values only: a Firebase web API key identifies the project, it is not a secret."""

    api_key: str
    auth_domain: str = ""
    project_id: str = ""
    auth_url: str
    token_url: str


class WebConfig(BaseModel):
    auth_required: bool
    firebase: FirebaseConfig | None = None
    dev_signin: bool = Field(description="Whether POST /api/v1/web/dev-token is open (a dev secret is configured).")
    public_url: str = ""


class DevSignIn(BaseModel):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._@-]+$")
    passphrase: str = Field(min_length=1, max_length=256)


class TokenGrant(BaseModel):
    access_token: str
    token_type: str = "Bearer"
    expires_in: int
