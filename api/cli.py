"""The ``gweta`` command: ingest documents, serve the API, ask a question from the terminal."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from api.errors import GwetaError, NotReadyError
from api.observability import configure_logging
from api.schemas.events import ErrorEvent, FinalEvent, StreamEvent, TokenEvent, WarningEvent
from api.schemas.query import QueryRequest
from api.settings import IngestionSettings, Settings

if TYPE_CHECKING:
    from ingestion.pairs import GenerateStats
    from ingestion.report import IngestReport

app = typer.Typer(help="Gweta: legal research with a citation for every sentence.", no_args_is_help=True)
# soft_wrap: a line is never broken at the console's width (80 columns when output is not a terminal).
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)
DataDir = Annotated[
    Path | None, typer.Option("--data-dir", envvar="GWETA_DATA_DIR", help="Where embedded state lives.")
]


def _settings(data_dir: Path | None) -> Settings:
    try:
        return Settings(data_dir=data_dir) if data_dir else Settings()
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors())
        err.print(f"[red]Invalid settings:[/red] {problems}")
        raise typer.Exit(2) from None


def _refuse_held_data_dir(settings: Settings) -> None:
    """One clear line at once when another process holds the embedded vector store, rather than a wait for the
    engine's start-up timeout and its traceback."""
    from api.tools.lite_lock import refuse_held_lite_store

    _quiet_vector_store_logs()  # after configure_logging, which sets pymilvus's level
    if settings.vector_store.uri:
        return
    try:
        refuse_held_lite_store(settings.milvus_uri)
    except GwetaError as exc:
        err.print(f"[red]Error:[/red] {exc.message}")
        raise typer.Exit(1) from None


def _run(coro: Any) -> Any:
    try:
        return asyncio.run(coro)
    except GwetaError as exc:
        err.print(f"[red]Error:[/red] {exc.message}")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err.print("[yellow]Interrupted.[/yellow]")
        raise typer.Exit(130) from None


def _quiet_vector_store_logs() -> None:
    """Keep Milvus Lite's chatter out of the output: gRPC core's lines ("too_many_pings") and the tracebacks that
    pymilvus and milvus_lite log for errors we receive as exceptions anyway (and report in one line).

    Call before anything imports grpc: its core reads GRPC_VERBOSITY once, when it loads.
    """
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    for name in ("pymilvus", "milvus_lite"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


ProgressHook = Callable[[str, int, int | None], None]


@contextmanager
def _progress_bars(growing: frozenset[str] | set[str] = frozenset(), every_s: float = 30.0) -> Iterator[ProgressHook]:
    """One bar per stage a long job reports through its hook ``(stage, advance, total)``; a stage in ``growing``
    adds each total it reports to its bar's (its work is discovered as it goes). Where the output is not a terminal
    (a log file, a CI job) bars are drawn only once, at the end, so there each stage is a plain line when it starts, at
    most every ``every_s`` while it runs, and when it ends."""
    if not err.is_terminal:
        with _progress_lines(growing, every_s) as hook:
            yield hook
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err) as progress:
        tasks: dict[str, TaskID] = {}

        def hook(stage: str, advance: int, total: int | None) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage.capitalize(), total=total or 0)
            elif total is not None and stage in growing:
                task = progress.tasks[tasks[stage]]
                progress.update(tasks[stage], total=(task.total or 0) + total)
            progress.advance(tasks[stage], advance)

        yield hook


@dataclass
class _Stage:
    started: float
    total: int | None
    done: int = 0
    said_at: float = 0.0
    said: tuple[int, int | None] | None = None  # (done, total) as its last line gave them


@contextmanager
def _progress_lines(growing: frozenset[str] | set[str], every_s: float) -> Iterator[ProgressHook]:
    """``_progress_bars`` as plain lines: ``Stage: done/total (elapsed)``."""
    stages: dict[str, _Stage] = {}

    def say(name: str, stage: _Stage) -> None:
        if stage.said == (stage.done, stage.total):
            return
        count = f"{stage.done}/{stage.total}" if stage.total else str(stage.done)
        err.print(f"{name.capitalize()}: {count} ({time.monotonic() - stage.started:.0f} s)", markup=False)
        stage.said_at, stage.said = time.monotonic(), (stage.done, stage.total)

    def hook(name: str, advance: int, total: int | None) -> None:
        stage = stages.get(name)
        if stage is None:
            stage = stages[name] = _Stage(time.monotonic(), total)
            say(name, stage)
        elif total is not None:
            stage.total = (stage.total or 0) + total if name in growing else total
        stage.done += advance
        # A growing stage's total is not yet its last: only the clock, and the end of the job, say it.
        finished = name not in growing and bool(stage.total) and stage.done >= (stage.total or 0)
        if finished or time.monotonic() - stage.said_at >= every_s:
            say(name, stage)

    yield hook
    for name, stage in stages.items():  # where each stage ended, if its last line did not say so
        say(name, stage)


