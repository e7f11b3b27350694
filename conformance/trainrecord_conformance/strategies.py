"""Hypothesis strategies for every record of the spec, valid and rule-breaking.

Strategies of our own, derived from the shipped schemas (:mod:`.schemagen`), not from
hypothesis-jsonschema (drafts up to 7 only). Two families:

* :func:`valid_instances` draws instances a schema accepts;
* :func:`breaking_instances` draws, for one refusal rule, instances valid everywhere
  except at one place, where exactly that rule is broken.

Every drawn value is checked against the oracle (:func:`trainrecord.schemas.problems`):
a valid draw the oracle refuses raises :class:`StrategyDrift` (the engine and the spec
disagree: a bug to fix, never a silent pass); a breaking draw is kept only when the oracle
names exactly the one rule. Shrinking works as usual: failures show the smallest instance.

The other strategies feed the operations that are not plain validation: canonical-JSON
bodies and configurations, Foundry environments, diary event sequences.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException, Unsatisfiable

from trainrecord.schemas import problems
from trainrecord_conformance import schemagen
from trainrecord_conformance.oracle import schema_problems
from trainrecord_conformance.schemagen import Site, json_values

__all__ = [
    "Broken",
    "StrategyDrift",
    "breaking_instances",
    "canonical_bodies",
    "configs",
    "diary_events",
    "edge_cases",
    "foundry_env",
    "integer_spellings",
    "json_values",
    "non_integer_spellings",
    "oracle_rules",
    "rule_sites",
    "schema_rules",
    "tricky_floats",
    "tricky_strings",
    "valid_instances",
]


class StrategyDrift(AssertionError):
    """A strategy drew a value the oracle disagrees with: the strategy drifted from the spec."""


@dataclass(frozen=True)
class Broken:
    """An instance that breaks exactly one rule of one schema, and where."""

    schema_id: str
    instance: Any
    site: str


def oracle_rules(instance: Any, schema_id: str) -> set[str]:
    """The rule ids the oracle reports for ``instance`` (empty when valid)."""
    return {p.rule for p in problems(instance, schema_id)}


def _checked_valid(schema_id: str) -> Any:
    def check(instance: Any) -> Any:
        found = oracle_rules(instance, schema_id)
        if found:
            raise StrategyDrift(
                f"valid_instances({schema_id}) drew {instance!r}, "
                f"which the oracle refuses: {sorted(found)}"
            )
        return instance

    return check


@cache
def valid_instances(schema_id: str) -> st.SearchStrategy[Any]:
    """Instances the schema ``schema_id`` accepts, each confirmed by the oracle."""
    raw = schemagen.root_raw(_full_id(schema_id))
    flats = schemagen.expand([raw])
    strategy = schemagen.gen([raw])
    if any(f.approximate for f in flats):
        return strategy.filter(lambda v: not oracle_rules(v, _full_id(schema_id)))
    return strategy.map(_checked_valid(_full_id(schema_id)))


def rule_sites(rule: str) -> tuple[Site, ...]:
    """Every place in the shipped schemas where ``rule`` can be broken."""
    return schemagen.sites_by_rule().get(rule, ())


def schema_rules() -> set[str]:
    """Every rule id that has at least one site in the shipped schemas."""
    return set(schemagen.sites_by_rule())


def _branch_rules(instance: Any, site: Site) -> set[str]:
    """The oracle's rules for ``instance`` against the alternative the site lies in.

    For a schema whose root is a ``oneOf`` (the report, selected by ``kind``), the oracle
    reports the errors of every branch; what the instance breaks is what it breaks in
    its own branch.
    """
    root = schemagen.root_raw(site.schema_id)
    if site.steps and site.steps[0][0] == "variant":
        for keyword in ("oneOf", "anyOf"):
            if keyword in root:
                pointer = f"{site.schema_id}#/{keyword}/{site.steps[0][1]}"
                return {p.rule for p in schema_problems(instance, pointer)}
    return oracle_rules(instance, site.schema_id)


def _breaks_exactly(instance: Any, site: Site) -> bool:
    return _branch_rules(instance, site) == {site.rule}


def _site_strategy(site: Site, nonfinite: bool) -> st.SearchStrategy[Broken]:
    raw = schemagen.root_raw(site.schema_id)
    inner = schemagen.gen([raw], site.steps, site, nonfinite=nonfinite)
    return inner.filter(lambda v: _breaks_exactly(v, site)).map(
        lambda v: Broken(site.schema_id, v, site.describe())
    )


@cache
def breaking_instances(
    rule: str, *, nonfinite: bool = False, schema_id: str | None = None
) -> st.SearchStrategy[Broken]:
    """Instances that break exactly ``rule`` (the oracle reports that rule and no other).

    ``nonfinite`` also draws NaN and infinities where a number is expected (only for
    in-process targets: the harness protocol is strict JSON). ``schema_id`` keeps the draws
    to one schema.
    """
    found = [s for s in rule_sites(rule) if schema_id is None or s.schema_id == _full_id(schema_id)]
    if not found:
        raise KeyError(f"rule {rule} has no site in the shipped schemas")
    options = []
    for site in found:
        try:
            options.append(_site_strategy(site, nonfinite))
        except schemagen.UnsupportedSchema:
            continue
    if not options:
        raise KeyError(f"rule {rule}: no site this engine can generate from")
    return st.one_of(options)


_SIMPLEST = settings(
    database=None,
    derandomize=True,
    max_examples=20,
    phases=[Phase.generate],
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


class _Drawn(BaseException):
    """Ends :func:`simplest`'s search at its first value. A BaseException, which
    Hypothesis lets through at once: an Exception would be a failing example that it
    runs again and pretty-prints."""


def simplest(strategy: st.SearchStrategy[Any]) -> Any:
    """The simplest value ``strategy`` draws (Hypothesis tries it first), or the first one
    a derandomized search finds when a filter refuses it: the same on every run.

    Not ``hypothesis.find``: its last step pretty-prints the value found as a failing
    example, through every ``.map`` that built it, a quarter of a second for one of our
    schema instances (most of the suite's time with Hypothesis 6.170)."""
    drawn: list[Any] = []

    @_SIMPLEST
    @given(strategy)
    def first(value: Any) -> None:
        drawn.append(value)
        raise _Drawn

    try:
        first()
    except _Drawn:
        return drawn[0]
    raise Unsatisfiable(f"no value in {_SIMPLEST.max_examples} tries")


def _plain(value: Any) -> tuple[str, str]:
    return (type(value).__name__, repr(value))


@cache
def edge_cases(
    rule: str, *, nonfinite: bool = False, schema_id: str | None = None
) -> tuple[tuple[Any, Broken], ...]:
    """The cases that define ``rule``, as (valid instance, breaking instance) pairs, the
    same on every run and every profile: checks run them as explicit examples before any
    random draw.

    For one site per keyword of the rule (per field, for a missing one) (its first in the schemas), the simplest instance
    valid everywhere else holds each of the keyword's edge values in turn
    (:func:`schemagen.edge_values`: ``true``, ``false`` and ``3.0`` for an integer, the
    exact bound, the empty string, ...); only those the oracle confirms break exactly the
    rule are kept. A keyword broken by the shape itself (a missing required field, an
    extra property, too few items) gives the simplest breaking instance. The valid half is
    the simplest valid instance of the same schema, except for a number's type rule: an
    integer no double holds (``10**400``, ``2**1024``) is paired with the same instance
    holding the largest double or ``2**53 + 1`` (:func:`_largest_numbers`).
    """
    found = [s for s in rule_sites(rule) if schema_id is None or s.schema_id == _full_id(schema_id)]
    chosen: dict[tuple[str, str], Site] = {}
    for site in found:
        chosen.setdefault((site.keyword, str(site.detail)), site)
    out: list[tuple[Any, Broken]] = []
    seen: set[tuple[str, str]] = set()
    for site in chosen.values():
        try:
            valid = simplest(valid_instances(site.schema_id))
            broken: list[tuple[Any, Any]] = []
            if site.keyword not in schemagen.STRUCTURAL:
                text = schemagen.site_text(site)
                holed, spelled = simplest(
                    st.tuples(
                        schemagen.hole_instances(site), text if text is not None else st.none()
                    )
                )
                partners = iter(_largest_numbers(site, holed))
                for v in schemagen.edge_values(site, spelled, nonfinite=nonfinite):
                    instance = schemagen.fill(holed, v)
                    if _breaks_exactly(instance, site):
                        partner = next(partners, valid) if schemagen.not_a_double(v) else valid
                        broken.append((partner, instance))
            if not broken:
                broken = [(valid, simplest(_site_strategy(site, nonfinite)).instance)]
        except (HypothesisException, schemagen.UnsupportedSchema):
            continue
        for partner, instance in broken:
            key = (site.schema_id, json.dumps(instance, sort_keys=True, default=repr))
            if key not in seen:
                seen.add(key)
                out.append((partner, Broken(site.schema_id, instance, f"{site.describe()} edge")))
    return tuple(out)


def _largest_numbers(site: Site, holed: Any) -> list[Any]:
    """For a number's type rule: the instance valid everywhere else holding each of
    :data:`schemagen.LARGEST_DOUBLES` (the largest double, 2**53 + 1), those the oracle
    confirms valid. They are the valid halves of the integers no double holds, so the
    line between the two is run both ways."""
    if site.keyword != "type" or not any("number" in f.types for f in schemagen.site_flats(site)):
        return []
    filled = [schemagen.fill(holed, v) for v in schemagen.LARGEST_DOUBLES]
    return [f for f in filled if not oracle_rules(f, site.schema_id)]


def _full_id(schema_id: str) -> str:
    if schema_id.startswith("https://"):
        return schema_id
    return f"https://trainrecord.dev/schemas/{schema_id}"


# --------------------------------------------------------------------------- canonical JSON


def tricky_floats(nonfinite: bool = False) -> st.SearchStrategy[float]:
    """Floats whose spelling differs between languages: exponents, -0.0, 17 digits (and,
    with ``nonfinite``, NaN and the infinities, drawn often)."""
    edges = [
        0.1,
        1e-07,
        1e-05,
        0.0001,
        1e16,
        1e15,
        1e22,
        2.305945873260498,
        -0.0,
        5e-324,
        1.7976931348623157e308,
        0.30000000000000004,
        123456789012345680.0,
        100.0,
    ]
    finite = st.one_of(st.sampled_from(edges), st.floats(allow_nan=False, allow_infinity=False))
    if not nonfinite:
        return finite
    return st.one_of(st.sampled_from([math.nan, math.inf, -math.inf]), finite)


def tricky_strings() -> st.SearchStrategy[str]:
    """Text with non-ASCII, astral and control characters, quotes and slashes."""
    edges = ["", "é", "日本", "\U0001f600", "\x00\x1f\x7f", '"\\/', "\u2028\u2029", "\ud800"]
    return st.one_of(st.sampled_from(edges), st.text(max_size=12))


def _canonical_values(max_leaves: int, nonfinite: bool = False) -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**80), 2**80),
        tricky_floats(nonfinite),
        tricky_strings(),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(tricky_strings(), inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def canonical_bodies() -> st.SearchStrategy[dict[str, Any]]:
    """JSON objects with everything canonical JSON must spell exactly (diary line bodies)."""
    return st.dictionaries(tricky_strings(), _canonical_values(8), max_size=6)


def configs(nonfinite: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """Run configurations, as a Foundry config hash receives them.

    With ``nonfinite`` (only for a target that takes Python values: JSON cannot carry them)
    they may hold NaN and infinities, which json.dumps writes and the hash covers.
    """
    if not nonfinite:
        return canonical_bodies()
    return st.dictionaries(tricky_strings(), _canonical_values(8, nonfinite=True), max_size=6)


# --------------------------------------------------------------------------- Foundry


def integer_spellings(low: int = 0, high: int = 10**6) -> st.SearchStrategy[tuple[str, int]]:
    """Environment-variable spellings of an integer, and the integer they mean."""
    return st.integers(low, high).map(lambda n: (str(n), n))


def non_integer_spellings() -> st.SearchStrategy[str]:
    """Values an integer environment variable must refuse (see spec/README.md, Foundry)."""
    edges = [
        "",
        " ",
        "abc",
        "1.5",
        "1e3",
        "0x10",
        "1_000",
        "١٢",
        "+-1",
        "--1",
        "1 2",
        "nan",
        "inf",
        "½",
        "true",
    ]
    return st.one_of(
        st.sampled_from(edges),
        st.text(max_size=6).filter(
            lambda s: not s.strip().lstrip("+-").isascii() or not s.strip().lstrip("+-").isdigit()
        ),
    )


def foundry_env() -> st.SearchStrategy[dict[str, str]]:
    """A valid writer environment: FOUNDRY_RUN_ID and, sometimes, the optional variables."""
    return st.fixed_dictionaries(
        {"FOUNDRY_RUN_ID": st.integers(0, 10**9).map(str)},
        optional={
            "SLURM_RESTART_COUNT": st.integers(0, 20).map(str),
            "OMP_NUM_THREADS": st.integers(1, 64).map(str),
            "RANK": st.just("0"),
        },
    )


# --------------------------------------------------------------------------- diary

COMMON_FIELDS = ("seq", "time", "event", "prev", "hash")


def diary_events(max_events: int = 6) -> st.SearchStrategy[list[dict[str, Any]]]:
    """A run's events as a writer receives them: run_start first, common fields left out."""

    def event_of(name: str) -> st.SearchStrategy[dict[str, Any]]:
        return valid_instances(f"diary/events/{name}.schema.json").map(
            lambda line: {
                k: v for k, v in line.items() if k not in COMMON_FIELDS[:2] + COMMON_FIELDS[3:]
            }
        )

    middle = st.sampled_from(
        ["alarm", "loss_spike", "no_gradients", "nonfinite_loss", "sink_error", "loss_recovered"]
    )
    rest = st.lists(middle.flatmap(event_of), max_size=max_events - 1)
    return st.tuples(event_of("run_start"), rest).map(lambda t: [t[0], *t[1]])
