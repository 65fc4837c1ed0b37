"""The configuration reference, read from the ``Settings`` models themselves.

Every field of :class:`api.settings.Settings` (nested sections included) becomes one row: the environment variable
that sets it, its type, its default and its ``description``. The documentation site renders these rows, so the
reference cannot drift from the code; a field without a description is reported by :func:`undocumented`.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from api.settings import Settings

ENV_PREFIX = "GWETA_"
NESTED = "__"


@dataclass(frozen=True, slots=True)
class SettingRow:
    """One setting: where it lives and what it does."""

    section: str  # "" for a top-level setting
    env: str
    type: str
    default: str
    description: str


def _section_model(info: FieldInfo) -> type[BaseModel] | None:
    ann = info.annotation
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    return None


def _type_name(ann: Any) -> str:
    origin = typing.get_origin(ann)
    if origin is typing.Literal:
        return " | ".join(json.dumps(a) if isinstance(a, str) else str(a) for a in typing.get_args(ann))
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(ann))
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(ann))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if ann is type(None):
        return "None"
    if ann is SecretStr:
        return "secret"
    return getattr(ann, "__name__", str(ann))


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        value: Any = info.default_factory()  # type: ignore[call-arg]
    elif info.default is PydanticUndefined:
        return "(required)"
    else:
        value = info.default
    if isinstance(value, SecretStr):
        return "(set)" if value.get_secret_value() else ""
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value) if value else ""
    return str(value)


def _walk(model: type[BaseModel], section: str, prefix: str) -> Iterator[tuple[str, str, FieldInfo]]:
    for name, info in model.model_fields.items():
        nested = _section_model(info)
        if nested is not None:
            yield from _walk(nested, name, f"{prefix}{name.upper()}{NESTED}")
        else:
            yield section, f"{prefix}{name.upper()}", info


def rows(model: type[BaseModel] = Settings) -> list[SettingRow]:
    """Every leaf setting of ``model``, top-level ones first, then each section in declaration order."""
    out = [
        SettingRow(section, env, _type_name(info.annotation), _default(info), (info.description or "").strip())
        for section, env, info in _walk(model, "", ENV_PREFIX)
    ]
    return sorted(out, key=lambda r: r.section != "")  # stable: keeps declaration order within each group


def undocumented(model: type[BaseModel] = Settings) -> list[str]:
    """The environment variables of settings that have no description."""
    return [row.env for row in rows(model) if not row.description]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def markdown(model: type[BaseModel] = Settings) -> str:
    """The reference as Markdown: one table per section, each row a setting."""
    parts: list[str] = []
    current: str | None = None
    for row in rows(model):
        if row.section != current:
            current = row.section
            title = f"`{current}`" if current else "Top level"
            parts.append(f"\n### {title}\n\n| variable | type | default | what it does |\n| --- | --- | --- | --- |")
        default = f"`{_cell(row.default)}`" if row.default else ""
        parts.append(f"| `{row.env}` | {_cell(row.type)} | {default} | {_cell(row.description)} |")
    return "\n".join(parts).lstrip("\n") + "\n"
