"""User metadata of a document: what ``--where key=value`` filters on besides the built-ins.

- A BEIR line's ``metadata`` object: flat string, number and bool values become strings
  (``true``/``false`` for bools, ``json.dumps`` for numbers); nested values (objects,
  lists) are kept as their compact JSON text; nulls are skipped.
- A Markdown file's front matter: a ``---`` line first, ``key: value`` lines, a closing
  ``---`` (or ``...``) line. The text keeps it (chunk offsets point into the file as
  read). Parsed by :func:`ctxselect.front_matter.read_front_matter` rather than PyYAML, which is
  not a dependency: top-level ``key: value`` lines only; quotes around a value are
  removed; indented lines (nested values, list items) and comments are skipped, and a key
  whose value is on such lines is skipped too; a flow list ``[a, b]`` is kept as its
  text. A block with no ``key:`` line, or with a line that is not YAML-like, is content.
- A code file's ``language`` (``python``, ``typescript``...; the extension without its
  dot for a language not in :data:`LANGUAGES`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ctxselect.errors import InputError
from ctxselect.front_matter import MAX_KEY_CHARS, MAX_VALUE_CHARS, read_front_matter

Fields = tuple[tuple[str, str], ...]


LANGUAGES: Mapping[str, str] = {
    ".py": "python", ".pyi": "python", ".pyx": "cython",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescript",
    ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin", ".kts": "kotlin",
    ".scala": "scala", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp",
    ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp", ".cs": "csharp", ".rb": "ruby",
    ".php": "php", ".swift": "swift", ".m": "objective-c", ".mm": "objective-c",
    ".dart": "dart", ".r": "r", ".jl": "julia", ".lua": "lua", ".pl": "perl", ".pm": "perl",
    ".hs": "haskell", ".ml": "ocaml", ".mli": "ocaml", ".ex": "elixir", ".exs": "elixir",
    ".erl": "erlang", ".clj": "clojure", ".sh": "shell", ".bash": "shell", ".zsh": "shell",
    ".fish": "shell", ".ps1": "powershell", ".sql": "sql", ".toml": "toml", ".yaml": "yaml",
    ".yml": "yaml", ".json": "json", ".xml": "xml", ".css": "css", ".scss": "scss",
    ".vue": "vue", ".svelte": "svelte", ".tex": "latex", ".zig": "zig", ".nim": "nim",
}  # fmt: skip
"""Extension -> language name, for the code chunker's grammars and the common others."""


def language_of(doc_id: str) -> str:
    """Return the language of a code file from its name ("" when it has no extension)."""
    name = doc_id.rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    if dot <= 0:
        return name if name in {"makefile", "dockerfile", "justfile"} else ""
    return LANGUAGES.get(name[dot:], name[dot + 1 :])


def code_fields(doc_id: str) -> Fields:
    """A code file's fields: its ``language``."""
    language = language_of(doc_id)
    return (("language", language),) if language else ()


def beir_fields(metadata: object, where: str) -> Fields:
    """Flatten a BEIR line's ``metadata`` object (see the module docstring).

    Raises:
        InputError: ``metadata`` is present but not a JSON object.
    """
    if metadata is None:
        return ()
    if not isinstance(metadata, dict):
        raise InputError(
            f'{where}: "metadata" must be a JSON object of key: value pairs, got '
            f"{type(metadata).__name__}; fix or remove it"
        )
    out = []
    for key, value in metadata.items():
        if value is None or not str(key).strip():
            continue
        if isinstance(value, str):
            text = value
        elif isinstance(value, bool):
            text = "true" if value else "false"
        else:  # numbers as JSON writes them; nested values as compact JSON
            text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        out.append((str(key)[:MAX_KEY_CHARS], text[:MAX_VALUE_CHARS]))
    return tuple(out)


def front_matter(text: str) -> Fields:
    """Return the ``key: value`` pairs of a Markdown text's front matter (see above).

    The block is read by :func:`ctxselect.front_matter.read_front_matter`, the reader the
    Markdown chunker uses too, so a block gives fields exactly when no chunk holds it.
    """
    return read_front_matter(text).fields


__all__ = ["LANGUAGES", "beir_fields", "code_fields", "front_matter", "language_of"]
