"""RST files load as kind ``rst``, and an index of them carries heading paths end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import ctxselect as cs
from ctxselect.ingest import load_paths
from ctxselect.ingest.kinds import kind_of

DJANGO = Path(__file__).resolve().parents[1] / "chunk" / "data" / "custom-management-commands.rst"
TITLE = "How to create custom ``django-admin`` commands"


def test_rst_names_get_the_rst_kind_and_text_names_keep_theirs() -> None:
    assert [kind_of(n) for n in ("a.rst", "B.RST", "c.rest", "d.txt", "e.adoc")] == [
        "rst",
        "rst",
        "rst",
        "text",
        "text",
    ]
    assert kind_of("manual.pdf") == "pdf"


def test_rst_files_load_with_their_text_unchanged(tmp_path: Path) -> None:
    raw = DJANGO.read_bytes().replace(b"\n", b"\r\n")  # a Windows checkout
    (tmp_path / "howto").mkdir()
    (tmp_path / "howto" / "custom-management-commands.rst").write_bytes(raw)
    (doc,) = load_paths(tmp_path).documents
    assert doc.kind == "rst" and doc.doc_id == "howto/custom-management-commands.rst"
    assert doc.text == DJANGO.read_text(encoding="utf-8")


def test_an_index_of_rst_docs_returns_hits_with_heading_paths(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "howto").mkdir(parents=True)
    (docs / "releases").mkdir()
    shutil.copy(DJANGO, docs / "howto" / "custom-management-commands.rst")
    (docs / "releases" / "5.0.rst").write_text(
        "========================\nDjango 5.0 release notes\n========================\n\n"
        "What's new in Django 5.0\n========================\n\n"
        "Minor features\n--------------\n\n"
        ":mod:`django.contrib.admin`\n~~~~~~~~~~~~~~~~~~~~~~~~~~~\n\n"
        "* The new :meth:`.AdminSite.get_log_entries` method allows customizing the "
        "queryset for the site's listed log entries.\n",
        encoding="utf-8",
    )
    index = tmp_path / "ix"
    report = cs.index_paths([docs], index, chunk=cs.ChunkSpec(chunker="auto", size=120))
    assert report.documents == 2
    hits = cs.open_index(index).search("implement a constructor in a BaseCommand subclass", k=3)
    assert hits[0].doc_id == "howto/custom-management-commands.rst"
    assert hits[0].header == f"{TITLE} > Command objects > Methods"
    release = cs.open_index(index).search("get_log_entries admin site", k=1)[0]
    # a bare heading merges with its subsections (as in Markdown): the run takes its path
    assert release.header == "Django 5.0 release notes > What's new in Django 5.0 > Minor features"
    assert release.text.startswith("Minor features\n--------------\n\n:mod:`django.contrib")
