import re
from pathlib import Path

import pytest

from api.composer.skills import SKILLS_DIR, load_skills, parse_skill
from api.errors import ConfigError


def test_every_skill_renders_with_its_declared_variables() -> None:
    skills = load_skills()
    assert set(skills) >= {"synthesize"}
    for skill in skills.values():
        values = {name: f"<{name}-value>" for name in skill.variables}
        system, user = skill.render(**values)
        assert system and user
        rendered = system + user
        for name in skill.variables:
            assert f"<{name}-value>" in rendered
        # A doubled-brace typo ({{question}}) would render as a literal "{question}": the model would see no question.
        assert not re.search(r"\{\w+\}", rendered)


def test_rendering_with_a_missing_variable_is_refused() -> None:
    skill = load_skills()["synthesize"]
    with pytest.raises(ConfigError, match="takes"):
        skill.render(question="q")


def test_a_skill_using_an_undeclared_variable_is_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "bad.md"
    bad.write_text("---\nname: bad\nvariables: [question]\n---\n## System\nhi {secret}\n## User\n{question}\n")
    with pytest.raises(ConfigError, match="declares"):
        parse_skill(bad)


def test_skills_dir_is_the_repository_folder() -> None:
    assert SKILLS_DIR.name == "skills" and (SKILLS_DIR / "synthesize.md").exists()


def test_a_reply_that_copies_the_templates_descriptions_back_is_emptied() -> None:
    skills = load_skills()
    assert skills["grade"].placeholders == {"a better query, or empty"}
    assert "simple" not in skills["plan"].placeholders  # a value to choose, not a description
    # Qwen2.5-Coder-1.5B over the 385 Acts (gw-dev-062): the grade's rewrite was the template's own words, and the
    # research step searched for them.
    echoed = {"relevant": [], "sufficient": False, "rewrite": "A better query, or empty "}
    assert skills["grade"].scrub(echoed) == {"relevant": [], "sufficient": False, "rewrite": ""}
    expanded = {"queries": ["...", "minimum age of marriage"], "passages": ["..."]}
    assert skills["expand"].scrub(expanded) == {"queries": ["minimum age of marriage"], "passages": []}
    planned = {"complexity": "simple", "steps": ["a search query for each research step, at most 3"]}
    assert skills["plan"].scrub(planned) == {"complexity": "simple", "steps": []}


def test_no_value_a_skill_offers_to_choose_from_is_taken_for_a_description() -> None:
    offered = re.compile(r'"[^"]*"(?:\s*\|\s*"[^"]*")+')  # "simple" | "multi_hop"
    seen = set()
    for skill in load_skills().values():
        choices = {c.strip().strip('"').casefold() for group in offered.findall(skill.system) for c in group.split("|")}
        assert not choices & skill.placeholders, skill.name
        seen |= choices
    assert {"simple", "multi_hop", "out_of_scope"} <= seen  # the pattern finds the choices at all
