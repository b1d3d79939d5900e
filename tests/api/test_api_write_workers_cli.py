"""`ctxselect index --workers N --executor local|ray [--ray-address ADDR]`: the flags are
the keyword arguments of ``index_paths``, and bad values are usage errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_api_write_workers import SPEC, _write_corpus, assert_same_index

import ctxselect as cs
from ctxselect.interfaces.cli import commands  # noqa: F401  (registers the commands)
from ctxselect.interfaces.cli.main import cli


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_index_with_two_workers_equals_the_serial_index(tmp_path: Path) -> None:
    corpus = _write_corpus(tmp_path / "corpus", docs=20)
    serial, pooled = tmp_path / "serial", tmp_path / "pooled"
    cs.index_paths([corpus], serial, chunk=SPEC, embedder="hash")
    flags = ["--chunker", "paragraph", "--size", "60", "--tokenizer", "chars4"]
    result = invoke("index", str(corpus), "--index", str(pooled), *flags, "--embedder", "hash",
                    "--workers", "2", "--executor", "local", "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)  # stdout is the report alone
    assert report["added"] == 20 and report["chunks"] > 20
    assert_same_index(serial, pooled)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--workers", "0"], "0 is not in the range x>=1"),
        (["--executor", "dask"], "'dask' is not one of 'local', 'ray'"),
    ],
)
def test_bad_flags_are_usage_errors(tmp_path: Path, flags: list[str], message: str) -> None:
    corpus = _write_corpus(tmp_path / "corpus", docs=2)
    result = invoke("index", str(corpus), "--index", str(tmp_path / "ix"), *flags)
    assert result.exit_code == 2 and message in result.stderr
    assert not (tmp_path / "ix").exists()


def test_an_address_without_ray_and_ray_without_its_extra_are_one_line_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = _write_corpus(tmp_path / "corpus", docs=2)
    ix = str(tmp_path / "ix")
    result = invoke("index", str(corpus), "--index", ix, "--ray-address", "10.0.0.1:6379")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: an address ('10.0.0.1:6379') is for the ray executor")
    monkeypatch.setitem(sys.modules, "ray", None)
    result = invoke("index", str(corpus), "--index", ix, "--workers", "2", "--executor", "ray")
    assert result.exit_code == 1 and "pip install 'ctxselect[ray]'" in result.stderr
    assert result.stderr.count("\n") == 1
