"""Fixtures for the reporting tests: a token, a trusted test CA (trustme), the reference
receiver over HTTP and HTTPS on loopback, hostile servers, and job states of each kind."""

from __future__ import annotations

import ssl
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme

from tests.report.servers import Behaviour, TestServer
from trainrecord.report import (
    JobState,
    ReportServer,
    ReportSettings,
    ReportStore,
    config,
    epoch_entry,
    make_server,
    validation_entry,
)

TOKEN = "tr-test-token-7f3a9c1e5b2d4f6a8c0e"


@dataclass(frozen=True)
class TLSFiles:
    """A test CA and a server certificate for 127.0.0.1 and localhost."""

    ca: str
    cert: str
    key: str
    context: ssl.SSLContext


@pytest.fixture(scope="session")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TLSFiles:
    folder = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost", "::1")
    ca.cert_pem.write_to_path(folder / "ca.pem")
    server.private_key_pem.write_to_path(folder / "key.pem")
    for i, blob in enumerate(server.cert_chain_pems):
        blob.write_to_path(folder / "cert.pem", append=i > 0)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.configure_cert(ctx)
    return TLSFiles(str(folder / "ca.pem"), str(folder / "cert.pem"), str(folder / "key.pem"), ctx)


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[ReportServer]:
    server = make_server("127.0.0.1", 0, token=TOKEN, store=ReportStore(tmp_path / "r.sqlite"))
    server.serve_in_thread()
    yield server
    server.close()


@contextmanager
def serving_https(store: ReportStore, tls: TLSFiles) -> Iterator[ReportServer]:
    """The reference receiver over TLS on a free loopback port, storing in ``store``."""
    server = make_server(
        "127.0.0.1", 0, token=TOKEN, store=store, certfile=tls.cert, keyfile=tls.key
    )
    server.serve_in_thread()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def https_receiver(tmp_path: Path, tls: TLSFiles) -> Iterator[ReportServer]:
    with serving_https(ReportStore(tmp_path / "r.sqlite"), tls) as server:
        yield server


@pytest.fixture
def hostile() -> Iterator[Callable[..., TestServer]]:
    started: list[TestServer] = []

    def start(behaviour: Behaviour | None = None, tls: ssl.SSLContext | None = None) -> TestServer:
        server = TestServer(behaviour or Behaviour(), tls)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def settings_for(
    url: str,
    *,
    every: float = 60.0,
    ca: str | None = None,
    timeout: float = 10.0,
    token: str = TOKEN,
) -> ReportSettings:
    """Settings for a test server."""
    return ReportSettings(url=url, every=every, token=token, ca_bundle=ca, timeout=timeout)


def _overridden(state: JobState, over: dict[str, object]) -> JobState:
    """``state`` with the fields a test overrides set on it."""
    for key, value in over.items():
        setattr(state, key, value)
    return state


def training_state(**over: object) -> JobState:
    """A pre-literate training job, like the seed's example."""
    state = JobState(
        kind="training",
        run_id=str(uuid.uuid4()),
        name="pre_s_49",
        group="pre",
        config=config(
            "training",
            mode="pre",
            model_choice="s",
            model_class="CORnetS",
            parameters=53416616,
            outputs=1000,
            batch_size=100,
            lr=0.01,
            momentum=0.9,
            weight_decay=0.0001,
            img_classes=1000,
            wrd_classes=1000,
            train_images=1281167,
            val_images=50000,
            device_name="cpu",
            gpus_used=0,
        ),
        host="lab-gpu-01",
        epochs_first=0,
        epochs_total=50,
    )
    return _overridden(state, over)


def lesion_state(**over: object) -> JobState:
    """A lesion run of a biased CORnet-Z model."""
    state = JobState(
        kind="lesion",
        run_id=str(uuid.uuid4()),
        name="lesion_lit_bias_z_49u_89",
        group="english",
        config=config(
            "lesion",
            source_name="lit_bias_z_79",
            source_mode="lit_bias",
            model_choice="z",
            batch_size=100,
            lr=0.01,
            units_total=512,
            lesioned_units=[3, 17, 463],
            word_channel={"first": 463, "last": 511},
            reset_outgoing=False,
            silent_epochs=0,
            selectivity_threshold=2.0,
        ),
        host="lab-gpu-01",
        epochs_first=80,
        epochs_total=10,
    )
    return _overridden(state, over)


def wordset_state(**over: object) -> JobState:
    """A word set generation, like the seed's example."""
    state = JobState(
        kind="wordset",
        run_id=str(uuid.uuid4()),
        name="english",
        group="wordsets",
        config=config(
            "wordset",
            wordlist="english",
            num_words=1000,
            num_train=1000,
            num_val=50,
            train_fonts=["sans"],
            val_fonts=["serif"],
            width=500,
            height=500,
        ),
        host="lab-gpu-01",
        words_done=0,
        words_total=1000,
    )
    return _overridden(state, over)


def training_epoch(epoch: int, duration: float = 3000.0) -> dict[str, object]:
    """A training history entry with every field."""
    return epoch_entry(
        "training",
        epoch=epoch,
        lr=0.01,
        train_loss=5.9,
        train_loss_images=5.9,
        train_accuracy_images=2.1,
        val_loss=5.2,
        val_loss_images=5.2,
        val_accuracy_images=6.3,
        duration_seconds=duration,
        finished_at="2026-10-05T22:40:40-04:00",
    )


def lesion_validation() -> dict[str, object]:
    """A lesion validation with unit summaries."""
    return validation_entry(
        "lesion",
        val_loss=1.9,
        val_loss_images=2.7,
        val_loss_words=1.1,
        val_accuracy_images=42.2,
        val_accuracy_words=74.9,
        duration_seconds=600.0,
        finished_at="2026-10-29T13:37:50-04:00",
        mean_word_activation_lesioned=0.85,
        mean_word_activation_other=0.43,
        word_selective_lesioned=2,
        word_selective_other=33,
    )


def lesion_epoch(epoch: int) -> dict[str, object]:
    """A lesion history entry (the seed's example entry)."""
    return epoch_entry(
        "lesion",
        epoch=epoch,
        lr=0.01,
        train_loss=1.75,
        train_loss_images=3.05,
        train_loss_words=0.11,
        train_accuracy_images=37.4,
        train_accuracy_words=97.1,
        val_loss=1.93,
        val_loss_images=2.73,
        val_loss_words=1.13,
        val_accuracy_images=42.2,
        val_accuracy_words=74.9,
        duration_seconds=790.0,
        finished_at="2026-10-29T13:37:50-04:00",
        mean_word_activation_lesioned=0.85,
        mean_word_activation_other=0.43,
        word_selective_lesioned=2,
        word_selective_other=33,
    )
