"""Typed dependency aliases so route signatures stay short."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from api.orchestrators.query import Asker
from api.services import Services
from api.settings import Settings


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def get_settings(request: Request) -> Settings:
    return get_services(request).settings


def get_orchestrator(request: Request) -> Asker:
    return get_services(request).asker


ServicesDep = Annotated[Services, Depends(get_services)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
Orchestrator = Annotated[Asker, Depends(get_orchestrator)]
