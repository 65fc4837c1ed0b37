"""Typed dependency aliases so route signatures stay short."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from api.orchestrators.query import QueryOrchestrator
from api.services import Services
from api.settings import Settings
from api.tools.retrieval import HybridRetriever


def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def get_settings(request: Request) -> Settings:
    return get_services(request).settings


def get_orchestrator(request: Request) -> QueryOrchestrator:
    return get_services(request).orchestrator


def get_retriever(request: Request) -> HybridRetriever:
    return get_services(request).orchestrator.deps.retriever


ServicesDep = Annotated[Services, Depends(get_services)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
Orchestrator = Annotated[QueryOrchestrator, Depends(get_orchestrator)]
Retriever = Annotated[HybridRetriever, Depends(get_retriever)]
