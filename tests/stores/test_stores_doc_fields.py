"""The one rule both stores and the filter code share for document metadata."""

from __future__ import annotations

from ctxselect.api.filters import BUILTIN_KEYS
from ctxselect.stores import doc_fields


def test_own_kind_and_path_win_and_a_user_title_stands_in_only_for_none() -> None:
    user = {"kind": "pdf", "path": "elsewhere", "title": "Front", "status": "draft"}
    assert doc_fields.merged("markdown", "a.md", "", user) == {
        "kind": "markdown", "path": "a.md", "title": "Front", "status": "draft"
    }  # fmt: skip
    assert doc_fields.merged("markdown", "a.md", "Own", user)["title"] == "Own"
    assert doc_fields.merged("text", "b", "") == {"kind": "text", "path": "b", "title": ""}
    assert doc_fields.merged("code", "c.py", "", (("language", "python"),))["language"] == "python"


def test_keys_list_the_stored_ones_first_then_user_keys_sorted_once() -> None:
    assert doc_fields.all_keys(["status", "title", "area", "status"]) == [
        "kind", "path", "title", "area", "status"
    ]  # fmt: skip
    assert doc_fields.all_keys([]) == list(doc_fields.STORED_KEYS)
    assert BUILTIN_KEYS == doc_fields.FILTER_KEYS
    assert set(doc_fields.STORED_KEYS) < set(doc_fields.FILTER_KEYS)
