"""CLI polish, each command run as a real process: plain --help texts, serve's --port
default, verify refusing a private key, seal refusing to replace a signature unless asked,
validate listing the schemas it accepts, show's readable numbers and plurals."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.diary.helpers import BODIES, cli, write_run
from trainrecord.diary import DiaryWriter, MetricsWriter, verify


def usage_error(out: subprocess.CompletedProcess[str]) -> str:
    err = out.stderr.strip()
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in err and "\n" not in err, err
    return err


@pytest.mark.parametrize(
    "command", ["show", "plot", "seal", "keygen", "demo", "verify", "validate", "serve"]
)
def test_help_texts_have_no_restructuredtext_markup(command: str) -> None:
    out = cli(command, "--help")
    assert out.returncode == 0, out.stderr
    assert "``" not in out.stdout and ":mod:`" not in out.stdout and ":func:`" not in out.stdout
    assert f"trainrecord {command}" in out.stdout


def test_show_help_starts_with_its_plain_synopsis() -> None:
    out = cli("show", "--help")
    assert (
        "\ntrainrecord show RUN_DIR [--key PUBLIC_KEY]: a human summary of a training record.\n"
        in out.stdout
    )


def test_serve_help_shows_the_port_default() -> None:
    out = cli("serve", "--help")
    assert "default 8787" in " ".join(out.stdout.split())
    assert "--cert TLS_CERT" in out.stdout and "--key TLS_KEY" in out.stdout  # not KEY


def test_top_level_help_has_examples_and_says_verify_from_validate() -> None:
    # A newcomer probe: trainrecord --help said nothing about which command to use.
    out = cli("--help")
    assert out.returncode == 0, out.stderr
    assert "\nexamples:\n" in out.stdout
    for command in ("demo --out runs/demo", "show runs/demo", "verify runs/demo", "validate"):
        assert f"\n  trainrecord {command}" in out.stdout
    assert "\n  trainrecord serve" in out.stdout
    assert "verify: was the diary changed? validate: is each file's shape right?" in out.stdout


def test_keygen_help_describes_its_arguments() -> None:
    out = cli("keygen", "--help")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "PRIVATE_KEY where to write the private key" in text
    assert "--public PUBLIC_KEY where to write the public key (default PRIVATE_KEY.pub;" in text


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("keys")
    for name in ("a", "b"):
        assert cli("keygen", root / name).returncode == 0
    return {"a": root / "a", "a.pub": root / "a.pub", "b": root / "b", "b.pub": root / "b.pub"}


@pytest.fixture
def signed_run(tmp_path: Path, keys: dict[str, Path]) -> Path:
    write_run(tmp_path / "run", seal=False)
    out = cli("seal", tmp_path / "run", "--key", keys["a"])
    assert out.returncode == 0, out.stderr
    return tmp_path / "run"


def test_verify_refuses_a_private_key_as_a_usage_error(
    signed_run: Path, keys: dict[str, Path]
) -> None:
    out = cli("verify", signed_run, "--key", keys["a"])
    err = usage_error(out)
    assert "signature valid" not in out.stdout
    assert f"--key {keys['a']} is a private key" in err and "PUBLIC" in err and ".pub" in err
    secret = keys["a"].read_text().splitlines()[1]
    assert secret not in out.stdout + out.stderr
    ok = cli("verify", signed_run, "--key", keys["a.pub"])
    assert ok.returncode == 0 and "signature valid" in ok.stdout


def test_show_checks_a_signature_with_key_as_verify_does(
    signed_run: Path, keys: dict[str, Path], tmp_path: Path
) -> None:
    """show's integrity line told to "pass --key" to check a signature, and show had no --key."""
    unchecked = cli("show", signed_run)
    assert unchecked.returncode == 0, unchecked.stderr
    assert "signature not checked: pass --key" in unchecked.stdout.splitlines()[0]
    ok = cli("show", signed_run, "--key", keys["a.pub"])
    assert ok.returncode == 0, ok.stderr
    verdict = cli("verify", signed_run, "--key", keys["a.pub"]).stdout.splitlines()[0]
    assert "signature valid" in verdict and ok.stdout.splitlines()[0] == f"integrity: {verdict}"
    other = cli("show", signed_run, "--key", keys["b.pub"])
    assert other.returncode == 1 and other.stdout.startswith("integrity: FAILED")
    assert "NOT TRUSTWORTHY" in other.stdout and "without a valid signature" in other.stdout
    unsigned = tmp_path / "unsigned"
    write_run(unsigned)
    plain = cli("show", unsigned, "--key", keys["a.pub"])
    assert plain.returncode == 1 and "[seal.signature.missing]" in plain.stdout
    assert "the lines hold together, but without a valid signature" in plain.stdout
    err = usage_error(cli("show", signed_run, "--key", keys["a"]))
    assert err.startswith("trainrecord show: --key") and "private key" in err
    assert keys["a"].read_text().splitlines()[1] not in err
    missing = usage_error(cli("show", signed_run, "--key", keys["a"].parent / "nope.pub"))
    assert "nope.pub" in missing and "public key" in missing
    both = usage_error(cli("show", signed_run, "--key", keys["a.pub"], "--no-verify"))
    assert "--no-verify" in both and "--key" in both


