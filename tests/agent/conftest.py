"""Fixtures of the session tests: the small sessions corpus, indexed, and Sessions on it."""

from __future__ import annotations

import pytest

from _support.sessions_corpus import build
from ctxselect.agent import Sessions


@pytest.fixture
def corpus_index(tmp_path):
    """(corpus folder, index folder) of the sessions corpus."""
    return build(tmp_path)


@pytest.fixture
def service(corpus_index):
    opened = Sessions.open(corpus_index[1])
    yield opened
    opened.close()
