"""Hypothesis strategies derived from the spec's JSON Schemas.

This is the engine behind :mod:`trainrecord_conformance.strategies`. It reads the shipped
schemas (``trainrecord_spec``), resolves ``$ref`` and ``allOf`` into one flat node per
instance location, and builds two kinds of strategy:

* ``valid(schema_id)``: instances the schema accepts;
* ``breaking(site)``: instances valid everywhere except at one *site*, a location in the
  instance and one keyword there whose ``x-rules`` id is the rule broken.

Conditional parts (``oneOf``, ``anyOf``, ``if``/``then``) become *variants*: a valid
instance picks one. Every value drawn is checked against the oracle
(:func:`trainrecord.schemas.problems`) by the public strategies, so a gap in this engine
shows up as a drift error, never as a silently wrong example.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import urljoin

from hypothesis import strategies as st

from trainrecord.schemas import all_schemas

Json = Any
VALIDATION_KEYWORDS = (
    "type",
    "const",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
)
"""Keywords that constrain the value at their own location (a site can break each)."""
JSON_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")
MAX_DEPTH = 6


class UnsupportedSchema(Exception):
    """The schema uses a construct this engine cannot generate from."""


# --------------------------------------------------------------------------- documents


def _absolute_refs(node: Json, base: str) -> Json:
    """A copy of ``node`` with every ``$ref`` made absolute against ``base``."""
    if isinstance(node, dict):
        out = {k: _absolute_refs(v, base) for k, v in node.items()}
        if isinstance(node.get("$ref"), str):
            out["$ref"] = urljoin(base, node["$ref"])
        return out
    if isinstance(node, list):
        return [_absolute_refs(v, base) for v in node]
    return node


@cache
def documents() -> dict[str, dict[str, Any]]:
    """Every shipped schema by ``$id``, with absolute ``$ref``s."""
    return {s["$id"]: _absolute_refs(s, s["$id"]) for s in all_schemas().values()}


def lookup(ref: str) -> dict[str, Any]:
    """The subschema an absolute ``$ref`` points at."""
    uri, _, pointer = ref.partition("#")
    node: Any = documents()[uri]
    for part in [p for p in pointer.split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


# --------------------------------------------------------------------------- flat nodes


@dataclass(frozen=True)
class Constraint:
    """One validation keyword at one location, and the rule its failure breaks."""

    keyword: str
    value: Json
    rule: str | None


@dataclass
class Flat:
    """Everything that applies at one instance location, with ``$ref``/``allOf`` merged."""

    constraints: list[Constraint] = field(default_factory=list)
    required: dict[str, list[str | None]] = field(default_factory=dict)
    closed: list[str | None] = field(default_factory=list)
    props: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    extra: list[dict[str, Any]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)
    variants: list[list[dict[str, Any]]] = field(default_factory=list)
    variant_rules: list[str | None] = field(default_factory=list)
    approximate: bool = False

    def values(self, keyword: str) -> list[Json]:
        """Every value given for ``keyword`` here."""
        return [c.value for c in self.constraints if c.keyword == keyword]

    @property
    def types(self) -> set[str]:
        """The JSON types allowed here (every ``type`` keyword intersected)."""
        allowed = set(JSON_TYPES)
        for value in self.values("type"):
            names = {value} if isinstance(value, str) else set(value)
            if "number" in names:
                names.add("integer")
            allowed &= names
        return allowed


def _rule(raw: dict[str, Any], keyword: str) -> str | None:
    rules = raw.get("x-rules")
    if not isinstance(rules, dict):
        return None
    return rules.get(keyword) or rules.get("*")


def _parts(raw: dict[str, Any], depth: int = 0) -> Iterator[dict[str, Any]]:
    """``raw`` and every schema it pulls in through ``$ref`` and ``allOf``."""
    if depth > 20:
        raise UnsupportedSchema("reference chain too deep")
    yield raw
    if isinstance(raw.get("$ref"), str):
        yield from _parts(lookup(raw["$ref"]), depth + 1)
    for sub in raw.get("allOf", []):
        yield from _parts(sub, depth + 1)


def flatten(raws: list[dict[str, Any]]) -> Flat:
    """Merge the schemas that all apply at one location into one :class:`Flat`."""
    flat = Flat()
    conditionals: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for raw in (p for r in raws for p in _parts(r)):
        if raw is True or raw == {}:
            continue
        if raw is False:
            raise UnsupportedSchema("false schema")
        for keyword in VALIDATION_KEYWORDS:
            if keyword in raw:
                flat.constraints.append(Constraint(keyword, raw[keyword], _rule(raw, keyword)))
        for name in raw.get("required", []):
            flat.required.setdefault(name, []).append(_rule(raw, "required"))
        for keyword in ("additionalProperties", "unevaluatedProperties"):
            if raw.get(keyword) is False:
                flat.closed.append(_rule(raw, keyword))
            elif isinstance(raw.get(keyword), dict) and raw[keyword]:
                flat.extra.append(raw[keyword])
        for name, sub in raw.get("properties", {}).items():
            flat.props.setdefault(name, []).append(sub)
        if isinstance(raw.get("items"), dict):
            flat.items.append(raw["items"])
        for keyword in ("oneOf", "anyOf"):
            if keyword in raw:
                if flat.variants:
                    raise UnsupportedSchema("two alternations at one location")
                flat.variants = [[b] for b in raw[keyword]]
                flat.variant_rules.append(_rule(raw, keyword))
        if "if" in raw:
            conditionals.append((raw["if"], raw.get("then", {})))
            flat.approximate = flat.approximate or "else" in raw
        for keyword in (
            "not",
            "prefixItems",
            "contains",
            "patternProperties",
            "dependentRequired",
            "dependentSchemas",
            "propertyNames",
        ):
            if keyword in raw:
                raise UnsupportedSchema(f"keyword {keyword}")
    if conditionals:
        if flat.variants:
            raise UnsupportedSchema("alternation and conditionals at one location")
        flat.variants = [[cond, then] for cond, then in conditionals] + [[]]
        flat.approximate = True
    return flat


def expand(raws: list[dict[str, Any]]) -> list[Flat]:
    """The flat node of ``raws``, one per variant when it has alternatives."""
    flat = flatten(raws)
    if not flat.variants:
        return [flat]
    out = []
    for variant in flat.variants:
        base = [_without_alternatives(r) for r in raws]
        sub = flatten(base + variant)
        sub.approximate = sub.approximate or flat.approximate
        out.append(sub)
    return out


def _without_alternatives(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with its alternations and conditionals removed (and those of its parts)."""
    drop = ("oneOf", "anyOf", "if", "then", "else")
    out = {k: v for k, v in raw.items() if k not in drop and k not in ("$ref", "allOf")}
    parts = []
    if isinstance(raw.get("$ref"), str):
        parts.append(_without_alternatives(lookup(raw["$ref"])))
    parts.extend(_without_alternatives(s) for s in raw.get("allOf", []))
    if parts:
        out["allOf"] = parts
    return out