def _print_ingest_report(report: IngestReport, source: str) -> None:
    """The run's counts (a table on a terminal, plain lines elsewhere), then failures and parser warnings."""
    from ingestion.report import STATUSES

    title = f"Ingested {source} in {report.seconds:.1f}s"
    if out.is_terminal:
        table = Table("status", "documents", title=escape(title))
        for status in STATUSES:
            table.add_row(status, str(report.count(status)))
        out.print(table)
    else:
        out.print(title, markup=False)
        for status in STATUSES:
            out.print(f"{status:<10} {report.count(status)}", markup=False)
    for doc in report.documents:
        if doc.status == "failed":
            out.print(f"[red]failed[/red] {escape(doc.source)}: {escape(doc.message)}")
        elif doc.status == "skipped" and not doc.doc_key:
            out.print(f"[dim]skipped[/dim] {escape(doc.source)}: {escape(doc.message)}")
        elif doc.status == "ingested" and doc.warnings:
            out.print(f"[yellow]warning[/yellow] {escape(doc.doc_key)}: {escape('; '.join(doc.warnings[:3]))}")
    stages = ", ".join(f"{k} {v:.1f}s" for k, v in sorted(report.stage_seconds.items(), key=lambda kv: -kv[1]))
    if report.sentences:
        out.print(f"{report.sentences} quotable sentences embedded for answers ({report.sentences_embedded} this run)")
    out.print(f"corpus version {report.corpus_version}: {report.total_chunks} chunks searchable ({stages})")
    if report.repealed:
        out.print(f"{report.repealed} document(s) repealed by another document here: answers that cite them say so")
    if report.definitions or report.references:
        out.print(f"{report.definitions} defined terms and {report.references} references between provisions read")


