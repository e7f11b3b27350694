"""Record files are strict JSON: no non-finite tokens, no duplicate names, nothing lost."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainrecord.canonical import canonical_line, dumps_strict, loads_strict


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_tokens_are_refused(token: str) -> None:
    with pytest.raises(ValueError, match="non-finite"):
        loads_strict('{"loss": ' + token + "}")


@pytest.mark.parametrize(
    "text", ['{"a": 1, "a": 2}', '{"x": {"b": 1, "b": 1}}', '[{"seq": 0, "seq": 0}]']
)
def test_duplicate_names_are_refused_at_any_depth(text: str) -> None:
    with pytest.raises(ValueError, match="duplicate key"):
        loads_strict(text)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32", "utf-8-sig"])
def test_bytes_that_are_not_plain_utf8_are_refused(encoding: str) -> None:
    # json.loads(bytes) alone detects UTF-16/32 and skips a UTF-8 byte order mark
    data = '{"loss": 1.5}'.encode(encoding)
    with pytest.raises(ValueError):
        loads_strict(data)
    assert loads_strict(b'{"loss": 1.5}') == {"loss": 1.5}


def test_writers_refuse_non_finite_floats() -> None:
    for value in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError):
            dumps_strict({"v": value})
        with pytest.raises(ValueError):
            canonical_line({"v": value})


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_strict_round_trip_keeps_every_value(value: object) -> None:
    assert loads_strict(dumps_strict(value)) == value
    assert canonical_line(loads_strict(canonical_line(value))) == canonical_line(value)
