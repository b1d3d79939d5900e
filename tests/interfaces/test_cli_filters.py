"""--include/--exclude/--where on search, select and eval: the API's filters, the same hits."""

from __future__ import annotations

import dataclasses
import json

import pytest
from cli_helpers import fails, run

import ctxselect as cs
from _support.filter_corpus import QUERY, build, write_labels


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return str(build(tmp_path_factory.mktemp("cli-filters")))


def _ids(hits) -> list[tuple[str, float]]:
    return [(h["chunk_id"], h["score"]) for h in hits]


@pytest.mark.parametrize(
    ("flags", "kwargs"),
    [
        (["--include", "howto/"], {"include": ["howto/"]}),
        (["--exclude", "releases/", "--exclude", "src/"], {"exclude": ["releases/", "src/"]}),
        (["--where", "kind=code"], {"where": ["kind=code"]}),
        (
            ["--include", "howto/", "--where", "status=draft", "--where", "section=guide"],
            {"include": ["howto/"], "where": ["status=draft", "section=guide"]},
        ),
    ],
)
def test_search_flags_and_api_keywords_agree(folder, flags, kwargs):
    out = json.loads(run("search", QUERY, "-k", "10", "--index", folder, "--json", *flags).stdout)
    with cs.open_index(folder) as idx:
        expected = [dataclasses.asdict(h) for h in idx.search(QUERY, 10, **kwargs)]
    assert out and _ids(out) == _ids(expected)


def test_search_returns_k_filtered_hits_where_the_unfiltered_top_k_has_none(folder):
    top = json.loads(run("search", QUERY, "-k", "10", "--index", folder, "--json").stdout)
    assert not any(h["doc_id"].startswith("howto/") for h in top)
    hits = json.loads(
        run("search", QUERY, "-k", "10", "--exclude", "releases/", "--exclude", "src/",
            "--index", folder, "--json").stdout
    )  # fmt: skip
    assert len(hits) == 10 and all(h["doc_id"].startswith("howto/") for h in hits)


def test_select_takes_the_filters(folder):
    result = run("select", QUERY, "--budget", "300", "--include", "howto/h0*", "--stop", "none",
                 "--index", folder, "--json")  # fmt: skip
    selection = json.loads(result.stdout)
    assert selection["chunks"] and selection["tokens_used"] <= 300
    assert all(c["doc_id"].startswith("howto/h0") for c in selection["chunks"])
    with cs.open_index(folder) as idx:
        api = idx.select(QUERY, 300, stop="none", include=["howto/h0*"])
    assert [c["chunk_ids"] for c in selection["chunks"]] == [list(c.chunk_ids) for c in api.chunks]


def test_an_empty_result_names_the_filter_on_stderr(folder):
    result = run("search", QUERY, "--include", "nothing/", "--index", folder)
    assert result.stderr == "no hits: include 'nothing/' matches none of the 75 documents\n"
    result = run("select", QUERY, "--where", "kind=pdf", "--index", folder)
    assert "where kind=pdf matches none of the 75 documents" in result.stderr
    selection = json.loads(run("select", QUERY, "--where", "kind=pdf", "--index", folder,
                               "--json").stdout)  # fmt: skip
    assert selection["note"] == "where kind=pdf matches none of the 75 documents"


def test_bad_filters_are_usage_errors_or_one_line_errors(folder):
    usage = fails("search", QUERY, "--include", "[abc", "--index", folder, code=2)
    assert "invalid include glob '[abc' at position 0" in usage
    usage = fails("select", QUERY, "--where", "kind", "--index", folder, code=2)
    assert "'kind' has no '=': write key=value" in usage
    error = fails("search", QUERY, "--where", "venue=food", "--index", folder)
    assert error.startswith("error: where key 'venue' is not stored in this index: its documents "
                            "have kind, language, path, section, status, title")  # fmt: skip


def test_info_lists_the_where_keys(folder):
    out = run("info", "--index", folder).stdout
    assert "where keys = kind, language, path, title, section, status\n" in out
    assert json.loads(run("info", "--index", folder, "--json").stdout)["fields"] == [
        "kind", "language", "path", "title", "section", "status"
    ]  # fmt: skip


def test_eval_takes_the_filters(tmp_path):
    corpus, queries, qrels = write_labels(tmp_path)
    common = ["eval", "--corpus", str(corpus), "--queries", str(queries), "--qrels", str(qrels),
              "--index", str(tmp_path / "ix"), "--metrics", "mrr@10"]  # fmt: skip
    kept = run(*common, "--where", "venue=garden")
    assert "filter: --where venue=garden" in kept.stdout
    gone = json.loads(run(*common, "--exclude", "d3", "--json").stdout)
    assert gone["filter"] == "--exclude 'd3'" and gone["metrics"]["mrr@10"] == 0.0
