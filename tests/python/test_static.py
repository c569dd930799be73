"""The worker's first look at a candidate's source (before any of its code runs) answers for any
text: a source the parser cannot take is a syntax error of the candidate's, never a worker that
dies before its `static` event (kbx takes that for its own fault, harness_error)."""

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


def test_a_good_source_still_parses():
    facts = check_source("import triton\n\n@triton.jit\ndef k(x):\n    pass\n\ndef add(a, b):\n"
                         "    return a + b\n", "add")
    assert facts["syntax_ok"] and facts["entry_found"] and facts["triton_kernels"] == ["k"]
