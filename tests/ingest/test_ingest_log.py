"""Plain-text logs (``.log``) load as text, so folders of logs can be indexed."""

from __future__ import annotations

from pathlib import Path

from ctxselect.ingest import load_paths
from ctxselect.ingest.kinds import kind_of

LOG = (
    "2026-01-01 12:00:00 INFO server started on port 8080\n"
    "2026-01-01 12:00:05 ERROR disk full on /var\n"
)


def test_a_log_file_name_gets_the_text_loader() -> None:
    assert [kind_of(n) for n in ("app.log", "APP.LOG", "server.2026-01-01.log")] == ["text"] * 3


def test_a_folder_of_logs_is_loaded_not_skipped(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "app.log").write_text(LOG)
    (tmp_path / "logs" / "notes.txt").write_text("read the logs\n")
    result = load_paths([tmp_path / "logs"])
    assert {d.doc_id: d.kind for d in result.documents} == {"app.log": "text", "notes.txt": "text"}
    assert result.report.unsupported == 0 and result.report.unsupported_paths == ()
    (log,) = [d for d in result.documents if d.doc_id == "app.log"]
    assert log.text == LOG  # exactly the file's text: chunk offsets point into it


def test_a_named_log_file_is_loaded(tmp_path: Path) -> None:
    path = tmp_path / "app.log"
    path.write_text(LOG)
    result = load_paths([path])
    assert [(d.kind, d.text) for d in result.documents] == [("text", LOG)]
    assert result.report.skip_reason(str(path)) == ""
