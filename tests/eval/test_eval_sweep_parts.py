"""Sweep parts without a corpus: grid files, results rows and keys, summaries, reports."""

from __future__ import annotations

import dataclasses
import json

import pytest

from ctxselect.errors import ConfigError, InputError
from ctxselect.eval import (
    CHUNK_STATS,
    DEFAULT_BUDGETS,
    KneeSettings,
    ResultBook,
    SweepGrid,
    append_results,
    budget_metric_names,
    cost_table,
    curves,
    make_grid,
    parse_size_flags,
    read_grid_file,
    read_results,
    recommend,
    render_html,
    size_points,
    sweep_tables,
)
from ctxselect.eval import results as results_module
from ctxselect.eval.summary import SweepReport, knee_trade_offs, trade_off

GRID_TOML = """
chunkers = ["tokens", "paragraph"]
modes = ["bm25", "tfidf"]
budgets = [2000, 500, 1000]

[sizes]
tokens = [256, 128]
paragraph = [800]
"""


def test_grid_file_with_per_chunker_sizes(tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text(GRID_TOML, encoding="utf-8")
    grid = make_grid(read_grid_file(path))
    assert grid.chunkers == ("tokens", "paragraph") and grid.modes == ("bm25", "tfidf")
    assert grid.budgets == (500, 1000, 2000)  # sorted
    assert grid.chunkings() == [("tokens", 128), ("tokens", 256), ("paragraph", 800)]
    assert grid.packers == ("skip",) and grid.tokenizer == "cl100k"
    assert grid.n_configurations() == 3 * 2 * 1 * 3


def test_flags_override_the_file_key_by_key(tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text(GRID_TOML, encoding="utf-8")
    grid = make_grid(read_grid_file(path), modes="bm25", sizes=parse_size_flags(["512"]))
    assert grid.modes == ("bm25",)
    assert grid.sizes_of("tokens") == (512,) and grid.sizes_of("paragraph") == (512,)
    one = make_grid(read_grid_file(path), sizes=parse_size_flags(["paragraph:1600,3200"]))
    assert one.sizes_of("paragraph") == (1600, 3200) and one.sizes_of("tokens") == (128, 256)


def test_defaults_and_flag_sizes():
    grid = make_grid(None, chunkers="tokens,paragraph")
    assert grid.budgets == DEFAULT_BUDGETS
    assert grid.sizes_of("tokens") == (128, 256, 512)
    assert grid.sizes_of("paragraph") == (800, 1600, 3200)  # characters
    assert parse_size_flags(["128,256", "paragraph:400"]) == {None: (128, 256), "paragraph": (400,)}


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("budgets = \n", InputError, "not valid TOML.*line 1"),
        ("colour = 'red'\n", ConfigError, "unknown key.*colour.*valid keys are chunkers"),
        ("budgets = [0, 500]\n", ConfigError, "budgets must hold numbers >= 1"),
        ("budgets = ['a']\n", ConfigError, "budgets must be a list of whole numbers"),
        ("chunkers = []\n", ConfigError, "chunkers is empty"),
        ("[sizes]\nmarkdown = [100]\n", ConfigError, "sizes given for chunker.*markdown"),
        ("tokenizer = 'a,b'\n", ConfigError, "tokenizer must be one name"),
    ],
)
def test_grid_file_errors_name_the_file(tmp_path, text, error, message):
    path = tmp_path / "grid.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(error, match=message) as caught:
        make_grid(read_grid_file(path))
    assert str(path) in str(caught.value)