# --------------------------------------------------------------------------- sites


@dataclass(frozen=True)
class Site:
    """A place to break a rule: a schema, a path of steps into it, and one constraint."""

    schema_id: str
    steps: tuple[tuple[str, Any], ...]
    rule: str
    keyword: str
    detail: Json = None

    def describe(self) -> str:
        """Where the site lies, for reports: ``schema#/horizon (minimum)``."""
        names = {"item": "*", "extra": "<any key>"}
        path = "/".join(
            str(s[1]) if s[0] == "prop" else names.get(s[0], f"<{s[1]}>") for s in self.steps
        )
        return f"{self.schema_id.rsplit('/schemas/', 1)[-1]}#/{path} ({self.keyword})"


def _sites_at(flat: Flat, schema_id: str, steps: tuple, depth: int) -> Iterator[Site]:
    per_keyword: dict[str, set[str | None]] = {}
    for c in flat.constraints:
        per_keyword.setdefault(c.keyword, set()).add(c.rule)
    for keyword, rules in per_keyword.items():
        rule = next(iter(rules)) if len(rules) == 1 else None
        if rule is not None:
            yield Site(schema_id, steps, rule, keyword)
    for name, required_rules in flat.required.items():
        rule = required_rules[0] if len(set(required_rules)) == 1 else None
        if rule is not None:
            yield Site(schema_id, steps, rule, "required", name)
    if flat.closed and len(set(flat.closed)) == 1 and flat.closed[0] is not None:
        yield Site(schema_id, steps, flat.closed[0], "additionalProperties")
    if flat.variant_rules and flat.variant_rules[0] is not None and not flat.approximate:
        yield Site(schema_id, steps, flat.variant_rules[0], "anyOf")
    if depth >= MAX_DEPTH:
        return
    for name, subs in flat.props.items():
        children = expand(subs)
        if len(children) > 1:
            yield from _alternation_site(subs, schema_id, (*steps, ("prop", name)))
        for i, child in enumerate(children):
            step: tuple[tuple[str, Any], ...] = (
                (("prop", name),) if len(children) == 1 else (("prop", name), ("variant", i))
            )
            yield from _sites_at(child, schema_id, steps + step, depth + 1)
    for kind, subs in (("item", flat.items), ("extra", flat.extra)):
        if not subs:
            continue
        children = expand(subs)
        for i, child in enumerate(children):
            step = ((kind, None),) if len(children) == 1 else ((kind, None), ("variant", i))
            yield from _sites_at(child, schema_id, steps + step, depth + 1)


