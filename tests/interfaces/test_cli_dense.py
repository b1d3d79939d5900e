"""Dense and hybrid through the CLI: index --embedder, search/select modes, mmr, promote."""

from __future__ import annotations

import json

import pytest
from cli_helpers import fails, run
from click.testing import CliRunner

from _support.sessions_corpus import ALPHA, OLDEST, WEATHER, write_guide
from ctxselect import api
from ctxselect.interfaces.cli import commands, experiments, tune  # noqa: F401  (register)
from ctxselect.interfaces.cli.main import cli


@pytest.fixture
def guide_index(tmp_path):
    corpus = write_guide(tmp_path / "corpus")
    folder = str(tmp_path / "ix")
    run("index", str(corpus), "--index", folder, "--chunker", "markdown", "--size", "40",
        "--embedder", "hash", "--json")  # fmt: skip
    return folder


@pytest.fixture
def keyword_index(tmp_path):
    corpus = write_guide(tmp_path / "kcorpus")
    folder = str(tmp_path / "kw")
    run("index", str(corpus), "--index", folder, "--json")
    return folder


def test_index_with_hash_embedder_records_it(guide_index):
    info = json.loads(run("info", "--index", guide_index, "--json").stdout)
    assert "dense" in info["modes"]
    embedder = info["settings"]["embedder"]
    assert embedder["name"] == "hash" and embedder["dim"] > 0 and embedder["model_id"]
    assert embedder["ann_threshold"] == 50_000
    text = run("info", "--index", guide_index).stdout
    assert f"embedder = hash (model {embedder['model_id']}, {embedder['dim']} dims" in text
    assert "fusion = rrf k=60 w=0.50 (untuned default: run `ctxselect tune`)" in text


def test_ann_threshold_is_recorded_and_none_drops_dense(guide_index):
    run("index", "--index", guide_index, "--embedder", "hash", "--ann-threshold", "7")
    info = json.loads(run("info", "--index", guide_index, "--json").stdout)
    assert info["settings"]["embedder"]["ann_threshold"] == 7
    run("index", "--index", guide_index, "--embedder", "none")
    info = json.loads(run("info", "--index", guide_index, "--json").stdout)
    assert info["settings"]["embedder"] is None and "dense" not in info["modes"]
    assert "embedder = none" in run("info", "--index", guide_index).stdout


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_search_dense_and_hybrid_json(guide_index, mode):
    args = ["search", "alpha cache", "--mode", mode, "-k", "3", "--index", guide_index]
    hits = json.loads(run(*args, "--json").stdout)
    assert 1 <= len(hits) <= 3 and [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    with api.open_index(guide_index) as idx:
        expected = idx.search("alpha cache", 3, mode)
    assert [h["chunk_id"] for h in hits] == [h.chunk_id for h in expected]
    assert all(h["doc_id"] == "guide.md" for h in hits[:2])


def test_search_with_mmr_matches_index_rank(guide_index):
    args = ["search", "alpha cache entries", "--mmr", "0.3", "-k", "4", "--index", guide_index]
    hits = json.loads(run(*args, "--json").stdout)
    with api.open_index(guide_index) as idx:
        expected = idx.rank("alpha cache entries", 4, None, mmr=0.3)
        plain = idx.search("alpha cache entries", 4)
    assert [h["chunk_id"] for h in hits] == [h.chunk_id for h in expected]
    assert sorted(h["chunk_id"] for h in hits) == sorted(h.chunk_id for h in plain)


def test_select_with_mmr_and_promote_sends_the_whole_section(guide_index):
    args = ["select", "alpha cache entries", "--budget", "300", "--mmr", "0.5",
            "--stop", "none", "--index", guide_index]  # fmt: skip
    plain = json.loads(run(*args, "--json").stdout)
    promoted = json.loads(run(*args, "--promote", "--json").stdout)
    assert all(len(p["chunk_ids"]) == 1 for p in plain["chunks"])  # two pieces, a gap between
    assert not any(WEATHER.strip() in p["text"] for p in plain["chunks"])
    section = next(p for p in promoted["chunks"] if len(p["chunk_ids"]) > 1)
    assert section["chunk_ids"] == ["guide.md#1", "guide.md#2", "guide.md#3"]
    for sentence in (ALPHA, WEATHER, OLDEST):
        assert sentence.strip() in section["text"]
    assert promoted["tokens_used"] <= promoted["budget"] == 300
    text = run(*args, "--promote")
    assert WEATHER.strip() in text.stdout and "/300 tokens" in text.stderr


def test_mmr_outside_zero_one_is_a_usage_error(guide_index):
    for value in ("1.5", "-0.1"):
        message = fails("select", "cache", "--budget", "100", "--mmr", value, "--index",
                        guide_index, code=2)  # fmt: skip
        assert "mmr must be a number from 0 to 1" in message and value in message
    assert "mmr must be" in fails("search", "cache", "--mmr", "2", "--index", guide_index, code=2)


def test_dense_modes_on_a_keyword_index_name_the_fix(keyword_index):
    for mode in ("dense", "hybrid"):
        message = fails("search", "cache", "--mode", mode, "--index", keyword_index)
        assert "has no dense vectors" in message
        assert f"ctxselect index --index {keyword_index} --embedder minilm" in message
    message = fails("select", "cache", "--budget", "200", "--mmr", "0.5", "--index",
                    keyword_index)  # fmt: skip
    assert "mmr compares the chunks' dense vectors" in message and "--embedder" in message


def test_rerank_model_that_is_not_a_folder(guide_index, tmp_path):
    missing = str(tmp_path / "no-model")
    for args in (["select", "cache", "--budget", "200"], ["search", "cache"]):
        message = fails(*args, "--rerank-model", missing, "--index", guide_index)
        assert f"no cross-encoder model at {missing}" in message and "save_pretrained" in message


def test_unknown_embedder_lists_the_names(tmp_path):
    corpus = write_guide(tmp_path / "c")
    args = ["--index", str(tmp_path / "x"), "--embedder", "nope"]
    message = fails("index", str(corpus), *args, code=2)  # a usage error, as --chunker
    assert "unknown embedder 'nope'" in message and "hash" in message and "minilm" in message
    assert "none" in message and not (tmp_path / "x").exists()  # no half-made index


def test_ann_threshold_below_one_is_a_usage_error(tmp_path):
    corpus = write_guide(tmp_path / "c")
    result = CliRunner().invoke(cli, ["index", str(corpus), "--index", str(tmp_path / "x"),
                                      "--embedder", "hash", "--ann-threshold", "0"])  # fmt: skip
    assert result.exit_code == 2 and "--ann-threshold" in result.stderr
