"""Idle sessions are forgotten: driven by an injected clock, no sleeping."""

from __future__ import annotations

import pytest

from _support.sessions_corpus import FIRST, build
from ctxselect.agent import Sessions
from ctxselect.agent.memory import IDLE_SECONDS
from ctxselect.errors import ConfigError


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def folder(tmp_path):
    return build(tmp_path)[1]


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def service(folder, clock):
    opened = Sessions.open(folder, clock=clock, idle_seconds=IDLE_SECONDS)
    yield opened
    opened.close()


def test_sessions_are_kept_while_the_process_lives_unless_told(folder):
    """Over stdio (and in Python) the one session lasts as long as the process: an agent
    back after a long pause still holds what it was sent. HTTP servers pass an expiry."""
    opened = Sessions.open(folder)
    try:
        assert opened.idle_seconds is None
        assert IDLE_SECONDS == 3600
    finally:
        opened.close()


def test_a_session_used_within_the_hour_keeps_its_memory(service, clock):
    first = service.select("s", FIRST, 300)
    clock.now += IDLE_SECONDS - 1
    again = service.select("s", FIRST, 300)
    assert again.references and again.call == first.call + 1
    clock.now += IDLE_SECONDS - 1  # idle time counts from the last call
    assert service.select("s", FIRST, 300).references


def test_a_call_on_an_expired_session_is_answered_as_a_new_sessions(service, clock):
    first = service.select("s", FIRST, 300)
    service.grep("s", "backoff")
    clock.now += IDLE_SECONDS
    again = service.select("s", FIRST, 300)
    assert again.references == () and again.pieces == first.pieces  # sent again, no error
    assert (again.call, again.session_tokens) == (1, again.result_tokens)
    clock.now += IDLE_SECONDS
    regrep = service.grep("s", "backoff")
    assert regrep.references == () and regrep.blocks and regrep.call == 1


def test_idle_sessions_are_released_when_any_session_calls(service, clock):
    for name in ("a", "b", "c"):
        service.select(name, FIRST, 300)
        clock.now += 600
    clock.now += IDLE_SECONDS - 1800  # "a" is an hour idle, "b" and "c" are not
    service.info()  # a call without a session releases nothing
    assert list(service._sessions) == ["a", "b", "c"]
    service.search("d", "cache", 1)
    assert list(service._sessions) == ["b", "c", "d"]
    clock.now += IDLE_SECONDS
    service.get_chunk("e", "cache.md#1")
    assert list(service._sessions) == ["e"]


def test_no_idle_expiry_when_asked(folder, clock):
    opened = Sessions.open(folder, clock=clock, idle_seconds=None)
    try:
        opened.select("s", FIRST, 300)
        clock.now += 10 * IDLE_SECONDS
        assert opened.select("s", FIRST, 300).references
    finally:
        opened.close()


def test_the_session_limit_still_evicts_the_least_recently_used(folder, clock):
    opened = Sessions.open(folder, clock=clock, max_sessions=2)
    try:
        for name in ("a", "b", "a", "c"):
            opened.select(name, FIRST, 300)
        assert list(opened._sessions) == ["a", "c"]
    finally:
        opened.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_sessions": 0}, "max_sessions must be a whole number of at least 1, got 0"),
        ({"max_sessions": 2.5}, "max_sessions must be a whole number of at least 1, got 2.5"),
        ({"idle_seconds": 0}, "idle_seconds must be above 0, got 0: .* or None"),
        ({"idle_seconds": -5.0}, "idle_seconds must be above 0, got -5.0"),
        ({"idle_seconds": "1h"}, "idle_seconds must be above 0, got '1h'"),
    ],
)
def test_bad_session_limits_are_refused_when_opening(folder, options, message):
    with pytest.raises(ConfigError, match=message):
        Sessions.open(folder, **options)