def _signer(run: Path) -> str:
    return json.loads((run / "record.json").read_text())["signature"]["public_key_sha256"]


def test_seal_refuses_to_replace_another_keys_signature_unless_asked(
    signed_run: Path, keys: dict[str, Path]
) -> None:
    before = {n: (signed_run / n).read_bytes() for n in ("record.json", "record.sig")}
    err = usage_error(cli("seal", signed_run, "--key", keys["b"]))
    assert "already signed" in err and "--replace" in err and "another key" in err
    assert {n: (signed_run / n).read_bytes() for n in before} == before
    assert verify(signed_run, public_key=keys["a.pub"]).ok

    out = cli("seal", signed_run, "--key", keys["b"], "--replace")
    assert out.returncode == 0, out.stderr
    assert verify(signed_run, public_key=keys["b.pub"]).ok
    assert not verify(signed_run, public_key=keys["a.pub"]).ok


def test_seal_without_a_key_refuses_to_drop_a_signature_unless_asked(
    signed_run: Path, keys: dict[str, Path]
) -> None:
    err = usage_error(cli("seal", signed_run))
    assert "already signed" in err and "--replace" in err and "remove" in err
    assert (signed_run / "record.sig").is_file()
    assert verify(signed_run, public_key=keys["a.pub"]).ok
    out = cli("seal", signed_run, "--replace")
    assert out.returncode == 0, out.stderr
    assert not (signed_run / "record.sig").exists() and verify(signed_run).ok


def test_seal_again_with_the_same_key_needs_no_replace(
    signed_run: Path, keys: dict[str, Path]
) -> None:
    out = cli("seal", signed_run, "--key", keys["a"])
    assert out.returncode == 0, out.stderr
    assert verify(signed_run, public_key=keys["a.pub"]).ok


def test_validate_with_an_unknown_schema_lists_the_schemas_it_accepts(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}")
    err = usage_error(cli("validate", "--schema", "nope", tmp_path / "x.json"))
    assert "unknown schema 'nope'" in err
    assert "diary/events/alarm.schema.json" in err and "reporting/reporting.schema.json" in err
    assert "https://trainrecord.dev/schemas/<path>" in err
    assert "foundry-witness" not in err  # the formats are --format's values, not --schema's
    # what it lists is accepted, as a path and as a $id
    line = {"seq": 0, "time": 0.0, "event": "alarm", "prev": "0" * 64, "hash": "0" * 64}
    (tmp_path / "line.json").write_text(json.dumps({**line, **BODIES["alarm"]}))
    for given in (
        "diary/events/alarm.schema.json",
        "https://trainrecord.dev/schemas/diary/events/alarm.schema.json",
    ):
        out = cli("validate", "--schema", given, tmp_path / "line.json")
        assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize(
    "given",
    ["alarm", "alarms", "events/alarm", "alarm.schema.json", "diary/events/alram.schema.json"],
)
def test_validate_with_a_schema_name_close_to_one_suggests_it_alone(
    tmp_path: Path, given: str
) -> None:
    # A newcomer probe: --schema alarm listed all 33 schema paths.
    (tmp_path / "x.json").write_text("{}")
    err = usage_error(cli("validate", "--schema", given, tmp_path / "x.json"))
    assert err == (
        f"trainrecord validate: unknown schema {given!r}; "
        "did you mean diary/events/alarm.schema.json?"
    )


def test_validate_with_an_unknown_format_lists_the_formats(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}")
    err = usage_error(cli("validate", "--format", "nope", tmp_path / "x.json"))
    assert "unknown format 'nope'" in err and "foundry-witness" in err and "report" in err