def _alternation_site(raws: list[dict[str, Any]], schema_id: str, steps: tuple) -> Iterator[Site]:
    """The site of an ``anyOf``/``oneOf`` keyword itself: a value matching no branch."""
    parent = flatten(raws)
    if parent.variant_rules and parent.variant_rules[0] is not None and not parent.approximate:
        yield Site(schema_id, steps, parent.variant_rules[0], "anyOf")


def root_raw(schema_id: str) -> dict[str, Any]:
    """The root schema of ``schema_id`` (with absolute refs)."""
    return documents()[schema_id]


@cache
def sites(schema_id: str) -> tuple[Site, ...]:
    """Every site of one schema (deduplicated)."""
    out: dict[tuple, Site] = {}
    roots = expand([root_raw(schema_id)])
    for i, flat in enumerate(roots):
        prefix: tuple = () if len(roots) == 1 else (("variant", i),)
        for site in _sites_at(flat, schema_id, prefix, 0):
            out.setdefault((site.steps, site.rule, site.keyword, str(site.detail)), site)
    return tuple(out.values())


@cache
def sites_by_rule() -> dict[str, tuple[Site, ...]]:
    """Every site of every shipped schema, grouped by rule id."""
    out: dict[str, list[Site]] = {}
    for schema_id in documents():
        try:
            found = sites(schema_id)
        except UnsupportedSchema:
            continue
        for site in found:
            out.setdefault(site.rule, []).append(site)
    return {rule: tuple(found) for rule, found in out.items()}


# --------------------------------------------------------------------------- values


def json_values(max_leaves: int = 6, *, nonfinite: bool = False) -> st.SearchStrategy[Json]:
    """Any JSON value (floats finite unless ``nonfinite``)."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=nonfinite, allow_infinity=nonfinite),
        st.text(max_size=12),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=max_leaves,
    )


def _of_type(name: str, *, nonfinite: bool = False) -> st.SearchStrategy[Json]:
    """Arbitrary values of one JSON type (``number`` here means a non-integral float)."""
    small = json_values(3)
    return {
        "null": st.none(),
        "boolean": st.booleans(),
        "integer": st.integers(-(2**40), 2**40),
        "number": st.one_of(
            st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != int(f)),
            st.sampled_from([1.5, -0.5, 1e-07]),
        )
        if not nonfinite
        else st.sampled_from([math.nan, math.inf, -math.inf]),
        "string": st.text(max_size=10),
        "array": st.lists(small, max_size=3),
        "object": st.dictionaries(st.text(max_size=6), small, max_size=3),
    }[name]


def _search_pattern(pattern: str) -> str:
    """A pattern for generation: ``$`` as end of text only (Python's ``$`` allows ``\\n``)."""
    return re.sub(r"(?<!\\)\$$", r"\\Z", pattern)


def _string(flat: Flat) -> st.SearchStrategy[str]:
    patterns = flat.values("pattern")
    min_len = max(flat.values("minLength"), default=0)
    max_len = min(flat.values("maxLength"), default=None)
    formats = flat.values("format")
    if formats:
        base = _format_strings(formats[0])
    elif patterns:
        base = _regex(patterns[0])
    else:
        base = st.text(min_size=min_len, max_size=max(min_len, 12) if max_len is None else max_len)
    return base.filter(
        lambda s: (
            len(s) >= min_len
            and (max_len is None or len(s) <= max_len)
            and all(re.search(p, s) for p in patterns)
        )
    )


def _regex(pattern: str) -> st.SearchStrategy[str]:
    """Strings ``re.search(pattern, s)`` accepts (anchored patterns drawn as full matches)."""
    if pattern.startswith("^") and pattern.endswith("$") and not pattern.endswith("\\$"):
        return st.from_regex(pattern[1:-1], fullmatch=True)
    return st.from_regex(_search_pattern(pattern))


def _format_strings(fmt: str) -> st.SearchStrategy[str]:
    if fmt == "uuid":
        return st.uuids().map(str)
    if fmt == "date-time":
        return st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat(timespec="seconds"))
    raise UnsupportedSchema(f"format {fmt}")


