"""What the code chunker knows of each language: its grammar and its definitions.

Per file suffix, the tree-sitter grammar module (one wheel per language, compiled grammar
included); per grammar, the node types that define something and the keyword their scope
label starts with (``def``, ``class``, ``fn``, ...).
"""

from __future__ import annotations

from typing import Any

# suffix -> (grammar module, function returning its language pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    **dict.fromkeys((".py", ".pyi"), ("tree_sitter_python", "language")),
    **dict.fromkeys((".js", ".mjs", ".cjs", ".jsx"), ("tree_sitter_javascript", "language")),
    **dict.fromkeys((".ts", ".mts", ".cts"), ("tree_sitter_typescript", "language_typescript")),
    ".tsx": ("tree_sitter_typescript", "language_tsx"),
    ".go": ("tree_sitter_go", "language"),
    ".rs": ("tree_sitter_rust", "language"),
    ".java": ("tree_sitter_java", "language"),
    ".c": ("tree_sitter_c", "language"),
    # .h is C or C++; the C++ grammar parses both (C's would fail on any class).
    **dict.fromkeys(
        (".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx", ".inl"),
        ("tree_sitter_cpp", "language"),
    ),
}

_JS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "abstract_class_declaration": "class",
    "method_definition": "method",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "internal_module": "namespace",
    "module": "module",
}
_C = {
    "function_definition": "function",
    "struct_specifier": "struct",
    "union_specifier": "union",
    "enum_specifier": "enum",
    "class_specifier": "class",
    "namespace_definition": "namespace",
}
# Per grammar: definition node type -> the keyword its scope label starts with.
DEFINITIONS: dict[str, dict[str, str]] = {
    "tree_sitter_python": {"function_definition": "def", "class_definition": "class"},
    "tree_sitter_javascript": _JS,
    "tree_sitter_typescript": _JS,
    "tree_sitter_go": {
        "function_declaration": "func",
        "method_declaration": "func",
        "type_spec": "type",
    },
    "tree_sitter_rust": {
        "function_item": "fn",
        "struct_item": "struct",
        "enum_item": "enum",
        "union_item": "union",
        "trait_item": "trait",
        "impl_item": "impl",
        "mod_item": "mod",
        "macro_definition": "macro_rules!",
    },
    "tree_sitter_java": {
        "class_declaration": "class",
        "interface_declaration": "interface",
        "enum_declaration": "enum",
        "record_declaration": "record",
        "annotation_type_declaration": "@interface",
        "method_declaration": "method",
        "constructor_declaration": "constructor",
    },
    "tree_sitter_c": _C,
    "tree_sitter_cpp": _C,
}
# Nodes that belong with the node after them: comments, decorators, attributes.
LEADING = ("comment", "decorator", "attribute_item", "annotation")
# Wrappers whose label is the label of the definition inside them.
WRAPPERS = frozenset(
    {
        "decorated_definition",
        "export_statement",
        "template_declaration",
        "type_declaration",
        "lexical_declaration",
        "variable_declarator",
    }
)


def _name(node: Any, data: bytes) -> str:
    """Return the name a definition node declares (its ``name``, ``type`` or declarator)."""
    for field_name in ("name", "declarator", "type"):
        child = node.child_by_field_name(field_name)
        while child is not None and child.child_by_field_name("declarator") is not None:
            child = child.child_by_field_name("declarator")  # C: pointer -> function -> id
        if child is not None:
            return data[child.start_byte : child.end_byte].decode("utf-8", "replace")
    return ""


def label_of(node: Any, data: bytes, definitions: dict[str, str]) -> str:
    """Return ``"def feed"``-style label of a definition node, or "" for other nodes."""
    keyword = definitions.get(node.type)
    if keyword is not None:
        name = _name(node, data)
        return f"{keyword} {name}".strip() if name else ""
    if node.type in WRAPPERS:
        for child in node.named_children:
            if child.type == "arrow_function" or child.type == "function_expression":
                name = node.child_by_field_name("name")
                if name is not None:
                    return "function " + data[name.start_byte : name.end_byte].decode()
            label = label_of(child, data, definitions)
            if label:
                return label
    return ""