@app.command()
def ingest(
    path: Annotated[
        Path | None, typer.Argument(help="A folder of documents (searched recursively) or one file.")
    ] = None,
    from_store: Annotated[
        bool, typer.Option("--from-store", help="Ingest the object store's corpus/sources/ prefix instead of PATH.")
    ] = False,
    tenant: Annotated[
        str | None, typer.Option(help="Ingest as this tenant's private documents (default: the public corpus).")
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Parse, chunk, embed and index documents; unchanged documents are skipped, removed ones dropped.

    Exits 1 when a file failed (unreadable, too large, not parseable); unsupported files are only skipped."""
    _quiet_vector_store_logs()
    from ingestion.pipeline import Ingestor, build_ingestion_tools, fetch_store_sources

    if (path is None) == (not from_store):
        err.print("[red]Error:[/red] give a PATH, or --from-store (not both)")
        raise typer.Exit(2)
    if path is not None and not path.exists():
        err.print(f"[red]Error:[/red] {path} does not exist")
        raise typer.Exit(2)
    settings = _settings(data_dir)
    if tenant is not None:
        try:
            settings.ingestion = IngestionSettings(**{**settings.ingestion.model_dump(), "tenant": tenant})
        except ValidationError:
            err.print(f"[red]Error:[/red] --tenant {tenant!r}: use letters, digits, '.', '_' or '-'")
            raise typer.Exit(2) from None
    configure_logging("WARNING", json_logs=False)
    _quiet_vector_store_logs()  # again: configure_logging sets pymilvus's level

    async def run() -> Any:
        with ThreadPoolExecutor(settings.model_threads, thread_name_prefix="model") as pool:
            with err.status("Loading the embedding model…"):
                tools = build_ingestion_tools(settings, pool)
            try:
                with _progress_bars(growing={"chunks"}) as hook:
                    source = path or await fetch_store_sources(tools.store, settings.data_dir / "store-sources")
                    return await Ingestor(tools).ingest(source, hook)
            finally:
                await tools.vectors.close()

    report = _run(run())
    _print_ingest_report(report, str(path or "corpus/sources/"))
    if report.failures:
        raise typer.Exit(1)


@app.command()
def reembed(data_dir: DataDir = None) -> None:
    """Embed the stored corpus again with the configured embeddings model (into that model's own collection)."""
    from api.tools.reembed import reembed as run_reembed
    from api.tuning import apply_tuning

    settings = apply_tuning(_settings(data_dir))  # a tuned data dir re-embeds with its tuned model
    configure_logging("WARNING")

    async def go() -> Any:
        with ThreadPoolExecutor(settings.model_threads) as pool:
            return await run_reembed(settings, pool)

    report = _run(go())
    out.print(
        f"re-embedded {report.chunks} chunks with {report.embedder} into collection {report.collection} in "
        f"{report.seconds} s (was {report.previous or 'none'}); corpus version {report.corpus_version}"
    )


@app.command()
def serve(
    data_dir: DataDir = None,
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(envvar="PORT", help="Port to listen on.")] = 8000,
    loop: Annotated[
        Literal["auto", "asyncio", "uvloop"],
        typer.Option(envvar="GWETA_SERVE_LOOP", help="Event loop; auto: uvloop where installed."),
    ] = "auto",
    http: Annotated[
        Literal["auto", "h11", "httptools"],
        typer.Option(envvar="GWETA_SERVE_HTTP", help="HTTP/1.1 parser; auto: httptools where installed."),
    ] = "auto",
) -> None:
    """Run the HTTP API (SSE streaming at /api/v1/query/stream)."""
    import uvicorn

    from api.main import create_app
    from api.tools.shared_state import check_shared_state

    settings = _settings(data_dir)
    configure_logging("INFO")
    _quiet_vector_store_logs()
    try:
        settings.check_bind(host)
    except ValueError as exc:
        err.print(f"[red]Error:[/red] {exc}")
        raise typer.Exit(1) from None
    _refuse_held_data_dir(settings)
    try:
        asyncio.run(check_shared_state(settings.state))  # one clear line, not a traceback from the lifespan
        uvicorn.run(create_app(settings), host=host, port=port, log_config=None, loop=loop, http=http)
    except GwetaError as exc:
        err.print(f"[red]Error:[/red] {exc.message}")
        raise typer.Exit(1) from None


@app.command()
def tune(
    data_dir: DataDir = None,
    revert: Annotated[
        bool, typer.Option("--revert", help="Go back to the packaged model, BM25 defaults and equal fusion weights.")
    ] = False,
    max_minutes: Annotated[float, typer.Option(help="Training time limit (the step that crosses it finishes).")] = 10.0,
    max_pairs: Annotated[int, typer.Option(help="Most query/passage pairs mined from the corpus.")] = 2000,
    epochs: Annotated[int, typer.Option(help="Passes over the mined training pairs.")] = 1,
    batch_size: Annotated[int, typer.Option(help="Pairs per step (each is the others' in-batch negative).")] = 16,
    learning_rate: Annotated[float, typer.Option(help="AdamW's learning rate for the fine-tuning.")] = 2e-5,
    generate: Annotated[
        int, typer.Option(help="Provisions to ask the configured model (GWETA_LLM__*) for questions; 0: none.")
    ] = 0,
    generate_minutes: Annotated[float, typer.Option(help="Time limit for asking the model for questions.")] = 10.0,
    generate_concurrency: Annotated[
        int, typer.Option(help="Questions asked at once (a local llama.cpp server answers one at a time anyway).")
    ] = 3,
    questions: Annotated[
        Path | None,
        typer.Option(
            help="Questions labelled with their gold provisions (as `gweta eval retrieval` reads): trained "
            "on instead of mined pairs, a fifth held out to choose and report."
        ),  # fmt: skip
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Switch to the tuned model even when it ranks the held-out pairs no better than the "
            "packaged one (kept otherwise).",
        ),  # fmt: skip
    ] = False,
) -> None:
    """Adapt retrieval to the ingested corpus: fine-tune the packaged MiniLM on pairs mined from the corpus (no labels)
    or on questions labelled with their gold provisions (--questions), fit BM25 and the fusion weights, re-embed into
    a new collection and switch to it."""
    _quiet_vector_store_logs()
    from ingestion.tuning import TuneOptions, TuneReport
    from ingestion.tuning import revert as revert_tuning
    from ingestion.tuning import tune as run_tune

    settings = _settings(data_dir)
    configure_logging("WARNING", json_logs=False)
    _quiet_vector_store_logs()
    if (
        min(max_minutes, max_pairs, epochs, batch_size - 1, generate_minutes, generate_concurrency, learning_rate) <= 0
        or generate < 0
    ):
        err.print("[red]Error:[/red] --max-minutes, --max-pairs, --epochs, --learning-rate, --generate-minutes and "
                  "--generate-concurrency must be positive, --batch-size over 1, --generate 0 or more")  # fmt: skip
        raise typer.Exit(2)
    if questions is not None and not questions.is_file():
        err.print(f"[red]Error:[/red] --questions {questions}: no such file")
        raise typer.Exit(2)
    options = TuneOptions(max_pairs, max_minutes, epochs, batch_size, generate=generate,
                          generate_minutes=generate_minutes, generate_concurrency=generate_concurrency,
                          questions=questions, force=force, learning_rate=learning_rate)  # fmt: skip

    async def run() -> TuneReport:
        with _progress_bars() as hook:
            if revert:
                return await revert_tuning(settings, hook)
            return await run_tune(settings, options, hook)

    report: TuneReport = _run(run())
    lines = [f"{report.action}: corpus version {report.corpus_version_before} -> {report.corpus_version_after}, "
             f"collection {report.collection}"]  # fmt: skip
    if report.train is not None and report.bm25 is not None:
        pairs = ", ".join(f"{k} {v}" for k, v in report.pairs.items())
        if report.kept == "tuned":
            lines.append(f"model v{report.version} in {settings.data_dir / report.model_dir}")
        else:
            scores = report.held_out_mrr
            lines.append(
                f"kept the packaged model: the tuned one ranked the held-out {report.held_out_on} no better (MRR@10 "
                f"{scores['dense (tuned)']:.3f} against {scores['dense (packaged)']:.3f}); BM25 and the fusion weight "
                "below are applied (--force switches anyway)"
            )
        lines += [
            f"pairs {'mined from the corpus' if options.questions is None else 'from the labelled questions'}: {pairs}",
            f"training: {report.train.steps} steps over {report.train.pairs} pairs in {report.train.seconds}s "
            f"(stopped by {report.train.stopped_by})",
            f"bm25: k1={report.bm25.k1} b={report.bm25.b} stem={report.bm25.stem} bigrams={report.bm25.bigrams} "
            f"title x{report.bm25.title_weight} heading x{report.bm25.heading_weight}; "
            f"fusion: dense weight {report.dense_weight}, bm25 1.0",
            f"held-out {report.held_out_on}, MRR@10: "
            + ", ".join(f"{k} {v:.3f}" for k, v in report.held_out_mrr.items()),
        ]
    if report.fusion is not None:
        f = report.fusion
        measured = ", ".join(f"{k} {v:.3f}" for k, v in f.scores.items())
        lines.append(f"learned fusion ({f.questions} training, {f.held_out} held-out questions): "
                     f"{'serves' if f.kept else 'not kept'}, {f.reason}; {measured}")  # fmt: skip
    if report.generated is not None:
        lines.append(_generated_line(report.generated))
    lines.append("seconds: " + ", ".join(f"{k} {v}" for k, v in report.seconds.items()))
    for line in lines:
        out.print(line, markup=False)


def _generated_line(g: GenerateStats) -> str:
    if g.note == "off":
        return "generated questions: off (--generate 0)"
    if g.note:
        return f"generated questions: none, {g.note} (GWETA_LLM__BACKEND=openai and GWETA_LLM__BASE_URL set one)"
    return (
        f"generated questions: {g.questions} from {g.answered} of {g.asked} provisions asked ({g.requested} "
        f"requested) in {g.seconds}s, stopped by {g.stopped_by}; skipped: {g.invalid} invalid and {g.empty} empty "
        f"replies, {g.failed} failed calls, {g.copied} questions copying the provision, {g.shared} written for several "
        f"provisions, {g.unasked} not asked"
    )


def _print_event(event: StreamEvent, as_json: bool, line_open: bool = False) -> None:
    """Print one event of a stream; ``line_open``: the answer's text so far does not end its line (a warning that comes
    after it starts on a line of its own)."""
    if as_json:
        if isinstance(event, FinalEvent):
            out.print_json(event.model_dump_json())
        return
    if isinstance(event, TokenEvent):
        sys.stdout.write(event.text)
        sys.stdout.flush()
    elif isinstance(event, WarningEvent):
        if line_open:
            sys.stdout.write("\n")
            sys.stdout.flush()
        err.print(f"[yellow]warning:[/yellow] {event.message}")
    elif isinstance(event, FinalEvent):
        out.print()
        for c in event.citations:
            heading = f" ({c.heading})" if c.heading else ""
            version = f" (as consolidated on {c.consolidated})" if c.consolidated else ""
            out.print(f"[bold][{c.index}][/bold] {c.cite_as or f'{c.title}, {c.section}'}{heading}{version} — "
                      f"{c.section_id}")  # fmt: skip
        total = event.timings.get("total", 0)
        err.print(f"[dim]{len(event.citations)} citations · {total:.0f} ms[/dim]")


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question, in quotes.")],
    data_dir: DataDir = None,
    session: Annotated[str, typer.Option(help="Session id; follow-up questions share it.")] = "cli",
    as_json: Annotated[bool, typer.Option("--json", help="Print only the final event (answer + citations).")] = False,
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help="The law as it stood on this day (YYYY-MM-DD): only documents in force then."),
    ] = None,
) -> None:
    """Ask a question against the local corpus and stream the cited answer."""
    settings = _settings(data_dir)
    configure_logging("WARNING", json_logs=False)
    try:
        request = QueryRequest(q=question, session_id=session, as_of=as_of)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "--as-of" if first["loc"] and first["loc"][0] == "as_of" else "question"
        err.print(f"[red]Invalid {where}:[/red] {first['msg']}")
        raise typer.Exit(2) from None
    _refuse_held_data_dir(settings)  # before the services' imports, which take seconds
    from api.services import open_services

    async def run() -> int:
        async with open_services(settings) as services:
            if not len(services.corpus):
                err.print("[yellow]No documents are ingested yet: run 'gweta ingest PATH' first.[/yellow]")
                return 1
            failed, line_open = False, False
            async for event in services.orchestrator.stream(request):
                if isinstance(event, ErrorEvent):
                    err.print(f"[red]Error:[/red] {event.message}")
                    failed = True
                _print_event(event, as_json, line_open)
                if isinstance(event, TokenEvent):
                    line_open = not event.text.endswith("\n")
                elif isinstance(event, WarningEvent):
                    line_open = False
            return 1 if failed else 0

    code = _run(run())
    if code:
        raise typer.Exit(code)


