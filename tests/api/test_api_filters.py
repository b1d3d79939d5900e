"""Filters through the Python API: include/exclude globs and where metadata, inside retrieval."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import ctxselect as cs
from _support.filter_corpus import QUERY, build, write_beir, write_labels
from _support.old_schemas import as_schema_3 as _as_schema_3
from ctxselect.api import evaluate
from ctxselect.api.globs import doc_filter
from ctxselect.errors import ConfigError
from ctxselect.stores.embedded import opening
from ctxselect.stores.embedded.sqlite import SCHEMA_VERSION, SQLiteStore
from ctxselect.types import Document


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build(tmp_path_factory.mktemp("filters"))


@pytest.fixture(scope="module")
def idx(folder):
    with cs.open_index(folder) as index:
        yield index


def _docs(hits) -> list[str]:
    return [h.doc_id for h in hits]


@pytest.mark.parametrize("mode", ["bm25", "tfidf", "tfidf-sum"])
def test_k_matching_hits_come_back_where_filtering_the_top_k_gives_none(idx, mode):
    top = idx.search(QUERY, 10, mode)
    assert all(d.startswith("releases/") for d in _docs(top))  # post-filtering: nothing
    everything = idx.search(QUERY, 1000, mode)
    expected = [h for h in everything if h.doc_id.startswith("howto/")][:10]
    assert everything.index(expected[0]) >= 60  # the howtos rank 61st and below
    hits = idx.search(QUERY, 10, mode, include=["howto/"])
    assert len(hits) == 10
    assert [(h.chunk_id, h.score) for h in hits] == [(h.chunk_id, h.score) for h in expected]
    assert [h.rank for h in hits] == list(range(1, 11))
    assert idx.search(QUERY, 10, mode, exclude=["releases/", "src/"]) == hits


def test_include_exclude_and_where_combine(idx):
    assert set(_docs(idx.search(QUERY, 50, include="*.py"))) == {"src/manage.py"}
    assert set(_docs(idx.search(QUERY, 50, where=["kind=code"]))) == {
        "src/manage.py",
        "src/manage.ts",
    }
    assert _docs(idx.search(QUERY, 50, where="language=typescript")) == ["src/manage.ts"]
    drafts = _docs(idx.search(QUERY, 50, where=["status=draft"]))
    assert sorted(drafts) == ["howto/h00.md", "howto/h03.md", "howto/h06.md", "howto/h09.md"]
    either = idx.search(QUERY, 50, where=["status=draft", "status=published"])  # same key: OR
    assert len(either) == 12
    both = idx.search(QUERY, 50, where={"status": "draft", "title": "Howto 3"})  # keys: AND
    assert _docs(both) == ["howto/h03.md"]
    globbed = idx.search(QUERY, 50, include=["howto/"], exclude=["h0*"], where=["section=guide"])
    assert sorted(_docs(globbed)) == ["howto/h10.md", "howto/h11.md"]
    assert _docs(idx.search(QUERY, 5, where=["path=releases/r07.md"])) == ["releases/r07.md"]


def test_search_many_and_rank_take_the_same_filter(idx):
    many = idx.search_many({"a": QUERY, "b": "command"}, 5, include=["howto/"])
    assert many["a"] == idx.search(QUERY, 5, include=["howto/"])
    assert all(d.startswith("howto/") for d in _docs(many["b"])) and len(many["b"]) == 5
    assert idx.rank(QUERY, 5, include=["howto/"]) == many["a"]


def test_select_and_its_stop_work_on_the_filtered_ranking(idx):
    selection = idx.select(QUERY, 400, stop="none", exclude=["releases/"])
    assert selection.chunks and selection.tokens_used <= 400
    assert all(not c.doc_id.startswith("releases/") for c in selection.chunks)
    auto = idx.select(QUERY, 400, include=["howto/"])
    assert auto.chunks and all(c.doc_id.startswith("howto/") for c in auto.chunks)
    assert auto.stop and auto.note == ""


def test_a_filter_that_leaves_nothing_says_which(idx):
    assert idx.search(QUERY, 10, include=["nothing/"]) == []
    assert idx.filter_note(include=["nothing/"]) == (
        "include 'nothing/' matches none of the 75 documents"
    )
    assert idx.filter_note(include=["howto/"], exclude=["*.md"]) == (
        "exclude '*.md' leaves none of the 12 documents include kept"
    )
    assert idx.filter_note(where=["kind=pdf"]) == "where kind=pdf matches none of the 75 documents"
    assert idx.filter_note(include=["garden.txt"]) == (
        "no chunk of the 1 document that --include 'garden.txt' keeps matches the query"
    )
    assert idx.filter_note() == ""
    empty = idx.select(QUERY, 400, where=["kind=pdf"])
    assert empty.chunks == () and empty.note == "where kind=pdf matches none of the 75 documents"


def test_bad_filters_are_one_line_errors_that_say_how_to_fix_them(idx):
    with pytest.raises(ConfigError, match=r"invalid include glob '\[abc' at position 0"):
        idx.search(QUERY, include=["[abc"])
    with pytest.raises(
        ConfigError, match=r"invalid exclude glob .* at position 1: a trailing backslash"
    ):
        idx.select(QUERY, 400, exclude=["a\\"])
    with pytest.raises(ConfigError, match=r"'src/\[z-a\]' at position 5: the range z-a runs back"):
        idx.search(QUERY, include=["src/[z-a]"])  # was a re.error traceback from pathspec
    with pytest.raises(ConfigError, match=r"does not translate to a valid pattern \(bad char"):
        idx.search(QUERY, include=["[\\z-a]"])  # what the position checks miss
    with pytest.raises(ConfigError, match="'kind' has no '=': write key=value"):
        idx.search(QUERY, where=["kind"])
    with pytest.raises(ConfigError, match="needs a key before '='"):
        idx.search(QUERY, where=["=code"])
    with pytest.raises(ConfigError) as unknown:
        idx.search(QUERY, where=["venue=food"])
    assert str(unknown.value).startswith(
        "where key 'venue' is not stored in this index: its documents have kind, language, "
        "path, section, status, title"
    )


def test_info_lists_the_keys_where_filters_on(idx):
    assert idx.info().fields == ("kind", "language", "path", "title", "section", "status")


def test_beir_metadata_is_stored_and_filterable(tmp_path):
    corpus = write_beir(tmp_path / "beir")
    with cs.build_index([corpus], tmp_path / "ix") as idx:
        assert idx.info().fields == ("kind", "language", "path", "title", "open", "tags", "venue",
                                     "year")  # fmt: skip
        assert sorted(_docs(idx.search("onions", 10, where=["year=2020"]))) == ["d1", "d3"]
        assert _docs(idx.search("onions", 10, where=["open=true"])) == ["d1"]
        assert _docs(idx.search("onions", 10, where=['tags=["a","b"]'])) == ["d1"]  # nested: JSON
        food_2021 = idx.search("onions", 10, where=["venue=food", "year=2021"])
        assert _docs(food_2021) == ["d2"]
        assert _docs(idx.search("onions", 10, where=["kind=beir", "title=Garlic"])) == ["d4"]
        assert idx.store.document_fields(["d2"])["d2"] == {
            "kind": "beir",
            "path": "d2",
            "title": "Onions again",
            "year": "2021",
            "venue": "food",
            "open": "false",
        }  # fmt: skip  (a null value is skipped)


def test_updates_keep_fields_current_and_filter_delta_rows(tmp_path):
    folder = tmp_path / "ix"
    docs = [Document(f"n{i}.md", f"onion note {i}", content_hash=str(i)) for i in range(20)]
    cs.add_documents(docs, folder)
    fresh = Document(
        "new.md", "onion soup", content_hash="new", kind="markdown", fields=(("diet", "vegan"),)
    )
    cs.add_documents([fresh], folder)
    with cs.open_index(folder) as idx:
        assert idx.info().delta_segments >= 1  # searched before compaction
        assert _docs(idx.search("onion", 5, where=["diet=vegan"])) == ["new.md"]
        assert _docs(idx.search("onion", 5, include=["new.md"])) == ["new.md"]
    changed = Document("new.md", "onion soup", content_hash="new2", fields=(("diet", "meat"),))
    cs.add_documents([changed], folder)
    with cs.open_index(folder) as idx:
        assert idx.search("onion", 5, where=["diet=vegan"]) == []
        assert _docs(idx.search("onion", 5, where=["diet=meat"])) == ["new.md"]
    cs.remove_documents(["new.md"], folder)
    with (
        cs.open_index(folder) as idx,
        pytest.raises(ConfigError, match="where key 'diet' is not stored"),
    ):
        idx.search("onion", 5, where=["diet=meat"])


def test_a_schema_3_index_opens_and_filters_by_path_and_kind(tmp_path, monkeypatch):
    folder = build(tmp_path)
    _as_schema_3(folder)
    with monkeypatch.context() as read_only:
        read_only.setattr(opening.os, "access", lambda path, mode: mode != opening.os.W_OK)
        with cs.open_index(folder) as idx:
            assert idx.store.schema_version == 3
            hits = idx.search(QUERY, 10, include=["howto/"])
            assert len(hits) == 10 and all(d.startswith("howto/") for d in _docs(hits))
            assert set(_docs(idx.search(QUERY, 10, where=["kind=code"]))) == {
                "src/manage.py",
                "src/manage.ts",
            }
            assert idx.info().fields == ("kind", "language", "path", "title")
            with pytest.raises(ConfigError, match="documents have kind, language, path, title"):
                idx.search(QUERY, where=["status=draft"])
    with cs.open_index(folder) as idx:  # a search never writes, in a writable folder too
        assert idx.store.schema_version == 3 and idx.search(QUERY, 1)
    store = SQLiteStore(folder)
    with store.lock():  # a writer upgrades it: the table is added, empty
        pass
    store.close()
    with cs.open_index(folder) as idx:
        manifest = idx.store.read_manifest()
        assert manifest["schema_version"] == SCHEMA_VERSION == 4
        assert manifest["migrated_from"] == 3
        assert len(idx.search(QUERY, 10, exclude=["releases/"])) == 10
        with pytest.raises(ConfigError, match="where key 'section' is not stored"):
            idx.search(QUERY, 10, where=["section=guide"])  # indexed before: no user fields
    assert cs.verify_index(folder).ok
    SQLiteStore(folder).close()


def test_eval_ranks_only_what_the_filter_keeps(tmp_path):
    corpus, queries, qrels = write_labels(tmp_path)
    plain = evaluate.evaluate_corpus(
        corpus, queries, qrels, index=tmp_path / "ix", metrics="mrr@10"
    )
    kept = evaluate.evaluate_corpus(
        corpus, queries, qrels, index=tmp_path / "ix", metrics="mrr@10", where=["venue=garden"]
    )
    gone = evaluate.evaluate_corpus(
        corpus, queries, qrels, index=tmp_path / "ix", metrics="mrr@10", exclude=["d3"]
    )
    assert plain.filter == "" and kept.filter == "--where venue=garden"
    assert kept.metrics["mrr@10"] == 1.0 and gone.metrics["mrr@10"] == 0.0
    assert gone.filter == "--exclude 'd3'"


def test_a_large_index_read_per_hit_filters_the_same(folder, idx, monkeypatch):
    from ctxselect.stores.embedded import sqlite as embedded_sqlite

    monkeypatch.setattr(embedded_sqlite, "TEXTS_IN_MEMORY_MAX", 0)  # rows read per hit
    with cs.open_index(folder) as lazy:
        hits = lazy.search(QUERY, 10, include=["howto/"], where=["status=published"])
        assert lazy._lazy and len(hits) == 8
        assert hits == idx.search(QUERY, 10, include=["howto/"], where=["status=published"])


def test_rows_read_per_hit_filter_an_index_with_rows_deleted_since_its_base(tmp_path, monkeypatch):
    from ctxselect.stores.embedded import sqlite as embedded_sqlite

    folder = tmp_path / "ix"
    docs = [Document(f"n{i}.md", f"onion note {i}", content_hash=str(i)) for i in range(20)]
    cs.add_documents(docs, folder)
    changed = Document("n3.md", "onion soup", content_hash="new", fields=(("diet", "vegan"),))
    cs.add_documents([changed], folder, compact_fraction=None)  # n3's old row is dead
    cs.remove_documents(["n4.md"], folder, compact_fraction=None)
    with cs.open_index(folder) as eager:
        assert eager.info().delta_segments >= 1
        expected = {
            "vegan": eager.search("onion", 5, where=["diet=vegan"]),
            "globs": eager.search("onion", 30, exclude=["n1*.md"]),
            "none": eager.filter_note(include=["n4.md"]),
        }
    assert _docs(expected["vegan"]) == ["n3.md"] and len(expected["globs"]) == 8
    assert expected["none"] == "include 'n4.md' matches none of the 19 documents"
    monkeypatch.setattr(embedded_sqlite, "TEXTS_IN_MEMORY_MAX", 0)  # rows read per hit
    with cs.open_index(folder) as lazy:
        assert lazy.search("onion", 5, where=["diet=vegan"]) == expected["vegan"]
        assert lazy._lazy
        assert lazy.search("onion", 30, exclude=["n1*.md"]) == expected["globs"]
        assert lazy.filter_note(include=["n4.md"]) == expected["none"]


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_dense_and_hybrid_filter_a_stored_index_with_deltas(tmp_path, mode):
    folder = tmp_path / "ix"
    root = tmp_path / "corpus"
    build(tmp_path)  # writes the corpus (and a keyword index beside it)
    cs.index_paths([root], folder, embedder="hash", ann_threshold=5)
    late = Document("howto/late.md", "a late note on the management command", content_hash="l")
    cs.add_documents([late], folder)
    with cs.open_index(folder) as idx:
        assert idx.info().delta_segments >= 1  # the graph, plus delta rows searched exactly
        everything = idx.search(QUERY, 200, mode)
        hits = idx.search(QUERY, 5, mode, include=["howto/"])
        assert len(hits) == 5 and all(d.startswith("howto/") for d in _docs(hits))
        narrow = idx.search(QUERY, 3, mode, include=["howto/late.md", "howto/h01.md"])
        # one chunk each (a howto's front matter is in no chunk): every allowed chunk comes back
        assert sorted(_docs(narrow)) == ["howto/h01.md", "howto/late.md"]
        if mode == "dense":  # exact over the allowed rows: the unfiltered order, filtered
            ranked = [h.chunk_id for h in everything if h.doc_id.startswith("howto/")]
            assert [h.chunk_id for h in narrow] == [
                c for c in ranked if c.startswith(("howto/late.md", "howto/h01.md"))
            ]


@given(st.text(alphabet="az[]!^-\\*?/#. ", min_size=1, max_size=12))
def test_a_glob_is_either_refused_with_a_config_error_or_usable(glob):
    try:
        keep = doc_filter([glob], [])
    except ConfigError as exc:
        assert f"invalid include glob {glob!r}" in str(exc)
    else:
        keep(["a.py", "z/a", "a]b"])  # matching never raises
