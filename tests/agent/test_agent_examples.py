"""Few-shot examples: library parsing, budget, relevance, diversity (MMR), order, CLI."""

from __future__ import annotations

import json
import math
import re
from collections import Counter

import pytest
from click.testing import CliRunner

from ctxselect.agent import examples
from ctxselect.agent.examples import Example, ExampleLibrary, render, render_example
from ctxselect.errors import ConfigError, InputError
from ctxselect.interfaces.cli import agent  # noqa: F401  (registers the commands)
from ctxselect.interfaces.cli.main import cli
from ctxselect.retrieve import BM25Retriever
from ctxselect.retrieve.analyze import BM25Analyzer
from ctxselect.tokens import get_counter
from ctxselect.types import Chunk, ChunkTable

LIBRARY = [
    {"input": "Convert 3 km to miles", "output": "1.86 miles"},
    {"input": "Convert 12 km to miles", "output": "7.46 miles"},
    {"input": "Convert 40 km to miles please", "output": "24.85 miles"},
    {"input": "Convert 5 pounds to kilograms", "output": "2.27 kg"},
    {"input": "What is the capital of France?", "output": "Paris"},
    {"input": "Convert 20 miles to km", "output": "32.19 km"},
    {"input": "Convert 10 km to miles, then explain the conversion factor in detail",
     "output": "6.21 miles. " + "One mile is 1.609344 kilometres by definition. " * 20},
]  # fmt: skip


@pytest.fixture
def library_file(tmp_path):
    path = tmp_path / "library.jsonl"
    lines = [json.dumps(record) for record in LIBRARY]
    lines.insert(3, "")  # blank lines are skipped, line numbers still count them
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def library(library_file):
    return ExampleLibrary.load(library_file)


def test_load_keeps_file_lines(library):
    assert len(library) == 7
    assert [e.line for e in library.examples] == [1, 2, 3, 5, 6, 7, 8]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"input": "a", "output": "b"}\n{"input": "a"\n', "library.jsonl:2: not valid JSON"),
        ('["input", "output"]\n', "library.jsonl:1: expected an object, got list"),
        ('{"input": "a"}\n', "library.jsonl:1: 'output' is missing"),
        ('{"input": 3, "output": "b"}\n', "library.jsonl:1: 'input' must be a string, got int"),
        ('{"input": "  ", "output": "b"}\n', "library.jsonl:1: 'input' is empty"),
        ("\n\n", "holds no examples"),
    ],
)
def test_malformed_libraries_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "library.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(message)):
        examples.load_examples(path)


def test_invalid_utf8_and_missing_file(tmp_path):
    path = tmp_path / "library.jsonl"
    path.write_bytes(b'{"input": "a", "output": "b"}\n{"input": "\xff", "output": "b"}\n')
    with pytest.raises(InputError, match=r"library\.jsonl:2: not valid UTF-8"):
        examples.load_examples(path)
    with pytest.raises(InputError, match="cannot read example library"):
        examples.load_examples(tmp_path / "none.jsonl")


def test_selection_fits_the_budget_and_counts_exactly(library):
    counter = get_counter("cl100k")
    for budget in (20, 40, 60, 200, 2000):
        chosen = library.select("Convert 7 km to miles", budget, 5)
        assert chosen.tokens_used == counter.count(render(chosen)) <= budget
        assert all(e.tokens == counter.count(render_example(e)) for e in chosen.examples)


def test_a_large_example_that_does_not_fit_is_skipped_not_a_stop(library):
    chosen = library.select("Convert 10 km to miles, explain the conversion factor", 100, 3)
    assert any(d.line == 8 and d.reason.startswith("does not fit") for d in chosen.dropped)
    assert chosen.examples  # smaller examples after it still came


def test_most_relevant_comes_last_and_order_is_stable(library):
    first = library.select("Convert 7 km to miles", 200, 3, mmr_lambda=1.0)
    assert first == library.select("Convert 7 km to miles", 200, 3, mmr_lambda=1.0)
    scores = [e.score for e in first.examples]
    assert scores == sorted(scores) and len(scores) == 3


def test_mmr_trades_relevance_for_diversity():
    # Three near-copies and one different but relevant example.
    lib = ExampleLibrary(
        [
            Example("sort a list of numbers in python", "sorted(xs)", 1),
            Example("sort a list of numbers in python quickly", "xs.sort()", 2),
            Example("sort a list of numbers in python please", "sorted(xs)", 3),
            Example("sort strings by length", "sorted(xs, key=len)", 4),
        ]
    )
    relevant = lib.select("sort a list of numbers", 500, 2, mmr_lambda=1.0)
    diverse = lib.select("sort a list of numbers", 500, 2, mmr_lambda=0.3)
    assert 4 not in {e.line for e in relevant.examples}
    assert 4 in {e.line for e in diverse.examples}


def test_no_matching_example_is_an_empty_selection_with_a_note(library):
    chosen = library.select("zebra quantum", 200, 3)
    assert chosen.examples == () and chosen.tokens_used == 0
    assert chosen.note == "no example shares a term with the input"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"input": "", "budget": 100}, "input is empty"),
        ({"input": "x" * 8001, "budget": 100}, "input is 8,001 characters long"),
        ({"input": "km", "budget": 5}, "budget 5 is below the minimum of 20 tokens"),
        ({"input": "km", "budget": 100, "k": 21}, "k must be between 1 and 20"),
        ({"input": "km", "budget": 100, "mmr_lambda": 1.5}, "mmr_lambda must be between 0"),
    ],
)
def test_bad_arguments(library, kwargs, message):
    with pytest.raises(ConfigError, match=message):
        library.select(**kwargs)


