"""Typed dependency aliases so route signatures stay short."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from api.orchestrators.query import QueryOrchestrator
from api.services import Services
from api.settings import Settings


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def get_settings(request: Request) -> Settings:
    return get_services(request).settings


def get_orchestrator(request: Request) -> QueryOrchestrator:
    return get_services(request).orchestrator


ServicesDep = Annotated[Services, Depends(get_services)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
Orchestrator = Annotated[QueryOrchestrator, Depends(get_orchestrator)]