def _integer(flat: Flat) -> st.SearchStrategy[int]:
    low = max(
        [math.ceil(v) for v in flat.values("minimum")]
        + [math.floor(v) + 1 for v in flat.values("exclusiveMinimum")],
        default=None,
    )
    high = min(
        [math.floor(v) for v in flat.values("maximum")]
        + [math.ceil(v) - 1 for v in flat.values("exclusiveMaximum")],
        default=None,
    )
    out = st.integers(low if low is not None else -(2**53), high if high is not None else 2**53)
    for m in flat.values("multipleOf"):
        out = out.filter(_multiple_of(m))
    return out


def _multiple_of(m: float) -> Callable[[int], bool]:
    """The filter of ``multipleOf: m``: whether an integer is a multiple of ``m``."""
    return lambda n: n % m == 0


def _number(flat: Flat) -> st.SearchStrategy[float | int]:
    low = max(flat.values("minimum") + flat.values("exclusiveMinimum"), default=None)
    high = min(flat.values("maximum") + flat.values("exclusiveMaximum"), default=None)
    floats = st.floats(
        low,
        high,
        allow_nan=False,
        allow_infinity=False,
        exclude_min=bool(flat.values("exclusiveMinimum")),
        exclude_max=bool(flat.values("exclusiveMaximum")),
    )
    return st.one_of(_integer(flat), floats)


def _steps_match(steps: tuple, kind: str) -> bool:
    return bool(steps) and steps[0][0] == kind


_VALID_MEMO: dict[tuple[tuple[int, ...], int], tuple[tuple, st.SearchStrategy[Json]]] = {}
"""Valid strategies by the identity of their schemas (kept alive here, so ids stay unique)."""


def gen(
    raws: list[dict[str, Any]],
    steps: tuple = (),
    site: Site | None = None,
    depth: int = 0,
    *,
    nonfinite: bool = False,
) -> st.SearchStrategy[Json]:
    """Instances of ``raws``; with a site, valid everywhere except there."""
    if site is None and not steps:
        key = (tuple(id(r) for r in raws), depth)
        if key not in _VALID_MEMO:
            _VALID_MEMO[key] = (tuple(raws), _gen(raws, (), None, depth, nonfinite=False))
        return _VALID_MEMO[key][1]
    return _gen(raws, steps, site, depth, nonfinite=nonfinite)


def _gen(
    raws: list[dict[str, Any]],
    steps: tuple,
    site: Site | None,
    depth: int,
    *,
    nonfinite: bool,
) -> st.SearchStrategy[Json]:
    """:func:`gen` without the memo of valid strategies."""
    if site is not None and not steps and site.keyword == "anyOf":
        valid = gen(raws, (), None, depth)
        return st.one_of(
            _mutated_strings(valid.filter(lambda v: isinstance(v, str))),
            st.text(max_size=12),
            json_values(3),
        )
    flats = expand(raws)
    if steps and steps[0][0] == "variant":
        return _gen_flat(flats[steps[0][1]], steps[1:], site, depth, nonfinite)
    if len(flats) == 1:
        return _gen_flat(flats[0], steps, site, depth, nonfinite)
    return st.one_of([_gen_flat(f, steps, site, depth, nonfinite) for f in flats])


