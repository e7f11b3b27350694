"""The writers under misuse (a probe of bad input): every argument checked before any file
is made, the signing key loaded when the writer is made (not at close, after the run), a
refused first line or row leaves no empty file, and a signed record resumed without its key
is said to lose its signature (before: record.sig was removed without a word)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.diary.helpers import BODIES, write_run
from trainrecord.arguments import ArgumentRefused
from trainrecord.diary import DiaryWriter, MetricsWriter, generate_keypair, verify
from trainrecord.errors import RecordRefused


def _session(run: Path, **options: Any) -> None:
    """One more session (run_start ... run_end) appended to ``run``."""
    with DiaryWriter(run, **options) as w, MetricsWriter(run) as m:
        w.append("run_start", BODIES["run_start"])
        w.append("run_end", {**BODIES["run_end"], "metrics_sha256": m.sha256()})


@pytest.mark.parametrize(
    ("options", "argument"),
    [
        ({"fsync_interval": -1}, "fsync_interval"),
        ({"fsync_interval": float("nan")}, "fsync_interval"),
        ({"fsync_interval": "1"}, "fsync_interval"),
        ({"drop_torn_tail": "yes"}, "drop_torn_tail"),
        ({"validate": 1}, "validate"),
        ({"seal": "no"}, "seal"),
    ],
)
def test_a_bad_option_is_refused_before_any_folder_or_file(
    tmp_path: Path, options: dict[str, Any], argument: str
) -> None:
    run = tmp_path / "run"
    with pytest.raises(
        ArgumentRefused, match=rf"DiaryWriter\({argument}=\.\.\.\): {argument} must"
    ):
        DiaryWriter(run, **options)
    assert not run.exists()
    if argument in ("fsync_interval", "validate"):
        with pytest.raises(ArgumentRefused, match=rf"MetricsWriter\({argument}=\.\.\.\)"):
            MetricsWriter(run, **options)
        assert not run.exists()


def test_an_empty_or_missing_run_dir_is_refused_naming_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for writer in (DiaryWriter, MetricsWriter):
        with pytest.raises(ArgumentRefused, match=r"run_dir must be a non-empty path"):
            writer("")
        with pytest.raises(TypeError, match=r"run_dir must be a path"):
            writer(None)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []  # nothing written into the current directory


def test_an_unknown_fsync_policy_is_refused_before_any_folder(tmp_path: Path) -> None:
    with pytest.raises(RecordRefused) as err:
        DiaryWriter(tmp_path / "run", fsync_policy="sometimes")  # type: ignore[arg-type]
    assert err.value.rule == "diary.writer.fsync_policy"
    assert not (tmp_path / "run").exists()


def test_a_missing_or_public_signing_key_is_refused_when_the_writer_is_made(
    tmp_path: Path,
) -> None:
    # The probe: DiaryWriter(signing_key="missing_key") passed; close(), after the whole
    # run, raised a raw FileNotFoundError and left the record unsealed.
    priv, pub, _ = generate_keypair(tmp_path / "keys" / "signer")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("SECRET-LOOKING TEXT, not a key\n")
    cases = [
        (tmp_path / "missing_key", "cannot be read (No such file or directory)"),
        (tmp_path / "keys", "cannot be read"),  # a folder
        (pub, "is a public key: signing needs the private key"),
        (garbage, "not an unencrypted PEM private key"),
    ]
    run = tmp_path / "run"
    for key, said in cases:
        with pytest.raises(RecordRefused) as err:
            DiaryWriter(run, signing_key=key)
        assert err.value.rule == "seal.key.format"
        assert str(key) in str(err.value) and said in str(err.value)
        assert "SECRET" not in str(err.value)
        assert not run.exists()
    with pytest.raises(RecordRefused, match="is a public key") as err:
        DiaryWriter(run, signing_key=Ed25519PrivateKey.generate().public_key())
    with pytest.raises(ArgumentRefused, match="signing_key must be the path") as wrong:
        DiaryWriter(run, signing_key=12345)
    assert "12345" not in str(wrong.value)  # (a key's value is never shown)
    with pytest.raises(ArgumentRefused, match="with seal=False would sign nothing"):
        DiaryWriter(run, signing_key=priv, seal=False)
    assert not run.exists()
    _session(run, signing_key=priv)  # a good key: signed at close
    assert verify(run, public_key=pub).signed


def test_a_refused_first_line_leaves_no_empty_diary(tmp_path: Path) -> None:
    # The probe: a refused first event left a 0-byte diary.jsonl, which verify then calls
    # diary.file.empty. The writer made the file: it removes it while it is still empty.
    run = tmp_path / "run"
    with DiaryWriter(run) as w, MetricsWriter(run) as m:
        with pytest.raises(RecordRefused, match=r"diary\.order\.run_start"):
            w.append("alarm", BODIES["alarm"])
        with pytest.raises(RecordRefused, match=r"diary\.text\.type"):
            w.append("run_start", {**BODIES["run_start"], "name": 123})
        with pytest.raises(RecordRefused):
            m.append({"step": 0, "loss": 1.0, "grad": {}, "stuck": {"c": [1]}})
        # the empty diary and its lock stay while the writer is open: a second writer
        # would start the diary, and this one then write a second seq 0 (a review found it)
        with pytest.raises(RecordRefused, match=r"diary\.writer\.locked"):
            DiaryWriter(run)
        w.append("run_start", BODIES["run_start"])  # the writer goes on
        w.append("run_end", {**BODIES["run_end"], "metrics_sha256": m.sha256()})
    assert verify(run).ok
    # closed with nothing written: the diary it made is gone; an empty metrics.jsonl stays
    # (the record of no rows, which a run_end names)
    other = tmp_path / "other"
    with (
        DiaryWriter(other) as w,
        MetricsWriter(other),
        pytest.raises(RecordRefused, match=r"diary\.order\.run_start"),
    ):
        w.append("alarm", BODIES["alarm"])
    assert sorted(p.name for p in other.iterdir()) == ["metrics.jsonl"]


def test_a_refused_first_line_leaves_a_file_the_writer_did_not_make(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "diary.jsonl").write_bytes(b"")  # there before the writer: not its to remove
    with DiaryWriter(run, seal=False) as w, pytest.raises(RecordRefused):
        w.append("alarm", BODIES["alarm"])
    assert (run / "diary.jsonl").exists()


def test_a_writer_closed_without_a_line_leaves_no_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    w = DiaryWriter(run)
    with pytest.raises(RecordRefused):
        w.append("alarm", BODIES["alarm"])
    w.sync()
    w.close()
    assert list(run.iterdir()) == []
    with pytest.raises(ValueError, match="closed"):
        w.append("run_start", BODIES["run_start"])
    DiaryWriter(run).close()  # nothing written at all
    assert list(run.iterdir()) == []


def test_resuming_a_signed_record_without_its_key_says_so_at_resume_and_close(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The probe: a writer resuming a signed record removed record.sig and sealed unsigned,
    # with no word; `verify --key` then failed.
    priv, pub, print_ = generate_keypair(tmp_path / "signer")
    run = tmp_path / "run"
    write_run(run, signing_key=priv)
    assert verify(run, public_key=pub).signed
    with (
        caplog.at_level(logging.WARNING, logger="trainrecord.diary"),
        DiaryWriter(run) as w,
        MetricsWriter(run) as m,
    ):
        assert w.resumed_signer == print_
        said = [r.getMessage() for r in caplog.records]
        assert len(said) == 1, said
        assert "record.sig" in said[0] and print_[:16] in said[0]
        assert "signing_key=" in said[0] and f"trainrecord seal {run} --key" in said[0]
        w.append("run_start", BODIES["run_start"])
        w.append("run_end", {**BODIES["run_end"], "metrics_sha256": m.sha256()})
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2 and "is sealed unsigned" in said[1] and print_[:16] in said[1]
    assert not (run / "record.sig").exists()
    result = verify(run, public_key=pub)
    assert not result.ok and result.failure is not None
    assert result.failure.rule == "seal.signature.missing"


def test_resuming_a_signed_record_with_its_key_signs_it_again_without_a_word(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    priv, pub, _ = generate_keypair(tmp_path / "signer")
    run = tmp_path / "run"
    write_run(run, signing_key=priv)
    with caplog.at_level(logging.WARNING, logger="trainrecord.diary"):
        _session(run, signing_key=priv)
    assert [r.getMessage() for r in caplog.records] == []
    result = verify(run, public_key=pub)
    assert result.ok and result.signed


def test_resuming_a_signed_record_with_another_key_names_both(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first, _, first_print = generate_keypair(tmp_path / "first")
    second, second_pub, second_print = generate_keypair(tmp_path / "second")
    run = tmp_path / "run"
    write_run(run, signing_key=first)
    with caplog.at_level(logging.WARNING, logger="trainrecord.diary"):
        _session(run, signing_key=second)
    [said] = [r.getMessage() for r in caplog.records]  # at the resume; none at close
    assert first_print[:16] in said and second_print[:16] in said and "instead" in said
    assert verify(run, public_key=second_pub).signed


def test_a_run_dir_under_a_file_or_a_looping_link_is_named(tmp_path: Path) -> None:
    # mkdir said "Not a directory: 'afile/sub'" or, for a looping link, "File exists"
    from trainrecord.diary import DiaryWriter, MetricsWriter

    (tmp_path / "afile").write_text("")
    (tmp_path / "loop").symlink_to("loop")
    for writer in (DiaryWriter, MetricsWriter):
        for bad, kind in ((tmp_path / "afile", "a file"), (tmp_path / "loop", "a link loop")):
            with pytest.raises(NotADirectoryError) as caught:
                writer(bad / "run")
            assert caught.value.filename == str(bad)
            assert f"run_dir {bad / 'run'} sits under {bad}, which is {kind}" in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "loop"]


def test_fields_nested_past_the_recursion_limit_are_refused_not_raised(tmp_path: Path) -> None:
    # A tamper probe: under a deep stack (pytest's) a config ~480 levels deep raised a bare
    # RecursionError from inside the writer; nothing of it may be written
    import sys

    from trainrecord.diary import DiaryWriter, MetricsWriter
    from trainrecord.errors import RecordRefused

    deep: object = 1
    for _ in range(sys.getrecursionlimit() + 10):
        deep = {"a": deep}
    with DiaryWriter(tmp_path / "run", seal=False) as writer:
        writer.append("run_start", {**BODIES["run_start"], "config": {"ok": 1}})
        size = writer.path.stat().st_size
        with pytest.raises(RecordRefused) as caught:
            writer.append("loss_spike", {**BODIES["loss_spike"], "extra": deep})
        assert caught.value.problems[0].rule == "diary.file.json"
        assert writer.path.stat().st_size == size
    with MetricsWriter(tmp_path / "run") as rows, pytest.raises(RecordRefused) as caught:
        rows.append({"step": 0, "loss": 1.0, "grad": {"a": 0.1}, "stuck": {}, "x": deep})
    assert caught.value.problems[0].rule == "diary.metrics.json"


def test_a_metrics_file_whose_last_row_nests_deeply_is_resumed(tmp_path: Path) -> None:
    # A review: the metrics writer read its last row's step with json.loads, and a row nested
    # past the recursion limit raised a bare RecursionError from the constructor
    import sys

    from trainrecord.diary import MetricsWriter

    run = tmp_path / "run"
    run.mkdir()
    deep = "[" * (sys.getrecursionlimit() + 10) + "]" * (sys.getrecursionlimit() + 10)
    (run / "metrics.jsonl").write_text('{"step": 0, "x": ' + deep + "}\n")
    with MetricsWriter(run) as rows:
        assert rows.rows == 1


def test_verify_of_a_path_that_is_no_run_directory_raises_saying_what_to_pass(
    tmp_path: Path,
) -> None:
    """Newcomer probe: ``verify("nope")`` read ``FAILED ... [diary.file.empty] nope/diary.jsonl
    does not exist`` (a typo looked like a broken record) and ``verify(".../diary.jsonl")``
    looked for ``diary.jsonl/diary.jsonl``. A call's mistake is an exception, as in the CLI."""

    with pytest.raises(FileNotFoundError, match="no such run directory; give the run directory"):
        verify(tmp_path / "nope")
    write_run(tmp_path / "run")
    with pytest.raises(NotADirectoryError, match=f"give its folder, {tmp_path / 'run'}, not"):
        verify(tmp_path / "run" / "diary.jsonl")
    assert verify(tmp_path / "run").ok
    empty = verify(tmp_path)  # a directory without a diary is a verdict, as before
    assert empty.failure is not None and empty.failure.rule == "diary.file.empty"
