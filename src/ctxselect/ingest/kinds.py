"""Which loader a file name gets: ``text``, ``markdown``, ``rst``, ``code``, ``html``, ``pdf``
or ``beir``."""

from __future__ import annotations

TEXT_SUFFIXES = frozenset({".txt", ".text", ".adoc", ".asciidoc", ".org", ".log"})
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdown", ".mkd", ".mkdn", ".mdx"})
RST_SUFFIXES = frozenset({".rst", ".rest"})
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
PDF_SUFFIXES = frozenset({".pdf"})
BEIR_SUFFIXES = frozenset({".jsonl"})
CODE_SUFFIXES = frozenset(
    {
        # general-purpose languages
        ".py", ".pyi", ".pyx", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx",
        ".go", ".rs", ".java", ".kt", ".kts", ".scala", ".sc", ".groovy", ".gradle",
        ".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx", ".inl", ".cu", ".cuh",
        ".cs", ".fs", ".fsx", ".vb", ".rb", ".php", ".swift", ".m", ".mm", ".dart",
        ".r", ".jl", ".lua", ".pl", ".pm", ".hs", ".ml", ".mli", ".ex", ".exs", ".erl",
        ".hrl", ".clj", ".cljs", ".cljc", ".edn", ".elm", ".nim", ".zig", ".v", ".sv",
        ".vhd", ".vhdl", ".f", ".f90", ".f95", ".for", ".pas", ".d", ".cr", ".lisp",
        ".el", ".scm", ".rkt", ".tcl", ".awk", ".sed", ".vim", ".asm", ".s",
        # shells and scripts
        ".sh", ".bash", ".zsh", ".fish", ".ps1", ".psm1", ".bat", ".cmd",
        # query, schema and interface languages
        ".sql", ".graphql", ".gql", ".proto", ".thrift", ".avsc", ".prisma",
        # configuration and data formats people read
        ".toml", ".yaml", ".yml", ".ini", ".cfg", ".conf", ".json", ".jsonc", ".json5",
        ".xml", ".xsd", ".xsl", ".plist", ".properties", ".env", ".tf", ".tfvars", ".hcl",
        ".nix", ".bzl", ".bazel", ".cmake", ".mk", ".make", ".ninja", ".dockerfile",
        # web front-end and templates
        ".css", ".scss", ".sass", ".less", ".vue", ".svelte", ".astro", ".j2", ".jinja",
        ".jinja2", ".mustache", ".hbs", ".ejs", ".erb", ".liquid",
        # markup that is closer to code than to prose
        ".tex", ".sty", ".cls", ".bib",
    }
)  # fmt: skip
CODE_NAMES = frozenset(
    {
        "makefile", "gnumakefile", "dockerfile", "containerfile", "jenkinsfile",
        "vagrantfile", "rakefile", "gemfile", "podfile", "procfile", "brewfile",
        "cmakelists.txt", "justfile", "build", "workspace", "pipfile",
    }
)  # fmt: skip

SNIFF = "sniff"
"""Pseudo-kind of a file without an extension: loaded as text if its bytes look like text."""


def kind_of(name: str) -> str | None:
    """Return the loader kind for a file ``name``, ``SNIFF``, or None when unsupported.

    Args:
        name: The file name (no folders); matching is case-insensitive.

    Returns:
        ``"code"``, ``"markdown"``, ``"rst"``, ``"html"``, ``"pdf"``, ``"text"``, ``"beir"``,
        :data:`SNIFF` for names without an extension, or None for an extension no loader
        handles.
    """
    lower = name.lower()
    if lower in CODE_NAMES or lower.startswith("dockerfile."):
        return "code"
    dot = lower.rfind(".")
    if dot <= 0:  # no extension (a leading dot is a hidden file, not an extension)
        return SNIFF
    suffix = lower[dot:]
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in RST_SUFFIXES:
        return "rst"
    if suffix in TEXT_SUFFIXES:
        return "text"
    if suffix in CODE_SUFFIXES:
        return "code"
    if suffix in HTML_SUFFIXES:
        return "html"
    if suffix in PDF_SUFFIXES:
        return "pdf"
    if suffix in BEIR_SUFFIXES:
        return "beir"
    return None