def test_cli_examples_text_json_and_errors(library_file, tmp_path):
    runner = CliRunner()
    args = ["examples", "--library", str(library_file), "--input", "Convert 7 km to miles"]
    text = runner.invoke(cli, [*args, "--budget", "60", "--k", "2"])
    assert text.exit_code == 0 and text.stdout.startswith("Input: Convert")
    assert text.stdout.count("Input: ") == 2 and "60 tokens" in text.stderr
    data = json.loads(runner.invoke(cli, [*args, "--budget", "60", "--json"]).stdout)
    assert set(data) >= {"examples", "tokens_used", "budget", "k", "mmr_lambda", "dropped"}
    assert data["tokens_used"] <= 60
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"input": "a", "output": "b"}\nnot json\n', encoding="utf-8")
    failed = runner.invoke(cli, ["examples", "--library", str(bad), "--input", "a"])
    assert failed.exit_code == 1 and failed.stderr.startswith(f"error: {bad}:2: not valid JSON")


def _tfidf_cosine(texts):
    """Cosine of smoothed tf-idf vectors over BM25 terms, as plain dicts."""
    analyzer, n = BM25Analyzer(), len(texts)
    counts = [Counter(analyzer.terms(text)) for text in texts]
    df = Counter(t for c in counts for t in c)
    vectors = []
    for c in counts:
        w = {t: tf * (math.log((1 + n) / (1 + df[t])) + 1) for t, tf in c.items()}
        norm = math.sqrt(sum(x * x for x in w.values())) or 1.0
        vectors.append({t: x / norm for t, x in w.items()})
    return lambda a, b: sum(w * vectors[b].get(t, 0.0) for t, w in vectors[a].items())


def _reference(examples, query, budget, k, lam):
    """Greedy MMR (Carbonell & Goldstein 1998) written out plainly: relevance = BM25 over
    the best BM25, similarity = :func:`_tfidf_cosine`; an example that does not fit the
    tokens left is set aside; values within 1e-12 tie and go to the better rank. Returns
    the picked lines in prompt order, and the dropped lines."""
    cosine = _tfidf_cosine([e.input for e in examples])
    ids = [f"{i:07d}" for i in range(len(examples))]
    chunks = [Chunk(i, i, 0, 0, len(e.input), e.input) for i, e in zip(ids, examples, strict=True)]
    retriever = BM25Retriever.build(ChunkTable.from_chunks(chunks))
    hits = retriever.search(query, min(len(examples), max(50, 10 * k)))
    rows = [int(h.chunk_id) for h in hits]
    relevance = {r: h.score / hits[0].score for r, h in zip(rows, hits, strict=True)}
    cost = get_counter("cl100k").count
    picked, dropped, left, pool = [], [], budget, list(rows)

    def value(r):
        return lam * relevance[r] - (1 - lam) * max((cosine(r, p) for p in picked), default=0.0)

    while pool and len(picked) < k:
        top = max(map(value, pool))
        best = min((r for r in pool if value(r) >= top - 1e-12), key=rows.index)  # ties: rank
        pool.remove(best)
        tokens = cost(render_example(examples[best]))
        if tokens > left:
            dropped.append(examples[best].line)
            continue
        picked.append(best)
        left -= tokens
    return [examples[r].line for r in sorted(picked, key=rows.index, reverse=True)], dropped


@pytest.mark.parametrize("lam", [0.0, 0.3, 0.7, 1.0])
def test_selection_is_greedy_mmr_as_written_out(library, lam):
    # The library reuses the MMR reranker's picking and the tf-idf retriever's weights;
    # the picks must be those of the algorithm written out plainly.
    for query in ("Convert 7 km to miles", "miles to km please", "capital of France", "pounds"):
        for budget, k in ((20, 1), (60, 3), (100, 3), (2000, 7)):
            chosen = library.select(query, budget, k, mmr_lambda=lam)
            lines, dropped = _reference(library.examples, query, budget, k, lam)
            assert [e.line for e in chosen.examples] == lines
            assert [d.line for d in chosen.dropped] == dropped


def test_equally_redundant_copies_tie_and_the_better_ranked_comes():
    x, y = "linux cache list sort request", "strings retry python service"
    lib = ExampleLibrary(
        [Example(x, "a", 1), Example(y, "b", 2), Example(x, "c", 3), Example(y, "d", 4)]
    )
    chosen = lib.select("linux strings python", 500, 3, mmr_lambda=0.0)
    scores = {e.line: e.score for e in chosen.examples}
    assert scores[2] > scores[1]  # y matches two query words, x one: ranks 2, 4, 1, 3
    # λ = 0: line 2, then line 1 (unlike it); then lines 3 and 4 are both copies of a
    # picked input (cosine 1 in exact arithmetic), a tie that goes to the better rank,
    # line 4, not to the last bits of two float sums (which gave line 3 before).
    assert [e.line for e in chosen.examples] == [1, 4, 2]