def _gen_flat(
    flat: Flat, steps: tuple, site: Site | None, depth: int, nonfinite: bool
) -> st.SearchStrategy[Json]:
    if site is not None and not steps:
        if site.keyword == HOLE_KEYWORD:
            return st.just(HOLE)
        return breaker(flat, site, depth, nonfinite=nonfinite)
    if depth > MAX_DEPTH + 2:
        raise UnsupportedSchema("schema nests too deep")
    consts = flat.values("const")
    if consts and not steps:
        return st.just(consts[0])
    enums = flat.values("enum")
    if enums and not steps:
        return st.sampled_from([v for v in enums[0] if all(v in e for e in enums[1:])])
    types = flat.types
    if (
        _steps_match(steps, "prop")
        or _steps_match(steps, "extra")
        or (types == {"object"})
        or ("object" in types and (flat.props or flat.required))
    ):
        return _object(flat, steps, site, depth, nonfinite)
    if _steps_match(steps, "item") or types == {"array"}:
        return _array(flat, steps, site, depth, nonfinite)
    options: list[st.SearchStrategy[Any]] = []
    for name in sorted(types):
        if name == "null":
            options.append(st.none())
        elif name == "boolean":
            options.append(st.booleans())
        elif name == "integer" and "number" not in types:
            options.append(_integer(flat))
        elif name == "number":
            options.append(_number(flat))
        elif name == "string":
            options.append(_string(flat))
        elif name == "array":
            options.append(_array(flat, (), None, depth, nonfinite))
        elif name == "object":
            options.append(_object(flat, (), None, depth, nonfinite))
    return st.one_of(options)


def _object(
    flat: Flat, steps: tuple, site: Site | None, depth: int, nonfinite: bool
) -> st.SearchStrategy[dict[str, Any]]:
    forced = steps[0][1] if _steps_match(steps, "prop") else None
    names = sorted(set(flat.props) | set(flat.required))
    fields: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for name in names:
        subs = flat.props.get(name, [])
        if name == forced:
            fields[name] = gen(subs, steps[1:], site, depth + 1, nonfinite=nonfinite)
        elif name in flat.required:
            fields[name] = gen(subs, (), None, depth + 1) if subs else json_values(3)
        elif depth < MAX_DEPTH:
            optional[name] = gen(subs, (), None, depth + 1)
    base = st.fixed_dictionaries(fields, optional=optional)
    if flat.closed:
        return base
    values = gen(flat.extra, (), None, depth + 1) if flat.extra else json_values(3)
    new_key = st.text(min_size=1, max_size=8).filter(lambda k: k not in names)
    extra = st.dictionaries(new_key, values, max_size=2)
    if _steps_match(steps, "extra"):
        broken = gen(flat.extra, steps[1:], site, depth + 1, nonfinite=nonfinite)
        extra = st.tuples(extra, new_key, broken).map(lambda t: {**t[0], t[1]: t[2]})
    return st.tuples(base, extra).map(lambda t: {**t[1], **t[0]})


def _array(
    flat: Flat, steps: tuple, site: Site | None, depth: int, nonfinite: bool
) -> st.SearchStrategy[list[Any]]:
    low = max(flat.values("minItems"), default=0)
    high = min(flat.values("maxItems"), default=None)
    unique = any(flat.values("uniqueItems"))
    item = gen(flat.items, (), None, depth + 1) if flat.items else json_values(3)
    cap = high if high is not None else max(low, 3 if depth < 2 else 2)
    from trainrecord.canonical import canonical_line

    def key(v: Any) -> str:
        return canonical_line(v)

    items = st.lists(item, min_size=low, max_size=cap, unique_by=key if unique else None)
    if not _steps_match(steps, "item"):
        return items
    broken = gen(flat.items, steps[1:], site, depth + 1, nonfinite=nonfinite)
    rest = st.lists(
        item,
        min_size=max(low - 1, 0),
        max_size=max(cap - 1, max(low - 1, 0)),
        unique_by=key if unique else None,
    )
    return st.tuples(rest, broken, st.integers(0, cap)).map(
        lambda t: [*t[0][: t[2]], t[1], *t[0][t[2] :]]
    )


