"""The query graph's pure parts on their own: routing, question splitting, usage summaries, prompt helpers, the
state's typed updates, and the per-turn reset through a real checkpointer."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, get_type_hints

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Overwrite

from api.composer.prompts import clip_tokens, format_history
from api.composer.structured import LLMCall
from api.orchestrators.query import routing
from api.orchestrators.query.nodes.research import as_query
from api.orchestrators.query.orchestrator import usage_summary
from api.orchestrators.query.screening import reply, split_question
from api.orchestrators.query.state import KEPT_ACROSS_TURNS, QueryState, QueryUpdate, Step, fresh_turn


def state(**values: Any) -> QueryState:
    return QueryState(question="How much deposit can a landlord ask for?", **values)


HIT = {"chunk_id": "c1", "score": 0.5, "ranks": {"dense": 1}}


def test_after_guard_answers_a_blocked_message_directly() -> None:
    assert routing.after_guard(state(route="blocked")) == "respond"
    assert routing.after_guard(state()) == "contextualize"


@pytest.mark.parametrize(
    ("route", "expected"),
    [("rag_qa", "recall"), ("conversational", "respond"), ("clarify", "respond"), ("out_of_scope", "respond")],
)
def test_after_intent_searches_only_legal_questions(route: Any, expected: str) -> None:
    assert routing.after_intent(state(route=route)) == expected


def test_after_recall_ends_on_a_memory_hit() -> None:
    assert routing.after_recall(state(cached=True)) == "__end__"
    assert routing.after_recall(state()) == "plan"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"retry": True}, "research"),
        ({"step_kind": "corrective", "pending": ["s999"], "hits": [HIT]}, "research"),
        ({"step_kind": "refinement", "pending": ["part two"], "hits": [HIT]}, "research"),
        ({"complexity": "multi_hop", "hits": [HIT]}, "replan"),
        ({"complexity": "multi_hop", "step_kind": "corrective", "hits": [HIT]}, "synthesize"),
        ({"complexity": "multi_hop", "step_kind": "refinement", "hits": [HIT]}, "synthesize"),
        ({"hits": [HIT]}, "synthesize"),
        ({"hits": [HIT], "answerable": True}, "synthesize"),
        ({"hits": [HIT], "answerable": False}, "abstain"),  # the evidence judge found nothing that answers
        ({}, "abstain"),
    ],
)
def test_after_research_covers_every_branch(values: dict[str, Any], expected: str) -> None:
    assert routing.after_research(state(**values)) == expected


@pytest.mark.parametrize(
    ("values", "expected"),
    [({"pending": ["next"]}, "research"), ({"hits": [HIT]}, "synthesize"), ({}, "abstain")],
)
def test_after_replan_covers_every_branch(values: dict[str, Any], expected: str) -> None:
    assert routing.after_replan(state(**values)) == expected


def test_after_verify_sends_one_corrective_step_or_keeps_the_answer() -> None:
    assert routing.after_verify(state(pending=["quoted words"])) == "research"
    assert routing.after_verify(state()) == "reevaluate"


def test_after_reevaluate_refines_once_or_keeps_the_answer() -> None:
    assert routing.after_reevaluate(state(pending=["the part not covered"], refined=True)) == "research"
    assert routing.after_reevaluate(state()) == "remember"


def test_a_multiple_choice_question_ends_with_the_selection() -> None:
    assert routing.after_answer(state(choices=["one", "two"])) == "select_choice"
    assert routing.after_answer(state()) == "__end__"
    assert routing.after_recall(state(cached=True, choices=["one", "two"])) == "select_choice"
    assert routing.after_replan(state(hits=[HIT], answerable=False)) == "abstain"


def test_split_question_makes_one_step_per_part() -> None:
    question = "What is the minimum age of marriage, and what happens if a child is married anyway?"
    assert split_question(question) == [
        "What is the minimum age of marriage",
        "what happens if a child is married anyway?",
    ]
    assert split_question("Can a tenant be evicted and what?") == ["Can a tenant be evicted"]  # under 3 words: no step
    assert split_question("Bail or when?") == ["Bail or when?"]  # no part long enough: the question itself
    assert split_question("How long is maternity leave?") == ["How long is maternity leave?"]
    assert split_question("Is bail allowed or when can police arrest someone") == [
        "Is bail allowed",
        "when can police arrest someone",
    ]


def test_canned_replies_name_the_route_and_the_corpus() -> None:
    titles = ["Labour Act", "Rent Act", "Marriages Act", "Bail Act"]
    assert "change how I work" in reply("blocked", "", titles, {"ZW"})
    assert "Labour Act, Rent Act, Marriages Act and others" in reply("conversational", "greeting", titles, {"ZW"})
    assert "none yet" in reply("clarify", "", [], set())
    assert "cover ZW law only" in reply("out_of_scope", "asks about UK law", titles, {"ZW"})
    assert "(cooking, not law)" in reply("out_of_scope", "cooking, not law", titles, {"ZW"})


def call(skill: str, outcome: Any = "ok", attempts: int = 1, tokens: tuple[int, int] = (10, 5)) -> LLMCall:
    return LLMCall(skill=skill, ms=1.0, input_tokens=tokens[0], output_tokens=tokens[1], attempts=attempts,
                   outcome=outcome)  # fmt: skip


def test_usage_summary_counts_calls_tokens_failures_and_research() -> None:
    steps = [Step(query="a", added=["c1"], sufficient=False, expansions=2, rewrites=1),
             Step(query="b", added=[], sufficient=True, expansions=0, rewrites=0)]  # fmt: skip
    llm = [call("expand"), call("grade", "unparsable", attempts=2), call("grade", "timeout", tokens=(0, 0)),
           call("synthesize", tokens=(300, 80)), call("guard", "error", attempts=3)]  # fmt: skip
    assert usage_summary(state(llm=llm, steps=steps)) == {
        "llm_calls": 5, "input_tokens": 330, "output_tokens": 95, "llm_retries": 3, "llm_timeouts": 1,
        "llm_failures": 2, "research_steps": 2, "query_rewrites": 1, "multi_hop": 0,
        "calls_expand": 1, "calls_grade": 2, "calls_synthesize": 1, "calls_guard": 1,
        "unparsable_grade": 1, "timeouts_grade": 1, "errors_guard": 1,
    }  # fmt: skip
    assert usage_summary(state(complexity="multi_hop"))["multi_hop"] == 1
    assert usage_summary(state()) == {
        "llm_calls": 0, "input_tokens": 0, "output_tokens": 0, "llm_retries": 0, "llm_timeouts": 0,
        "llm_failures": 0, "research_steps": 0, "query_rewrites": 0, "multi_hop": 0,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        ("  notice before a  rent increase ", "notice before a rent increase"),
        ("What does s. 12(3) of the Labour Act [Chapter 28:01] say about notice?", None),
        ("Is it legal to trade Bitcoin? The Reserve Bank Act allows the sale of currencies.", ""),
        (" ".join(["deposit"] * 40), None),
        (" ".join(["deposit"] * 41), ""),
        (None, ""),
        (["a list"], ""),
    ],
)
def test_a_model_written_search_query_is_one_sentence_of_forty_words_at_most(written: object, kept: str | None) -> None:
    assert as_query(written) == (str(written) if kept is None else kept)


def test_history_keeps_the_last_three_turns_with_answers_cut_short() -> None:
    turns = [(f"q{i}", "x" * 500) for i in range(5)]
    text = format_history(turns)
    assert [line for line in text.splitlines() if line.startswith("Q:")] == ["Q: q2", "Q: q3", "Q: q4"]
    assert "x" * 400 in text and "x" * 401 not in text


def test_clip_tokens_cuts_at_a_word_within_the_limit() -> None:
    def count(text: str) -> int:
        return len(text.split())

    text = " ".join(f"w{i}" for i in range(300))
    clipped = clip_tokens(text, 120, count)
    assert count(clipped) <= 120 and text.startswith(clipped) and clipped.split()[-1].startswith("w")
    assert clip_tokens("short passage", 120, count) == "short passage"


def test_a_node_update_names_exactly_the_state_fields_with_their_types() -> None:
    state_hints = get_type_hints(QueryState)  # reducers dropped: an update carries the plain value
    update_hints = get_type_hints(QueryUpdate)
    assert update_hints == state_hints


def test_fresh_turn_resets_every_field_from_its_default() -> None:
    turn = fresh_turn(question="q", filters={"jurisdiction": "ZW"}, tenant="acme")
    names = {f.name for f in fields(QueryState)}
    assert set(turn) == names - KEPT_ACROSS_TURNS
    defaults = QueryState(question="q", filters={"jurisdiction": "ZW"}, tenant="acme")
    reduced = {"hits", "warnings", "timings", "steps", "relevant_sections", "llm"}
    for name, value in turn.items():
        if name in reduced:
            assert isinstance(value, Overwrite) and value.value == getattr(defaults, name), name
        else:
            assert value == getattr(defaults, name), name
    with pytest.raises(TypeError):
        fresh_turn(question="q", turns=[])
    with pytest.raises(TypeError):
        fresh_turn(question="q", not_a_field=1)
    with pytest.raises(TypeError):
        fresh_turn()


@dataclass(kw_only=True)
class LongerState(QueryState):
    """The state with a field added later, which nobody lists anywhere."""

    notes: Annotated[list[str], operator.add] = field(default_factory=list)
    seen: str = ""


async def test_a_new_field_is_reset_between_turns_without_being_listed() -> None:
    """Two turns of one session through a real checkpointer: the second starts from defaults but keeps the turns."""
    starts: list[LongerState] = []

    def work(s: LongerState) -> dict[str, Any]:
        starts.append(s)
        return {"notes": [s.question], "seen": s.question, "warnings": [("cached_answer", "m")],
                "timings": {s.question: 1.0}, "hits": [HIT], "turns": [{"question": s.question}]}  # fmt: skip

    builder = StateGraph(LongerState)
    builder.add_node("work", work)
    builder.add_edge(START, "work")
    builder.add_edge("work", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "s"}}
    await graph.ainvoke(fresh_turn(LongerState, question="first"), config)
    final = await graph.ainvoke(fresh_turn(LongerState, question="second"), config)
    second = starts[1]
    assert (second.notes, second.seen, second.warnings, second.timings, second.hits) == ([], "", [], {}, [])
    assert [t["question"] for t in second.turns] == ["first"]
    assert final["notes"] == ["second"] and final["timings"] == {"second": 1.0}
    assert [t["question"] for t in final["turns"]] == ["first", "second"]
