"""Turn a current index into what an older ctxselect wrote (for upgrade tests)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ctxselect.stores.embedded import integrity
from ctxselect.stores.embedded.sqlite import FILE_NAME


def as_schema_3(folder: Path) -> None:
    """Make ``folder`` what ctxselect wrote before filters: no doc_fields table."""
    conn = sqlite3.connect(folder / FILE_NAME, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("DROP TABLE doc_fields")
    conn.execute("UPDATE manifest SET value = '3' WHERE key = 'schema_version'")
    integrity.seal(conn)
    conn.execute("COMMIT")
    conn.close()