def test_missing_grid_file_and_bad_size_flags(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_grid_file(tmp_path / "none.toml")
    with pytest.raises(ConfigError, match="whole numbers"):
        parse_size_flags(["tokens:12x"])


# --- results rows, keys and reuse ---

GRID = SweepGrid(chunkers=("tokens",), sizes={"tokens": (128, 256)}, budgets=(500, 1000, 2000))
METRICS = ("hit@1", "ndcg@10")


def book(labels_hash: str = "L") -> ResultBook:
    return ResultBook("toy", GRID, "doc", 10, "C", labels_hash, {"bm25": {"k1": 1.5}})


def recall(size: int, budget: int) -> float:
    """A toy curve: larger chunks and budgets find more, up to a plateau that grows with size."""
    return min(0.6 + size / 1280, 0.3 + budget / 2000 + size / 2560)


def hit(size: int, budget: int) -> float:
    """The toy's hit rate: above recall, still rising from 1,000 to 2,000 tokens."""
    return min(1.0, 0.5 + budget / 4000)


def all_rows(rb: ResultBook) -> list:
    rows = []
    for setting in rb.settings():
        size, budget = setting[1], setting[4]
        if budget is None:
            values = {
                "hit@1": 0.5,
                "ndcg@10": size / 1000,
                CHUNK_STATS[0]: size * 0.8,
                CHUNK_STATS[1]: size * 2.4,
            }
        else:
            r = recall(size, budget)
            measured = (r, hit(size, budget), 0.5, budget * 0.9, 3.0)
            values = dict(zip(budget_metric_names(budget), measured, strict=True))
        rows += [rb.row(setting, m, v, 20, 40) for m, v in values.items()]
    return rows


def test_keys_change_with_settings_and_content():
    rb = book()
    setting = ("tokens", 128, "bm25", "skip", 500, "none")
    assert rb.key(setting) == book().key(setting)
    assert rb.key(setting) != book("other labels").key(setting)
    assert rb.key(setting) != rb.key(("tokens", 128, "bm25", "skip", 1000, "none"))
    assert rb.key(("tokens", 128, "bm25", None, None, None)) != rb.key(setting)


def test_stop_rules_are_keyed_apart_and_fill_keys_stay_as_before(tmp_path):
    """A row of one stop rule is never reused for another; fill rows keep their old keys."""
    rb = book()
    fill = ("tokens", 128, "bm25", "skip", 500, "none")
    stops = [rb.key((*fill[:5], s)) for s in ("none", "auto", "0.3", "0.4")]
    assert len(set(stops)) == 4
    before = {  # the key of a fill row as sweeps wrote it before stop rules existed
        "corpus": "C", "labels": "L", "level": "doc", "tokenizer": "cl100k",
        "format": "markdown", "extra": {"bm25": {"k1": 1.5}}, "chunker": "tokens",
        "size": 128, "mode": "bm25", "packer": "skip", "budget": 500,
    }  # fmt: skip
    assert rb.key(fill) == results_module.config_key(before)
    two = dataclasses.replace(rb, grid=dataclasses.replace(GRID, stops=("none", "auto")))
    names = (*METRICS, *CHUNK_STATS)
    done = {(r.key, r.metric) for r in all_rows(rb)}  # every fill row measured
    plan = two.plan(names, done)
    assert plan[("tokens", 128, "bm25")] == (
        False,
        [("skip", 500, "auto"), ("skip", 1000, "auto"), ("skip", 2000, "auto")],
    )
    rows = all_rows(two)
    assert {r.stop for r in rows if r.budget} == {"none", "auto"}
    assert not {r.key for r in rows if r.stop == "auto"} & {key for key, _ in done}


def test_results_round_trip_and_plan_skips_what_is_done(tmp_path):
    rb, path = book(), tmp_path / "results.jsonl"
    names = (*METRICS, *CHUNK_STATS)
    plan = rb.plan(names, set())
    todo = [("skip", 500, "none"), ("skip", 1000, "none"), ("skip", 2000, "none")]
    assert plan[("tokens", 128, "bm25")] == (True, todo)
    rows = all_rows(rb)
    append_results(path, rows[:5])
    append_results(path, rows[5:])
    assert read_results(path) == rows
    done = {(r.key, r.metric) for r in read_results(path)}
    assert all(p == (False, []) for p in rb.plan(names, done).values())
    partial = {d for d in done if d[1] != "recall@1000t"}
    assert rb.plan(names, partial)[("tokens", 256, "bm25")] == (False, [("skip", 1000, "none")])
    assert rb.plan((*names, "mrr@10"), done)[("tokens", 128, "bm25")] == (True, [])


def test_rows_of_an_earlier_results_version_are_measured_again(tmp_path, monkeypatch):
    """Version 1's recall@Bt was a hit rate: its rows must not be reused as recall."""
    names = (*METRICS, *CHUNK_STATS)
    monkeypatch.setattr(results_module, "RESULTS_VERSION", 1)
    old = {(r.key, r.metric) for r in all_rows(book())}
    monkeypatch.undo()
    assert results_module.RESULTS_VERSION >= 2
    plan = book().plan(names, old)
    todo = [("skip", 500, "none"), ("skip", 1000, "none"), ("skip", 2000, "none")]
    assert all(p == (True, todo) for p in plan.values())
    assert not {r.key for r in all_rows(book())} & {key for key, _ in old}


def test_malformed_results_lines_name_file_and_line(tmp_path):
    path = tmp_path / "results.jsonl"
    append_results(path, all_rows(book())[:1])
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"key": "k"}) + "\n")
    with pytest.raises(InputError, match=rf"{path}:2: expected a JSON object with the keys"):
        read_results(path)
    assert read_results(tmp_path / "absent.jsonl") == []