# --------------------------------------------------------------------------- breakers


def _mutated_strings(valid: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Near misses of valid strings: a character inserted, dropped, changed, or case flipped."""

    def mutate(args: tuple[str, int, str, int]) -> str:
        text, pos, char, how = args
        pos = pos % (len(text) + 1)
        if how == 0:
            return text[:pos] + char + text[pos:]
        if how == 1:
            return text[:pos] + text[pos + 1 :]
        if how == 2:
            return text[:pos] + char + text[pos + 1 :]
        if how == 3:
            return text.upper() if text.upper() != text else text + "\n"
        return " " + text

    return st.tuples(valid, st.integers(0, 80), st.characters(), st.integers(0, 4)).map(mutate)


NOT_DOUBLES = (10**400, -(10**400), 2**1024, 2**1024 - 2**970, -(2**1024 - 2**970))
"""Integer tokens too large for a 64-bit float (the nearest double is infinite; ``2**1024 -
2**970`` rounds up to it): not a number (spec/README.md, "The oracle"). Strict JSON carries
them, so every target gets them, through the exec protocol too."""
LARGEST_DOUBLES = (2**1024 - 2**971, -(2**1024 - 2**971), 2**53 + 1, -(2**53 + 1))
"""Integer tokens that are numbers although far from a small integer: the largest double and
its negative, and the first integers a double cannot hold exactly. The valid halves of the
edge cases :data:`NOT_DOUBLES` break, in that order."""


def not_a_double(value: Json) -> bool:
    """An integer token whose nearest double is infinite (:data:`NOT_DOUBLES`)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    try:
        float(value)
    except OverflowError:
        return True
    return False


def _other_types(allowed: set[str], nonfinite: bool) -> st.SearchStrategy[Json]:
    banned = set(JSON_TYPES) - allowed
    options = [_of_type(t) for t in sorted(banned)]
    near: list[Json] = []
    if "integer" in allowed and "number" not in allowed:
        near += [0.0, 1.0, 3.0, -2.0, 1e16]
    if allowed & {"integer", "number"}:
        near += [v for v in (True, False, "1", "0") if _json_type(v) in banned]
    if nonfinite and "number" in allowed:
        near += [math.nan, math.inf, -math.inf]
    if "number" in allowed:
        near += list(NOT_DOUBLES)
    if near:
        # The near misses (3.0 for an integer, true for a number, NaN) are what
        # implementations get wrong: drawn as often as every other type together.
        return st.one_of(st.sampled_from(near), st.one_of(options) if options else st.nothing())
    return st.one_of(options) if options else st.nothing()


def _json_type(value: Json) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else "object"


def breaker(flat: Flat, site: Site, depth: int, *, nonfinite: bool = False) -> st.SearchStrategy:
    """Values that break ``site.keyword`` of ``flat`` (the oracle decides exactness)."""
    keyword, values = site.keyword, flat.values(site.keyword)
    pure = Flat(
        constraints=[c for c in flat.constraints if c.keyword != keyword],
        required=flat.required,
        closed=flat.closed,
        props=flat.props,
        items=flat.items,
    )
    if keyword == "type":
        return _other_types(flat.types, nonfinite)
    if keyword == "const":
        const = values[0]
        near: list[Json] = [None, True, False, 0, 1, "", [], {}]
        # an enum met at the same place (a fixed severity, one of the five every line
        # takes): its other members break the constant alone
        others = [m for e in flat.values("enum") for m in e if m != const]
        if others:
            return st.sampled_from(others)
        if isinstance(const, str):
            return st.one_of(_mutated_strings(st.just(const)), st.sampled_from(near))
        if isinstance(const, int) and not isinstance(const, bool):
            near += [const + 1, const - 1, float(const), str(const)]
        return st.one_of(st.sampled_from(near), json_values(3))
    if keyword == "enum":
        members = values[0]
        strings = [m for m in members if isinstance(m, str)]
        near_miss = _mutated_strings(st.sampled_from(strings)) if strings else st.nothing()
        return st.one_of(near_miss, st.text(max_size=8), json_values(3))
    if keyword in ("minimum", "exclusiveMinimum"):
        bound = min(values) if keyword == "minimum" else min(values) + 0
        if flat.types & {"number"}:
            return st.one_of(
                st.integers(max_value=math.ceil(bound) - 1),
                st.floats(
                    max_value=bound,
                    allow_nan=False,
                    allow_infinity=False,
                    exclude_max=keyword == "minimum",
                ),
            )
        return st.integers(max_value=math.ceil(bound) - (1 if keyword == "minimum" else 0))
    if keyword in ("maximum", "exclusiveMaximum"):
        bound = max(values)
        if flat.types & {"number"}:
            return st.one_of(
                st.integers(min_value=math.floor(bound) + 1),
                st.floats(
                    min_value=bound,
                    allow_nan=False,
                    allow_infinity=False,
                    exclude_min=keyword == "maximum",
                ),
            )
        return st.integers(min_value=math.floor(bound) + (1 if keyword == "maximum" else 0))
    if keyword == "multipleOf":
        return st.integers().filter(lambda n: n % values[0] != 0)
    if keyword == "minLength":
        return st.text(max_size=max(min(values) - 1, 0))
    if keyword == "maxLength" and not flat.values("pattern") and not flat.values("format"):
        return st.text(min_size=max(values) + 1, max_size=max(values) + 3)
    if keyword in ("maxLength", "pattern", "format"):
        valid = _string(pure)
        blank = st.text(alphabet=" \t\r\n\u00a0\u2003", max_size=4)
        return st.one_of(_mutated_strings(valid), blank, st.text(max_size=70))
    if keyword in ("minItems", "maxItems", "uniqueItems"):
        item = gen(flat.items, (), None, depth + 1) if flat.items else json_values(3)
        if keyword == "minItems":
            return st.lists(item, max_size=max(min(values) - 1, 0))
        if keyword == "maxItems":
            return st.lists(item, min_size=max(values) + 1, max_size=max(values) + 2)
        return st.lists(item, min_size=1, max_size=3).map(lambda xs: [*xs, xs[0]])
    if keyword == "required":
        whole = _object(pure, (), None, depth, nonfinite)
        return whole.map(lambda d: {k: v for k, v in d.items() if k != site.detail})
    if keyword == "additionalProperties":
        whole = _object(pure, (), None, depth, nonfinite)
        key = st.text(min_size=1, max_size=8).filter(lambda k: k not in flat.props)
        return st.tuples(whole, key, json_values(2)).map(lambda t: {**t[0], t[1]: t[2]})
    if keyword == "anyOf":
        return st.one_of(json_values(3), st.text(max_size=10))
    if keyword in ("minProperties", "maxProperties"):
        return st.dictionaries(st.text(max_size=5), json_values(2), max_size=4)
    raise UnsupportedSchema(f"cannot break keyword {keyword}")


# --------------------------------------------------------------------------- edge cases


class _Hole:
    """The place of a site in an instance drawn by :func:`hole_instances`."""

    def __repr__(self) -> str:
        return "HOLE"


HOLE = _Hole()
HOLE_KEYWORD = "@hole"
STRUCTURAL = (
    "required",
    "additionalProperties",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
)
"""Keywords broken by the shape of the object or array itself: their edge case is the
simplest instance the breaker draws, not a value put in a hole."""


def hole_instances(site: Site) -> st.SearchStrategy[Json]:
    """Instances valid everywhere except at the site, which holds :data:`HOLE`."""
    hole = Site(site.schema_id, site.steps, site.rule, HOLE_KEYWORD, site.detail)
    return gen([root_raw(site.schema_id)], site.steps, hole)


def site_flats(site: Site) -> list[Flat]:
    """The flat node(s) at the site (several for the site of an alternation)."""
    flats = expand([root_raw(site.schema_id)])
    for kind, arg in site.steps:
        if kind == "variant":
            flats = [flats[arg]]
            continue
        flat = flats[0]
        subs = (
            flat.props.get(arg, [])
            if kind == "prop"
            else flat.items
            if kind == "item"
            else flat.extra
        )
        flats = expand(subs)
    return flats


def fill(instance: Json, value: Json) -> Json:
    """``instance`` with :data:`HOLE` replaced by ``value``."""
    if instance is HOLE:
        return value
    if isinstance(instance, dict):
        return {k: fill(v, value) for k, v in instance.items()}
    if isinstance(instance, list):
        return [fill(v, value) for v in instance]
    return instance


def site_text(site: Site) -> st.SearchStrategy[str] | None:
    """Valid text at a string site (to spell near misses of it), or None."""
    flats = site_flats(site)
    if len(flats) != 1 or "string" not in flats[0].types:
        return None
    try:
        return _string(flats[0])
    except UnsupportedSchema:
        return None


def edge_values(site: Site, text: str | None, *, nonfinite: bool = False) -> list[Json]:
    """The values that define a value keyword's rule, most telling first: ``true``,
    ``false`` and ``3.0`` for an integer, NaN for a number (in-process only) and the
    integers no double holds (:data:`NOT_DOUBLES`, every target), the exact
    bound and one past it, the empty string, one character too many or too few, near
    misses of a constant, an enum member or valid text. The oracle later keeps those that
    break exactly the rule."""
    keyword = site.keyword
    flats = site_flats(site)
    flat = flats[0]
    values = flat.values(keyword)
    near: list[Json] = []
    texts: list[Json] = []
    if text is not None:
        texts = [text + "0", text[:-1], text.upper(), " " + text, text + "\n", text + " "]
    if keyword == "type":
        allowed = flat.types
        if allowed & {"integer", "number"}:
            near += [True, False]
        if "integer" in allowed and "number" not in allowed:
            near += [3.0, 0.0, 1.0, -2.0, 1e16]
        if nonfinite and "number" in allowed:
            near += [math.nan, math.inf, -math.inf]
        if allowed & {"integer", "number"}:
            near += ["1", "0"]
        near += [None, False, 0, 1.5, "", "0", [], {}]
        near = [v for v in near if _json_type(v) not in allowed]
        return near + (list(NOT_DOUBLES) if "number" in allowed else [])
    if keyword == "const":
        const = values[0]
        near += [m for e in flat.values("enum") for m in e if m != const]
        if isinstance(const, str):
            near += [const.upper(), const + " ", " " + const, const[:-1], const + "0"]
        elif isinstance(const, int) and not isinstance(const, bool):
            near += [float(const), str(const), const + 1, const - 1, True, False]
        return [*near, None, True, False, 0, 1, "", [], {}]
    if keyword == "enum":
        for member in values[0]:
            if isinstance(member, str):
                near += [member.upper(), member + " ", member[:-1]]
        return [*near, "", None, 0, True, [], {}]
    if keyword in ("minimum", "exclusiveMinimum"):
        bound = max(values)
        near = [bound] if keyword == "exclusiveMinimum" else []
        near += [math.ceil(bound) - 1]
        if "number" in flat.types:
            near += [math.nextafter(bound, -math.inf), float(math.ceil(bound) - 1)]
        return [v for v in near if not isinstance(v, float) or math.isfinite(v)]
    if keyword in ("maximum", "exclusiveMaximum"):
        bound = min(values)
        near = [bound] if keyword == "exclusiveMaximum" else []
        near += [math.floor(bound) + 1]
        if "number" in flat.types:
            near += [math.nextafter(bound, math.inf), float(math.floor(bound) + 1)]
        return [v for v in near if not isinstance(v, float) or math.isfinite(v)]
    if keyword == "multipleOf":
        return [values[0] + 1, 1]
    if keyword == "minLength":
        n = max(values)
        return [*texts, "", "0" * (n - 1), "a" * (n - 1)]
    if keyword == "maxLength":
        n = min(values)
        return [*texts, (text or "") + "0" * (n + 1 - len(text or "")), "a" * (n + 1)]
    if keyword in ("pattern", "format"):
        return [*texts, "", " ", "\t", "0", "a"]
    if keyword == "anyOf":
        return [None, "", 0, True, 1.5, [], {}, "0"]
    return []
