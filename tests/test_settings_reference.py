"""The configuration reference is generated from the Settings models: every setting must say what it does."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from api import settings_reference
from api.settings import Settings

ROOT = Path(__file__).resolve().parent.parent


def test_every_setting_has_a_description() -> None:
    assert settings_reference.undocumented() == []


def test_a_setting_without_a_description_is_reported() -> None:
    class Section(BaseModel):
        said: int = Field(1, description="Says what it does.")
        unsaid: int = 2

    class Top(BaseModel):
        plain: str = ""
        section: Section = Section()

    assert settings_reference.undocumented(Top) == ["GWETA_PLAIN", "GWETA_SECTION__UNSAID"]


def test_each_variable_named_is_the_one_settings_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Setting a row's variable changes the field the row documents (for the plain-valued ones)."""
    rows = settings_reference.rows()
    assert len(rows) > 150 and len({r.env for r in rows}) == len(rows)
    checked = 0
    for row in rows:
        path = row.env.removeprefix("GWETA_").lower().split("__")
        if row.type == "int" and row.default.isdigit() and int(row.default) >= 1:
            value: object = int(row.default) + 1
        elif row.type == "bool":
            value = row.default != "true"
        else:
            continue
        monkeypatch.setenv(row.env, str(value).lower() if isinstance(value, bool) else str(value))
        try:
            loaded = Settings()
        except ValueError:  # a bound (le=...) or a cross-field rule refuses the changed value: not this test's point
            monkeypatch.delenv(row.env)
            continue
        node: object = loaded
        for part in path:
            node = getattr(node, part)
        assert node == value, row.env
        monkeypatch.delenv(row.env)
        checked += 1
    assert checked > 40


def test_the_configuration_page_is_generated_from_the_models() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "scripts" / "mkdocs_hooks.py")
    assert spec and spec.loader
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    source = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert hooks.MARKER in source
    page = hooks.on_page_markdown(source, None, None, None)
    assert hooks.MARKER not in page
    for row in settings_reference.rows():
        assert f"`{row.env}`" in page
    assert "Where the graph's per-session state is saved" in page  # a description, as written in api/settings.py