# --- summaries and reports ---


KNEES = KneeSettings("recall", 0.038, 0.01)


def toy_report(tmp_path, knees: KneeSettings = KNEES) -> SweepReport:
    rows = all_rows(book())
    found = curves(rows, GRID, knees)
    best, knee = recommend(found, knees)
    return SweepReport(
        dataset="toy",
        corpus="c",
        queries_file="q.jsonl",
        labels_file="qrels.tsv",
        label_kind="documents",
        level="doc",
        documents=10,
        n_queries=20,
        excluded_no_relevant=1,
        unknown_queries=2,
        unknown_docs=3,
        spans_beyond_text=0,
        grid=GRID,
        metrics=METRICS,
        knee_metric=knees.metric,
        gain_per_1k=0.02,
        delta=knees.delta,
        epsilon=knees.epsilon,
        turns=10,
        cache_factor=0.1,
        sizes=tuple(size_points(rows, GRID, METRICS)),
        curves=tuple(found),
        recommended_configuration=best,
        recommended=knee,
        trade_offs=tuple(knee_trade_offs(next(c for c in found if c.label == best))),
        costs=tuple(cost_table(GRID.budgets, knee.budget, 10, 0.1)),
        uncached=tuple(cost_table(GRID.budgets, knee.budget, 10, 1.0)),
        out=str(tmp_path),
        files=(),
        computed=8,
        reused=0,
        seconds=1.0,
    )


def test_curves_knees_and_marginal_recall_from_rows(tmp_path):
    report = toy_report(tmp_path)
    small, large = report.curves
    assert small.label == "tokens-128/bm25/skip"
    assert [p.recall for p in small.points] == [recall(128, b) for b in (500, 1000, 2000)]
    assert [p.hit for p in small.points] == [hit(128, b) for b in (500, 1000, 2000)]
    assert small.points[0].per_1k_tokens is None
    assert small.points[1].per_1k_tokens == pytest.approx(0.2)  # 0.1 over 500 tokens
    assert (large.knee.budget, large.knee.next_budget) == (1000, 2000)
    assert large.knee.recall == pytest.approx(0.8) and not large.knee.at_edge
    # both knees are at 1,000 tokens; the larger chunks find more there
    assert report.recommended_configuration == "tokens-256/bm25/skip"
    assert report.sizes[0].cells()[4] == "10/20"  # hit@1 shown as top-1 correct


def test_the_knee_can_use_hit_instead_of_recall(tmp_path):
    report = toy_report(tmp_path, KneeSettings("hit", 0.038, 0.01))
    knee = report.recommended
    assert (knee.metric, knee.budget, knee.at_edge) == ("hit", 2000, True)  # hit still rises
    assert knee.recall == pytest.approx(hit(128, 2000))
    assert "at the edge: sweep larger budgets" in sweep_tables(report)


def test_a_knee_at_the_smallest_budget_swept_says_sweep_smaller_budgets(tmp_path):
    report = toy_report(tmp_path, KneeSettings("recall", 0.5, 0.01))  # nothing pays 0.5/1k
    knee = report.recommended
    assert (knee.budget, knee.at_lower_edge, knee.at_edge) == (500, True, False)
    text = sweep_tables(report)
    assert "at the lower edge: sweep smaller budgets (500 is the smallest swept" in text
    assert any(line.split()[1] == "500<" for line in text.splitlines() if "/bm25/" in line)