def _publish(report: str, out: Path | None) -> None:
    if out:
        out.write_text(report)
    sys.stdout.write(report)


eval_app = typer.Typer(help="Measure retrieval and answers against question sets.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")


@eval_app.command("retrieval")
def eval_retrieval(
    corpus: Annotated[Path, typer.Option(help="Corpus file or folder (JSONL passages or Acts, or documents).")],
    questions: Annotated[Path, typer.Option(help="Questions JSONL (ObliQA or Zimbabwe QA format).")],
    data_dir: DataDir = None,
    out: Annotated[Path | None, typer.Option(help="Write the Markdown report here too.")] = None,
    limit: Annotated[int, typer.Option(help="Evaluate only the first N questions (0 = all).")] = 0,
) -> None:
    """Ingest CORPUS if needed (a throw-away data dir under .gweta-data/eval/ by default), then score every
    retrieval configuration on QUESTIONS: Recall@1/5/10, MRR@10, nDCG@10."""
    import hashlib

    from api.evaluation.core import Config, evaluate, load_questions, report
    from api.services import open_services
    from ingestion.pipeline import Ingestor, build_ingestion_tools

    for path in (corpus, questions):
        if not path.exists():
            err.print(f"[red]Error:[/red] {path} does not exist")
            raise typer.Exit(2)
    base = _settings(None)
    key = hashlib.sha256(str(corpus.resolve()).encode()).hexdigest()[:12]
    settings = base.model_copy(update={"data_dir": data_dir or base.data_dir / "eval" / f"{corpus.stem}-{key}"})
    configure_logging("WARNING", json_logs=False)
    _refuse_held_data_dir(settings)
    try:
        qs, without_gold = load_questions(questions)
    except (ValueError, KeyError) as exc:
        err.print(f"[red]Error:[/red] {questions} is not a question file in a known format ({exc})")
        raise typer.Exit(2) from None
    qs = qs[:limit] if limit else qs

    async def run() -> str:
        with ThreadPoolExecutor(settings.model_threads, thread_name_prefix="model") as pool:
            with err.status(f"Ingesting {corpus} into {settings.data_dir} (unchanged documents are skipped)…"):
                tools = build_ingestion_tools(settings, pool)
                try:
                    ingested = await Ingestor(tools).ingest(corpus)
                finally:
                    await tools.vectors.close()
        async with open_services(settings) as services:
            retriever = services.orchestrator.deps.retriever
            configs = [
                Config("bm25 only", "bm25"), Config("bm25 + expansion", "bm25", expand=True),
                Config("dense only", "dense"), Config("hybrid (RRF)", "hybrid"),
                Config("hybrid + expansion", "hybrid", expand=True),
            ]  # fmt: skip
            if retriever.fusion is not None:  # what this data dir serves, beside RRF on the same lists
                configs.append(Config("hybrid (learned fusion)", "hybrid", learned=True))
            if retriever.reranker is not None:
                name = retriever.reranker.name
                configs.append(Config(f"hybrid + rerank ({name})", "hybrid", rerank=True))
                configs.append(Config(f"hybrid + expansion + rerank ({name})", "hybrid", rerank=True, expand=True))
            with err.status(f"Running {len(qs)} questions × {len(configs)} configurations…"):
                results = await evaluate(retriever, qs, configs)
        notes = [
            f"- corpus: `{corpus.name}` ({ingested.total_chunks} chunks, corpus version {ingested.corpus_version});"
            f" questions: `{questions.name}`, {len(qs)} with gold ({without_gold} without gold left out)",
            f"- embedder: {settings.embeddings.backend}; reranker: {settings.reranker.backend}; "
            f"candidates per backend: {settings.retrieval.candidates}; RRF k={settings.retrieval.rrf_k}",
            "- expansion: pseudo-relevance feedback on the BM25 side"
            " (terms shared by the top 3 BM25 chunks, RM3-style);"
            " the LLM's multi-query and HyDE expansions need a model and are measured in the answers evaluation",
        ]
        return report(f"Retrieval evaluation: {questions.name}", results, notes)

    _publish(_run(run()), out)


