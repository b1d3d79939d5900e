"""Doc-id globs: gitignore patterns, checked so a mistake is an error, not an empty result.

``include``/``exclude`` globs are matched against doc ids by ``pathspec`` as the indexer
matches ``.gitignore`` files: ``*.py`` at any depth, ``docs/`` everything below a folder
``docs``, ``/docs/*.md`` anchored at the root, ``**`` across folders, ``!`` to take a
pattern back (the last matching pattern decides). A document passes when it matches an
``include`` glob (all do without one) and no ``exclude`` glob. Gitignore reads some
mistakes as "matches nothing" (an unclosed ``[``, a leading ``#``); here they are errors
naming the position.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ctxselect.errors import ConfigError

MAX_GLOBS = 50
MAX_GLOB_CHARS = 1000


def doc_filter(
    include: Sequence[str], exclude: Sequence[str]
) -> Callable[[Sequence[str]], tuple[list[str], str]]:
    """Check the globs; return a function that keeps matching doc ids and says which filter
    left none.

    Raises:
        ConfigError: An invalid glob (naming it and the position), or too many.
    """
    from pathspec import GitIgnoreSpec  # pathspec: gitignore matching as git does it

    specs = []
    for kind, globs in (("include", include), ("exclude", exclude)):
        if isinstance(globs, str) or len(globs) > MAX_GLOBS:
            raise ConfigError(f"pass {kind} as a list of at most {MAX_GLOBS} globs")
        for glob in globs:
            _check_glob(kind, glob)
        specs.append(GitIgnoreSpec.from_lines(list(globs)) if globs else None)
    wanted, unwanted = specs

    def keep(doc_ids: Sequence[str]) -> tuple[list[str], str]:
        kept = list(doc_ids)
        if not kept:
            return [], "the index holds no documents"
        if wanted is not None:
            kept = [d for d in kept if wanted.match_file(d)]
            if not kept:
                return (
                    [],
                    f"include {_globs(include)} matches none of the {documents(len(doc_ids))}",
                )
        if unwanted is not None:
            before = len(kept)
            kept = [d for d in kept if not unwanted.match_file(d)]
            if not kept:
                which = " include kept" if include else ""
                return (
                    [],
                    f"exclude {_globs(exclude)} leaves none of the {documents(before)}{which}",
                )
        return kept, ""

    return keep


def _check_glob(kind: str, glob: str) -> None:
    """Refuse what gitignore would silently read as nothing, naming the position."""
    from pathspec import GitIgnoreSpec

    problem = _glob_problem(glob)
    if problem is None:
        try:
            GitIgnoreSpec.from_lines([glob])
        except re.error as exc:  # what the checks below missed, in pathspec's regex
            problem = (0, f"it does not translate to a valid pattern ({exc.msg})")
        except ValueError as exc:  # pathspec's GitIgnorePatternError
            problem = (0, str(exc))
    if problem is not None:
        pos, why = problem
        raise ConfigError(
            f"invalid {kind} glob {glob!r} at position {pos}: {why}; globs are gitignore "
            f"patterns matched against doc ids, such as '*.py', 'docs/' or 'src/**/test_*'"
        )


def _glob_problem(glob: str) -> tuple[int, str] | None:
    """(position, why) of what makes ``glob`` invalid, or None."""
    if not glob.strip():
        return 0, "the glob is empty"
    if len(glob) > MAX_GLOB_CHARS:
        return MAX_GLOB_CHARS, f"the glob is longer than {MAX_GLOB_CHARS} characters"
    if glob.startswith("#"):
        return 0, r"a leading # makes it a comment (write \# for a literal #)"
    if glob.strip() == "!":
        return 0, "! takes back a pattern and needs one after it"
    i = 0
    while i < len(glob):
        if glob[i] == "\\":
            if i + 1 == len(glob):
                return i, "a trailing backslash escapes nothing"
            i += 2
        elif glob[i] == "[":
            close = _class_end(glob, i)
            if close < 0:
                return i, "the character class [ is never closed with ]"
            backwards = _reversed_range(glob, i, close)
            if backwards is not None:
                low, high = glob[backwards], glob[backwards + 2]
                return backwards, f"the range {low}-{high} runs backwards (write {high}-{low})"
            i = close + 1
        else:
            i += 1
    return None


def _class_end(glob: str, at: int) -> int:
    """Index of the ``]`` closing the class opened at ``at`` (-1: none)."""
    i = at + 1
    if i < len(glob) and glob[i] in "!^":
        i += 1
    if i < len(glob) and glob[i] == "]":  # a ] first in a class is literal
        i += 1
    return glob.find("]", i)


def _reversed_range(glob: str, at: int, close: int) -> int | None:
    """Position of the first range ``a-b`` with ``a`` after ``b`` in the class opened at
    ``at`` and closed at ``close`` (None: every range runs forwards)."""
    i = at + 1
    if glob[i] in "!^":
        i += 1
    while i < close:
        if glob[i] == "\\":  # an escaped character is one literal
            i += 2
            continue
        if i + 2 < close and glob[i + 1] == "-" and glob[i + 2] != "\\":
            if glob[i] > glob[i + 2]:
                return i
            i += 3
            continue
        i += 1
    return None


def _globs(globs: Sequence[str]) -> str:
    return ", ".join(repr(g) for g in globs)


def documents(n: int) -> str:
    """``1 document``, ``1,204 documents``."""
    return f"{n:,} document{'s' if n != 1 else ''}"