def test_a_knee_at_the_smallest_budget_select_takes_asks_for_no_smaller_one(tmp_path):
    report = toy_report(tmp_path, KneeSettings("recall", 0.5, 0.01))
    at_minimum = dataclasses.replace(  # as if 100 tokens, select's minimum, were swept first
        report, recommended=dataclasses.replace(report.recommended, budget=100)
    )
    text = sweep_tables(at_minimum)
    assert "at the lower edge, which is the smallest budget select takes (100 tokens)" in text
    assert "sweep smaller budgets (100" not in text
    assert "less may do as well, down to 100)" in sweep_tables(report)


def test_the_sweep_line_says_one_document_and_one_query_in_the_singular(tmp_path):
    one = dataclasses.replace(toy_report(tmp_path), documents=1, n_queries=1)
    assert sweep_tables(one).startswith("Sweep on toy: 1 document, 1 query, documents labels")
    assert "Sweep on toy: 10 documents, 20 queries," in sweep_tables(toy_report(tmp_path))


def test_the_sweep_line_names_the_first_ids_behind_each_count(tmp_path):
    named = dataclasses.replace(
        toy_report(tmp_path),
        excluded_no_relevant=7,
        excluded_query_ids=("q1", "q2", "q3", "q4", "q5", "q6", "q7"),
        unknown_query_ids=("q8", "q9"),
        unknown_doc_ids=("d1", "d2", "bad\nid"),
        empty_docs=1,
        empty_doc_ids=("995",),
    )
    line = sweep_tables(named).splitlines()[0]
    assert "7 queries without a judged-relevant document excluded: q1, q2, q3, q4, q5, ...;" in line
    assert "2 judged queries missing from the queries file: q8, q9;" in line
    assert "3 judgments naming documents not in the corpus: d1, d2, bad\\nid;" in line
    assert "1 judgments of documents that are empty (no text to index): 995)" in line
    # a count whose ids the caller did not give stays a bare count
    bare = sweep_tables(toy_report(tmp_path)).splitlines()[0]
    assert "1 queries without a judged-relevant document excluded;" in bare


def test_trade_offs_in_plain_words(tmp_path):
    report = toy_report(tmp_path)
    large = report.curves[1]
    assert trade_off(large, 2000, 1000) == (
        "2,000 tokens instead of 1,000: +0.0 recall points for 2× the cost per turn"
    )
    assert report.trade_offs == (
        "1,000 tokens instead of 500: +15.0 recall points for 2× the cost per turn",
        "2,000 tokens instead of 1,000: +0.0 recall points for 2× the cost per turn",
    )
    with pytest.raises(InputError, match="not swept"):
        trade_off(large, 4000, 1000)


def test_tables_are_in_the_lab_layout(tmp_path):
    text = sweep_tables(toy_report(tmp_path))
    assert "top-1 correct" in text and "answer in context" in text and "gain/1k tok" in text
    assert "hit@Bt" in text and "recall@Bt" in text and "1 queries without" in text
    assert (
        "Recommended: tokens-256/bm25/skip at 1,000 tokens (no larger budget gains δ per 1k "
        "tokens: the step to 2,000 gains 0.0000)"
    ) in text
    assert "δ = 0.02 × (1 + (10 − 1) × 0.1) = 0.0380" in text
    assert "1,000 tokens instead of 500: +15.0 recall points for 2× the cost per turn" in text
    assert "surplus over knee" in text and "without a prompt cache (c = 1)" in text


def test_html_report_is_self_contained(tmp_path):
    report = toy_report(tmp_path)
    page = render_html(report, {"recall_vs_budget.png": b"\x89PNG fake"})
    assert page.startswith("<!DOCTYPE html>") and "data:image/png;base64,iVBOR" in page
    assert 'src="http' not in page and "<link" not in page and "<script" not in page
    for needed in (
        "Knee per configuration",
        "gain/1k tok",
        "toy",
        "Cost of re-sent tokens",
        "no larger swept budget gains δ or more per 1,000 tokens",
        "Trade-off",
        "+15.0 recall points for 2× the cost per turn",
        "cl100k",
    ):
        assert needed in page