def test_show_rounds_numbers_to_4_significant_digits_and_pluralises(tmp_path: Path) -> None:
    with DiaryWriter(tmp_path) as w, MetricsWriter(tmp_path) as m:
        w.append("run_start", BODIES["run_start"])
        w.append("manifest", {**BODIES["manifest"], "check_every": 1})
        w.append(
            "loss_spike",
            {**BODIES["loss_spike"], "value": 2.4107630252838135, "baseline": 0.05275389924645424},
        )
        w.append("channels", {**BODIES["channels"], "layer": "conv3.0"})
        m.append({"step": 0, "loss": 2.3, "grad": {"conv1.0": 0.1}, "stuck": {}})
        w.append(
            "run_end", {**BODIES["run_end"], "steps": 1, "checks": 1, "metrics_sha256": m.sha256()}
        )
    out = cli("show", tmp_path)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "loss_spike 2.411 (baseline 0.05275)" in text
    assert "2.4107630252838135" not in text and "0.05275389924645424" not in text
    assert "ended after 1 step and 1 check\n" in text
    assert "checks every step;" not in text and "checks every 1 step;" in text
    assert "stuck channels (1 layer):" in text


def test_show_pairs_each_alarm_with_its_clear_and_dates_stuck_channels_from_their_episode(
    tmp_path: Path,
) -> None:
    # A user probe: "4.1: exploding at step 681, 999, 1472; cleared at step 1473" read as one
    # alarm from 681 to 1473 (each lasted one step), and "since step 1999" named the last
    # of 703 channel events, not when the layer got stuck.
    alarm = {**BODIES["alarm"], "layer": "4.1", "diagnosis": "exploding"}
    cleared = {**BODIES["alarm_cleared"], "layer": "4.1", "diagnosis": "exploding"}
    stuck = {**BODIES["channels"], "layer": "fc"}
    none = {**stuck, "level": "none", "n_certified": 0, "n_flat": 0, "n_observed": 0}
    none.update(n_decayed=0, certified=[], flat=[], observed=[])
    producers = [
        {"layer": "fc", "batchnorm": None, "relu": "act", "certifiable": True},
        {"layer": "head", "batchnorm": None, "relu": None, "certifiable": False, "reason": "x"},
    ]
    with DiaryWriter(tmp_path) as w, MetricsWriter(tmp_path) as m:
        w.append("run_start", BODIES["run_start"])
        w.append("manifest", {**BODIES["manifest"], "producers": producers})
        for step in (681, 999):
            w.append("alarm", {**alarm, "step": step})
            w.append("alarm_cleared", {**cleared, "step": step + 1})
        w.append("channels", {**stuck, "step": 100})
        w.append("channels_cleared", {**none, "step": 200})
        w.append("channels", {**stuck, "step": 300})
        w.append("channels", {**stuck, "step": 400, "level": "most"})
        w.append("alarm", {**alarm, "step": 1472})
        m.append({"step": 0, "loss": 2.3, "grad": {"fc": 0.1}, "stuck": {}})
        w.append("run_end", {**BODIES["run_end"], "checks": 1, "metrics_sha256": m.sha256()})
    out = cli("show", tmp_path)
    assert out.returncode == 0, out.stderr
    assert "  4.1: exploding at step 681-682, 999-1000, 1472 (open)\n" in out.stdout
    assert "  fc: most of " in out.stdout
    assert "since step 300 (4 channel events in all)\n" in out.stdout
    assert "  head: no ReLU takes its output (or a norm other than BatchNorm" in out.stdout
    assert "only flat and decayed channels are checked there (no silent ones, no certificates)" in (
        " ".join(out.stdout.split())
    )


def test_validate_says_a_valid_diary_is_valid_in_shape_only_and_names_verify(
    tmp_path: Path,
) -> None:
    # A newcomer probe: validate printed "valid diary" for a diary with one field changed
    # (verify fails it on the hash chain), and its help never named verify.
    run = tmp_path / "run"
    write_run(run)
    out = cli("validate", run / "diary.jsonl")
    assert out.returncode == 0, out.stderr
    assert out.stdout == (
        f"{run / 'diary.jsonl'}: valid diary (schema only: trainrecord verify {run} "
        "checks the hash chain and seal)\n"
    )
    help_text = " ".join(cli("validate", "--help").stdout.split())
    assert "validate checks each file's shape; verify checks that a diary was not changed" in (
        help_text
    )


@pytest.mark.parametrize("command", ["verify", "show"])
def test_verify_and_show_point_a_foundry_folder_to_validate(tmp_path: Path, command: str) -> None:
    """Probe: ``verify res/`` on Foundry run records said only "no diary.jsonl"; ``show``
    did not even say what to give."""
    res = tmp_path / "res"
    res.mkdir()
    (res / "observed.attempt0.json").write_text("{}\n")
    (res / "metrics.json").write_text("[]\n")
    err = usage_error(cli(command, res))
    assert f"trainrecord {command}: {res} holds Foundry run records" in err
    assert "metrics.json, observed.attempt0.json" in err
    assert f"trainrecord validate {res}" in err
    empty = usage_error(cli(command, tmp_path))
    assert f"no diary.jsonl in {tmp_path}; give the run directory" in empty
