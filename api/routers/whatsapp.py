"""The WhatsApp Cloud API webhook: Meta's verification handshake, and signed message notifications."""

from __future__ import annotations

import hmac
import logging
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import PlainTextResponse
from pydantic import ValidationError

from api.deps import SettingsDep
from api.errors import BadRequestError, ForbiddenError, GwetaError, NotFoundError
from api.schemas.errors import error_responses
from api.schemas.whatsapp import Notification
from api.tools.whatsapp import WhatsAppBot, verify_signature

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api/v1/whatsapp", tags=["whatsapp"])
MAX_BODY = 1_000_000


def get_bot(request: Request) -> WhatsAppBot:
    bot: WhatsAppBot | None = request.app.state.whatsapp
    if bot is None:
        raise NotFoundError("Not Found")
    return bot


Bot = Annotated[WhatsAppBot, Depends(get_bot)]


@router.get("/webhook", response_class=PlainTextResponse, responses=error_responses(403, 404, 422))
async def handshake(
    bot: Bot,
    mode: Annotated[str, Query(alias="hub.mode")] = "",
    token: Annotated[str, Query(alias="hub.verify_token")] = "",
    challenge: Annotated[str, Query(alias="hub.challenge", max_length=256)] = "",
) -> str:
    """Meta's subscription check: echo the challenge when the verify token is ours."""
    expected = bot.cfg.verify_token.get_secret_value().encode()
    if mode != "subscribe" or not hmac.compare_digest(token.encode(), expected):
        log.warning("whatsapp: webhook verification refused (mode=%r)", mode)
        raise ForbiddenError("the verify token does not match")
    return challenge


@router.post("/webhook", responses=error_responses(400, 401, 403, 404, 413, 422))
async def notify(request: Request, bot: Bot, settings: SettingsDep) -> dict[str, int | str]:
    """Verify the signature over the raw body, schedule the answers, and acknowledge at once."""
    body = await request.body()
    try:
        if len(body) > MAX_BODY:
            raise BadRequestError("the notification is too large")
        verify_signature(body, request.headers.get("x-hub-signature-256"), bot.cfg.app_secret.get_secret_value())
    except GwetaError as exc:
        client = request.client.host if request.client else "?"
        log.warning("whatsapp: webhook refused from %s: %s", client, exc.message)
        raise
    try:
        notification = Notification.model_validate_json(body)
    except ValidationError:
        log.warning("whatsapp: a signed notification had an unexpected shape")
        raise BadRequestError("the notification is not a WhatsApp webhook payload") from None
    if notification.object != "whatsapp_business_account":
        return {"status": "ignored", "scheduled": 0}
    scheduled = await bot.accept(notification.messages(settings.whatsapp.phone_number_id))
    return {"status": "accepted", "scheduled": scheduled}