@eval_app.command("answers")
def eval_answers(
    questions: Annotated[Path, typer.Option(help="Questions JSONL (Zimbabwe QA format, or ObliQA).")],
    data_dir: DataDir = None,
    out: Annotated[Path | None, typer.Option(help="Write the Markdown report here too.")] = None,
    trace: Annotated[
        Path | None, typer.Option(help="Append one JSON line per question here as it is answered (kept if cut short).")
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Keep the questions already in --trace instead of asking them again.")
    ] = False,
    time_budget_s: Annotated[
        float, typer.Option("--time-budget-s", min=0, help="Start no new question after this long (0: no limit).")
    ] = 0.0,
    compare_extractive: Annotated[
        bool,
        typer.Option("--compare-extractive", help="With a model configured, also answer each question without it."),
    ] = False,
    interleave: Annotated[
        bool, typer.Option("--interleave", help="Ask round-robin by question kind (a run cut short covers each kind).")
    ] = False,
    limit: Annotated[int, typer.Option(help="Answer only the first N questions (0 = all).")] = 0,
) -> None:
    """Answer every question with the configured pipeline (no LLM by default) over an ingested data dir, and report
    per question kind: cited provision is gold, quotes verbatim, abstentions, injections screened; with a model also
    its calls per skill (JSON-valid rate), budgets, tokens, and what verification did with its answers."""
    import time

    from api.evaluation.core import (
        answers_report,
        evaluate_answers,
        extractive_twin,
        interleave_kinds,
        load_records,
        read_trace,
        shown,
    )
    from api.services import open_services

    if not questions.exists():
        err.print(f"[red]Error:[/red] {questions} does not exist")
        raise typer.Exit(2)
    if resume and trace is None:
        err.print("[red]Error:[/red] --resume needs --trace")
        raise typer.Exit(2)
    settings = _settings(data_dir)
    configure_logging("ERROR", json_logs=False)
    _refuse_held_data_dir(settings)
    records = load_records(questions)
    records = interleave_kinds(records) if interleave else records
    records = records[:limit] if limit else records
    done = read_trace(trace) if resume and trace is not None and trace.exists() else []
    if trace is not None and not resume:
        trace.write_text("")
    model = settings.llm.backend != "none"
    started = time.monotonic()

    def progress(n: int, total: int, line: dict[str, Any]) -> None:
        parts = []
        for label, answered in line["answers"].items():
            state = shown(answered) if label == "model" else answered["outcome"] or "error"
            verified = "verified" if answered["verified"] else "UNVERIFIED"
            parts.append(f"{label} {answered['ms'] / 1000:.0f}s {state}, {verified}")
        elapsed = time.monotonic() - started
        err.print(f"[{n}/{total}] {line['id']} ({line['kind']}): {'; '.join(parts)} — {elapsed / 60:.1f} min",
                  markup=False, highlight=False)  # fmt: skip

    async def run() -> str:
        async with open_services(settings) as services:
            if not len(services.corpus):
                raise NotReadyError("no documents are ingested in this data dir: run 'gweta ingest' first")
            main = services.orchestrator
            # The quote-only answer first: its retrieval runs cold, as the model's would on its own.
            pipelines = {"extractive": extractive_twin(main)} if model and compare_extractive else {}
            pipelines["model" if model else "extractive"] = main
            err.print(f"Answering {len(records)} questions from {questions.name} ({', '.join(pipelines)})…")
            result = await evaluate_answers(pipelines, records, trace, time_budget_s, progress, done)
            llm = settings.llm.model if model else "none (extractive answers)"
            s = settings.llm
            notes = [
                f"- corpus version {services.corpus.version}: {len(services.corpus.manifest.documents)} documents, "
                f"{len(services.corpus)} chunks; LLM: {llm}; reranker: {settings.reranker.backend}",
                "- 'cites a gold provision': questions with gold whose answer cites at least one gold section; "
                "'verbatim': citations whose quote occurs exactly in the cited provision",
                f"- wall time {result.seconds / 60:.1f} min",
            ]
            if model:
                notes.append(
                    f"- time limits: answer {s.timeout_s:g} s, structured calls {s.call_timeout_s:g} s, route "
                    f"{s.route_timeout_s:g} s, expansion {s.expand_timeout_s:g} s, stall {s.stall_timeout_s:g} s, "
                    f"question {settings.question_deadline_s:g} s; max tokens {s.max_tokens}; call budgets "
                    f"{s.max_calls_simple} (simple) / {s.max_calls_multi_hop} (multi-hop)"
                )
            return answers_report(f"Answer evaluation: {questions.name}", result, notes)

    _publish(_run(run()), out)


