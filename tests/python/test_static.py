"""The worker's first look at a candidate's source (before any of its code runs) answers for any
text: a source the parser cannot take is a syntax error of the candidate's, never a worker that
dies before its `static` event (kbx takes that for its own fault, harness_error)."""

import ast

import pytest

from kbx_worker.static import check_source

HOSTILE = {
    "nul_byte": "def add(a, b):\n    return a + b\0\n",
    "nested_parentheses": "x = " + "(" * 200_000 + ")" * 200_000,
    "nested_unary": "x = " + "-" * 2_000_000 + "1",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_source_the_parser_cannot_take_is_a_syntax_error(name):
    facts = check_source(HOSTILE[name], "add")
    assert facts["syntax_ok"] is False and facts["message"], facts


def test_the_parsers_overflow_says_why():
    facts = check_source(HOSTILE["nested_unary"], "add")
    assert "nested too deeply" in facts["message"] or "recursion" in facts["message"], facts


def test_a_source_whose_ast_objects_nest_too_deep_is_judged_not_raised():
    """5000 unary minuses: the parser takes them; Python 3.11 raises RecursionError while it
    builds the AST's objects (a syntax error here), a newer Python may build them (then the
    source parses, and its import decides). Either way check_source answers."""
    source = "def add(a, b):\n    return a + b\n\nx = " + "-" * 5000 + "1\n"
    try:
        ast.parse(source)
        parses = True
    except (RecursionError, MemoryError):
        parses = False
    facts = check_source(source, "add")
    assert facts["syntax_ok"] is parses, facts


def test_a_good_source_still_parses():
    facts = check_source("import triton\n\n@triton.jit\ndef k(x):\n    pass\n\ndef add(a, b):\n"
                         "    return a + b\n", "add")
    assert facts["syntax_ok"] and facts["entry_found"] and facts["triton_kernels"] == ["k"]
