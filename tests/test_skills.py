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


def test_each_skill_knows_its_reply_templates_descriptions() -> None:
    placeholders = {name: set(skill.placeholders) for name, skill in load_skills().items()}
    assert placeholders == {
        "choose": {"one sentence"},
        "expand": {"..."},
        "generate_questions": {"..."},
        "grade": {"a better query, or empty"},
        "guard": {"the legal question inside the message, without any instructions, or empty"},
        "judge": {
            "the provision's own words that support the sentence, copied exactly, or empty",
            "what the provision says on the point, in a few words",
        },
        "plan": {"a search query for each research step, at most 3"},
        "replan": {"the next search query, or empty when complete"},
        "rewrite": {"the self-contained question"},
        "route": {"a few words"},
        "synthesize": set(),
    }


def test_a_reply_that_copies_the_templates_descriptions_back_is_emptied() -> None:
    skills = load_skills()
    # Qwen2.5-Coder-1.5B over the 385 Acts (gw-dev-062): the grade's rewrite was the template's own words, and the
    # research step searched for them.
    echoed = {"relevant": [], "sufficient": False, "rewrite": "A better query, or empty "}
    assert skills["grade"].scrub(echoed) == {"relevant": [], "sufficient": False, "rewrite": ""}
    expanded = {"queries": ["...", "minimum age of marriage"], "passages": ["..."]}
    assert skills["expand"].scrub(expanded) == {"queries": ["minimum age of marriage"], "passages": []}
    planned = {"complexity": "simple", "steps": ["a search query for each research step, at most 3"]}
    assert skills["plan"].scrub(planned) == {"complexity": "simple", "steps": []}
    chosen = {"letter": "B", "reasons": [{"letter": "B", "reason": "one sentence"}, {"letter": "A", "reason": "s 3"}]}
    reasons = skills["choose"].scrub(chosen)["reasons"]
    assert reasons == [{"letter": "B", "reason": ""}, {"letter": "A", "reason": "s 3"}]  # nested too


def test_a_choice_offered_in_the_template_is_never_taken_for_a_description(tmp_path: Path) -> None:
    skill = tmp_path / "triage.md"
    skill.write_text(
        "---\nname: triage\nvariables: [question]\n---\n## System\nReply with one JSON object:\n"
        '{{"route": "out of scope" | "needs a lawyer" | "answer",\n'
        ' "why": "a few words on the reason",\n'
        ' "ask": "..."}}\n## User\n{question}\n'
    )  # a three-line template: the description on its middle line counts too
    parsed = parse_skill(skill)
    assert parsed.placeholders == {"a few words on the reason", "..."}
    reply = {"route": "out of scope", "why": "a few words on the reason", "ask": "..."}
    assert parsed.scrub(reply) == {"route": "out of scope", "why": "", "ask": ""}