@eval_app.command("choices")
def eval_choices(
    questions: Annotated[Path, typer.Option(help="Multiple-choice questions JSONL (evaluation/mc_questions.jsonl).")],
    data_dir: DataDir = None,
    out: Annotated[Path | None, typer.Option(help="Write the Markdown report here too.")] = None,
) -> None:
    """Answer every multiple-choice question with the configured pipeline (no LLM by default) over an ingested data
    dir, and report accuracy, accuracy by confidence band, "cannot tell", gold cited and time, by kind and form."""
    from api.evaluation.choices import choices_report, evaluate_choices, load_choice_questions
    from api.services import open_services

    if not questions.exists():
        err.print(f"[red]Error:[/red] {questions} does not exist")
        raise typer.Exit(2)
    try:
        qs = load_choice_questions(questions)
    except ValueError as exc:
        err.print(f"[red]Error:[/red] {questions}: {exc}")
        raise typer.Exit(2) from None
    settings = _settings(data_dir)
    configure_logging("ERROR", json_logs=False)
    _refuse_held_data_dir(settings)

    async def run() -> str:
        async with open_services(settings) as services:
            if not len(services.corpus):
                raise NotReadyError("no documents are ingested in this data dir: run 'gweta ingest' first")
            with err.status(f"Answering {len(qs)} multiple-choice questions…"):
                outcomes = await evaluate_choices(services, qs)
            llm = settings.llm.model if settings.llm.backend != "none" else "none (choice by evidence support)"
            notes = [
                f"- corpus version {services.corpus.version}: {len(services.corpus.manifest.documents)} documents, "
                f"{len(services.corpus)} chunks; LLM: {llm}; reranker: {settings.reranker.backend}",
                "- 'accuracy' counts a question with no letter as wrong; 'cannot tell': no choice was supported by "
                "the provisions found; 'cites a gold provision': the research cited a gold section",
            ]
            return choices_report(f"Multiple-choice evaluation: {questions.name}", outcomes, notes)

    _publish(_run(run()), out)


if __name__ == "__main__":
    app()
