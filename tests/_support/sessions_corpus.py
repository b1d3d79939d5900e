"""A small Markdown corpus and its index, shared by the session, examples and MCP tests.

Three guides with four sections each; with 80-token markdown chunks every section is its
own chunk, so two questions about one topic share chunks and a session sees repeats.
A second corpus (``write_guide``) has a section split into three chunks, for promotion.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ctxselect import api
from ctxselect.config import ChunkSpec

SECTIONS: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "install.md": (
        "Install",
        [
            ("Linux", "Install the agent on Linux with the apt package. The service runs "
             "under systemd and writes its log to the journal. Upgrades come through the "
             "same package, and the service restarts by itself after an upgrade."),
            ("macOS", "Install the agent on macOS with Homebrew. A launch agent starts the "
             "service at login and restarts it when it stops. The log goes to the unified "
             "system log, where Console shows it under the agent's name."),
            ("Windows", "Install the agent on Windows with the MSI installer. The service "
             "registers itself with the service control manager and starts at boot. The "
             "installer also adds the agent to the PATH of new shells."),
            ("Proxy", "Behind a proxy, set HTTPS_PROXY before you install the agent; the "
             "installer reads it for every download. The running service reads the same "
             "variable, so set it for the service account too."),
        ],
    ),
    "cache.md": (
        "Cache",
        [
            ("Eviction", "The cache evicts the least recently used entries when it reaches "
             "its size limit. Eviction runs in a background thread, so requests never wait "
             "for it, and it frees a tenth of the entries each time it runs."),
            ("Sizing", "Size the cache at a tenth of the memory. A larger cache raises the "
             "hit rate of the cache but makes eviction slower, and a cache that swaps to disk "
             "is slower than no cache at all."),
            ("Invalidation", "Cache entries are invalidated when their source file changes; "
             "the cache compares content hashes to notice. Touching a file without changing "
             "its content keeps its entries valid."),
            ("Warmup", "At startup the cache warms up from the snapshot it wrote at "
             "shutdown, so the first requests are fast. A missing or damaged snapshot only "
             "means a cold start, never an error."),
        ],
    ),
    "retry.md": (
        "Retries",
        [
            ("Backoff", "Failed requests are retried with exponential backoff: one second, "
             "then two, then four, up to a minute. The backoff starts again from one second "
             "after any request succeeds."),
            ("Jitter", "Each backoff delay gets random jitter so that many clients do not "
             "retry at the same moment. The jitter is up to half of the delay, drawn anew "
             "for every retry."),
            ("Limits", "A request is retried at most five times; after that the error is "
             "returned to the caller with the last status. Timeouts count as failures, "
             "and so do connection resets."),
            ("Idempotency", "Only idempotent requests are retried; a POST is retried when it "
             "carries an idempotency key. The server remembers each key for a day and "
             "answers a repeat with the first response."),
        ],
    ),
}  # fmt: skip

DOCS = Path(__file__).resolve().parents[2] / "docs"
CHUNK = ChunkSpec(chunker="markdown", size=80)
FIRST = "How does the cache evict entries and how big should the cache be?"
SECOND = "How big should the cache be, and when are failed requests retried with backoff?"


def write_corpus(root: Path) -> Path:
    """Write the three guides under ``root`` (created) and return it."""
    root.mkdir(parents=True, exist_ok=True)
    for name, (title, sections) in SECTIONS.items():
        body = "".join(f"## {head}\n\n{text}\n\n" for head, text in sections)
        (root / name).write_text(f"# {title}\n\n{body}", encoding="utf-8")
    return root


def build(tmp_path: Path) -> tuple[Path, str]:
    """Write the corpus to ``tmp_path/corpus`` and index it; return (corpus, index folder)."""
    corpus = write_corpus(tmp_path / "corpus")
    folder = str(tmp_path / "ix")
    api.index_paths([corpus], folder, chunk=CHUNK)
    return corpus, folder


ALPHA = "The alpha cache keeps recent entries in memory for quick reuse by readers. " * 2
WEATHER = "The weather report mentions clouds, rain and wind over the northern hills today. " * 2
OLDEST = "When the alpha cache fills up, the oldest entries leave the cache first. " * 2
GUIDE = (
    f"# Guide\n\nIntro text about nothing in particular.\n\n## Tuning\n\n{ALPHA}\n\n"
    f"{WEATHER}\n\n{OLDEST}\n\n## Other\n\nSomething else entirely about gardening.\n"
)


def write_guide(root: Path) -> Path:
    """A markdown corpus whose "Tuning" section splits into three 40-token chunks.

    The query "alpha cache entries" matches the first and last of them but not the
    middle one, so without promotion the selection has two pieces with a gap, and with
    promotion one piece: the whole section.
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / "guide.md").write_text(GUIDE, encoding="utf-8")
    (root / "other.md").write_text("# Garden\n\nWater tomatoes in the morning.\n")
    return root


DEMO_FIRST = "How does the markdown chunker split a document at its headings?"
DEMO_SECOND = "What header does a markdown chunk get, and what is its parent section?"


def build_demo(tmp_path: Path) -> str:
    """Index chapters 01-10 of docs/ (copied to ``tmp_path``) as bench/mcp_transcript.py does.

    Real documentation with the default chunking: the corpus the MCP figures are measured on.
    """
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    for path in sorted(DOCS.glob("[01][0-9]-*.md")):
        if path.name < "11":
            shutil.copy(path, chapters / path.name)
    folder = str(tmp_path / "demo-ix")
    api.index_paths([chapters], folder)
    return folder
