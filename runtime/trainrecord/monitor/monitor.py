"""The Monitor: a few lines in a training loop, a tamper-evident diary of what went wrong.

::

    monitor = Monitor(model, optimizer, "runs/exp1", name="exp1", config=cfg, check_every=50)
    for x, y in loader:
        loss = loss_fn(model(x), y)
        loss.backward()
        monitor.step(loss)        # after backward, before optimizer.step() and zero_grad()
        optimizer.step(); optimizer.zero_grad()
    monitor.close()

Steps are counted by ``step()`` calls, from 0; step ``s`` is a check when
``s % check_every == 0``. Between checks ``step()`` only counts (the step after a check
also compares one gradient with the check's, to say when ``step()`` is called twice per
optimizer step). Forward hooks are
installed at the end of the step *before* a check (and at construction, for step 0), serve
the forward pass of the check step, and are removed inside that step's ``step()``: the
monitor needs no other call in the loop. A check that Ctrl+C interrupts (the loop catches
the ``KeyboardInterrupt`` and goes on, as in a notebook) is run again by the next
``step()``, at its own step, judging what its first attempt read and writing each event
once (see ``_Attempt``). With mixed precision pass the GradScaler
(``Monitor(..., scaler=scaler)``) and call ``monitor.step(loss)`` after
``scaler.scale(loss).backward()``: norms are divided by the scale (unless the gradients
were already unscaled with ``scaler.unscale_``) and a check that finds non-finite
gradients records the ``skipped_step`` the scaler is about to make. A SIGTERM (Slurm,
``docker stop``) ends the run with ``run_end.error.type`` "SIGTERM" (see
:mod:`trainrecord.sigterm`).
"""

from __future__ import annotations

import contextlib
import copy
import errno
import gc
import json
import math
import numbers
import platform
import sys
import threading
import warnings
import weakref
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, is_dataclass
from pathlib import Path
from typing import Any, NoReturn, SupportsIndex, cast

import numpy as np
import torch
from torch import nn

from trainrecord import __version__, arguments, sigterm
from trainrecord.diary.architecture import architecture_sha256
from trainrecord.diary.durability import FsyncPolicy, check_fsync_policy
from trainrecord.diary.writer import check_event, signing_key_from
from trainrecord.errors import (
    MonitorClosed,
    MonitorMisuseWarning,
    RecordRefused,
    TrainrecordError,
)
from trainrecord.folders import blocked_by, in_the_way
from trainrecord.monitor.certificate import Certifier, Producer, producers_from
from trainrecord.monitor.channels import (
    ActivationProbe,
    ChannelCounts,
    ChannelTracker,
    PrunedChannels,
    channel_scale,
    classify,
    graph_leaves,
    incoming_norms_of,
    starting_from_zero,
)
from trainrecord.monitor.compiled import EagerStance, is_compiled
from trainrecord.monitor.config import record_config
from trainrecord.monitor.distributed import Distributed, unwrap
from trainrecord.monitor.gradients import (
    GradientAlarms,
    GradientNorms,
    class_name,
    layer_kind,
    layer_parameters,
    named_modules,
    parameter_layers,
    parameter_owners,
)
from trainrecord.monitor.loss import LossTracker
from trainrecord.monitor.optimizers import (
    StepWatch,
    decide,
    inner_optimizer,
    optimizer_chain,
)
from trainrecord.monitor.repair import Repairer
from trainrecord.monitor.sinks import (
    LOGGER,
    CallbackSink,
    LoggingSink,
    SinkDispatcher,
    SinkThread,
    TensorBoardSink,
)
from trainrecord.monitor.structure import (
    PRODUCERS,
    Structure,
    StructureProbe,
    affine_of,
    computed_parts,
    is_producer,
    out_channels,
    own_parameter,
)

COMPILED_GLOBAL_HOOKS = r"Using `torch\.compile\(module\)` when there are global hooks"
"""torch's warning that global hooks also see the compiled wrapper; the monitor's hooks ignore that wrapper."""

ALWAYS_COUNTED = ("checks_without_gradients", "sink_errors")  # in run_end.counts at 0 too
SIGTERM_SINK_WAIT = 2.0
"""Seconds a SIGTERM gives slow sinks, before and after run_end (a scheduler's grace period
before SIGKILL can be 10 s: docker stop)."""

NO_GRADIENTS_TRANSFORMED = (
    "monitor.step(loss) found no parameter with a gradient, and the model ran under a "
    "torch.func transform (vmap, functional_call): the parameters trained are the "
    "transform's (a stacked ensemble's), not the model's own, which the Monitor watches. "
    "Monitor a model whose own parameters are trained; checks without gradients are "
    "counted in run_end.counts.checks_without_gradients"
)

LOSS_TYPES = (torch.Tensor, numbers.Real, np.ndarray, np.generic)
"""What ``step(loss)`` takes (a check reads it further: a numpy array must be 0-d)."""

NO_TRAINABLE = (
    "the model has no parameter that requires gradients (all frozen): nothing is trained "
    "to check; unfreeze the layers to train (requires_grad_(True)), or give the Monitor the "
    "model that is trained; checks without gradients are counted in "
    "run_end.counts.checks_without_gradients"
)

NO_GRADIENTS_ZERO = (
    "monitor.step(loss) found every gradient exactly zero: nothing flows back (a dead "
    "network: every unit of a layer silent, or a loss that does not depend on the "
    "parameters), or zero_grad(set_to_none=False) ran before step(): call it after "
    "loss.backward() and before optimizer.zero_grad(); checks without gradients are "
    "counted in run_end.counts.checks_without_gradients"
)

NO_GRADIENTS = (
    "monitor.step(loss) found no parameter with a gradient: call it after "
    "loss.backward() and before optimizer.zero_grad(); checks without gradients "
    "are counted in run_end.counts.checks_without_gradients"
)


class Monitor:
    """Watches a PyTorch training loop and writes diary.jsonl and metrics.jsonl.

    Args:
        model: the model being trained (a DistributedDataParallel wrapper is unwrapped).
        optimizer: its optimizer (for certificates and repair); may be None: then the
            first one seen stepping the model's parameters is followed (a repairing
            Monitor repairs nothing before). One that replaces it mid-run is followed
            (see :meth:`set_optimizer`).
        run_dir: directory for diary.jsonl and metrics.jsonl (created; an existing diary
            is continued).
        name: the run's name (default: the directory name).
        config: the run's configuration, recorded in run_start (JSON values; numpy numbers
            are taken as the numbers they hold; anything else is refused naming the key).
        check_every: a check every this many steps (step 0 is the first).
        scaler: a torch.amp.GradScaler when training with loss scaling.
        repair: re-initialise stuck channels (certified at once; silent ones once silent at
            ``repair_patience`` checks in a row over ``repair_min_values`` values in all).
        repair_patience: checks in a row a channel must be silent at before its repair.
        repair_min_values: values per channel (batch samples x positions) those checks
            must have seen silent before a repair (a unit silent on two batches of 8 samples
            is often alive on others).
        silent_min_values: values per channel (batch samples x positions) a channel must
            have shown, all <= 0, at consecutive checks before it counts as silent (in
            events and metrics rows): a unit off for one small batch is ordinary sparsity.
        repair_seed: seed of a dedicated generator for repairs (None: the global RNG).
        callback: called with every diary line (on the sink thread).
        sinks: more sinks (objects with ``name``, ``event(line)`` and ``metrics(row)``).
        log: log warning/critical events to the ``trainrecord.monitor`` logger.
        tensorboard: a log directory for the TensorBoard sink (needs tensorboard).
        channel_list_limit: the most channel indices listed in one event.
        warmup: checks before the first gradient alarm or loss spike.
        decay_ratio: a channel whose scale is below this times its layer's median decayed.
        fsync_policy: the diary writers' fsync policy (default: theirs).
        start_step: the number of the first step (default 0). When training resumes from a
            checkpoint into the same ``run_dir``, pass the optimizer steps already taken, so
            that steps, checks and metrics rows carry on where the checkpoint left off.
        signing_key: an Ed25519 private key (the path of the file ``trainrecord keygen``
            wrote, its PEM bytes or a key object) to sign the seal with at close (default:
            an unsigned seal). Needed to keep a signed record signed when training resumes
            into it: appending outdates the old signature.
        require_seal: resume only a record whose seal vouches for it (signed by
            ``signing_key`` when one is given): a record without one (its seal gone after
            its last session ended, a crashed session, an unsigned seal for a signing
            Monitor) is refused, where by default it is resumed with a warning that the new
            seal covers its history as it is (see :class:`~trainrecord.diary.DiaryWriter`).

    Every argument is checked before any file or folder is made: flags are True or False,
    counts ints, ratios finite numbers in their range; a wrong one raises
    :class:`~trainrecord.arguments.ArgumentRefused` (a TypeError and a ValueError) naming
    it. A Monitor cannot be pickled, copied or saved with ``torch.save``: it holds open
    files, their locks and global hooks. A checkpoint holds the model's and optimizer's
    state and the step count; on resume make a new Monitor on the same ``run_dir`` with
    ``start_step=`` that count.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        run_dir: str | Path = "runs/trainrecord",
        *,
        name: str | None = None,
        config: dict[str, Any] | None = None,
        check_every: int = 50,
        scaler: Any = None,
        repair: bool = False,
        repair_seed: int | None = None,
        repair_patience: int = 2,
        repair_min_values: int = 1024,
        silent_min_values: int = 256,
        callback: Callable[[dict[str, Any]], Any] | None = None,
        sinks: list[Any] | None = None,
        log: bool = True,
        tensorboard: str | None = None,
        channel_list_limit: int = 16,
        warmup: int = 5,
        decay_ratio: float = 1e-3,
        fsync_policy: FsyncPolicy | None = None,
        start_step: int = 0,
        signing_key: Any = None,
        require_seal: bool = False,
    ) -> None:
        # every argument is checked before any folder or file is made: a refusal leaves none
        if not isinstance(model, nn.Module):  # (an ArgumentRefused is a TypeError too)
            raise arguments.refuse(
                "Monitor", "model", "a torch.nn.Module", model, "pass the model being trained"
            )
        if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
            raise arguments.refuse(
                "Monitor",
                "optimizer",
                "a torch.optim.Optimizer or None",
                optimizer,
                "pass the optimizer that steps the model",
            )
        run_dir = arguments.path(
            "Monitor", "run_dir", run_dir, "give the folder for diary.jsonl and metrics.jsonl"
        )
        _check_options(
            check_every=check_every,
            scaler=scaler,
            repair=repair,
            repair_seed=repair_seed,
            repair_patience=repair_patience,
            repair_min_values=repair_min_values,
            silent_min_values=silent_min_values,
            callback=callback,
            sinks=sinks,
            log=log,
            tensorboard=tensorboard,
            channel_list_limit=channel_list_limit,
            warmup=warmup,
            decay_ratio=decay_ratio,
            start_step=start_step,
        )
        if fsync_policy is not None:
            check_fsync_policy(fsync_policy)
        if any(isinstance(p, nn.parameter.UninitializedParameter) for p in model.parameters()):
            raise arguments.ArgumentRefused(
                "Monitor",
                "model",
                "the model has lazy modules whose parameters are not initialised yet: run one "
                "forward pass (a dry run) before creating the Monitor (and the optimizer)",
            )
        config = record_config(config)
        self.model, wrapper, ddp = unwrap(model)
        if next(self.model.parameters(), None) is None:
            raise arguments.ArgumentRefused(
                "Monitor",
                "model",
                f"the model ({type(self.model).__name__}) has no parameters: nothing to "
                "monitor; give the Monitor the model whose parameters the optimizer trains",
            )
        self.optimizer = inner_optimizer(optimizer)
        _check_optimizer_trains(self.model, self.optimizer)
        refusal = _alone_refusal(self.model, run_dir, repair)
        self.dist = Distributed.detect(wrapper, ddp)
        # every rank creates its Monitor before training: one collective checks the schedule,
        # and a refusal of one rank's own (the open Monitors of its process) is every rank's
        refused_by = self.dist.agree_schedule(
            start_step, check_every, next(self.model.parameters()).device, refusal is not None
        )
        if refusal is not None:
            raise refusal
        if refused_by is not None:
            raise arguments.ArgumentRefused(
                "Monitor",
                "repair" if repair else "model",
                f"rank {refused_by} of the process group refused its Monitor: another Monitor "
                "is open on its model there and one of them repairs (its error says which "
                "and what to do). Every rank refuses the Monitor with it, so that none waits "
                "in a collective for that rank: close() the other Monitor on that rank, then "
                "create this one again on every rank",
            )
        arguments.flag("Monitor", "require_seal", require_seal)
        # the optimizer given and those it wraps (a GradScaler may key any; repairs reset
        # the state of each); followed to the one that replaces it (see optimizers.py)
        self._chain = optimizer_chain(optimizer)
        self._optimizers = {id(o) for o in self._chain}
        self._optimizer_note: str | None = None  # the manifests' note on a new optimizer
        # given no optimizer, a repairing Monitor waits for the one seen stepping the model
        # (a repair would reset no state); or, once the parameters changed in the steps
        # before two checks in a row while no torch optimizer stepped, repairs with none
        # (nothing to reset: the update is the loop's own; see _updated_by_hand)
        self._no_torch_optimizer = False
        self._window_has_step = False  # the armed window holds the loop's optimizer step
        self._hand_marks: list[tuple[torch.Tensor, torch.Tensor]] | None = None
        self._hand_windows: list[int] = []  # checks whose window showed a hand-made update
        if optimizer is None and repair:
            self._optimizer_note = (
                "optimizer: none given to the Monitor: repairs wait until the optimizer "
                "stepping the model's parameters is seen in the step before a check (or "
                "monitor.set_optimizer() names it), so that they reset its state"
            )
        self._scaler_alone = False  # the last check's GradScaler held only our optimizer
        self.scaler = scaler
        self.check_every = check_every
        self.repair_enabled = repair
        self.repair_patience = repair_patience
        self.repair_min_values = repair_min_values
        self.silent_min_values = silent_min_values
        self.decay_ratio = decay_ratio
        self.run_dir = run_dir
        in_way = blocked_by(self.run_dir)  # before any file: the writers would say it later
        if in_way is not None:
            raise NotADirectoryError(
                errno.ENOTDIR, in_the_way(self.run_dir, in_way, "Monitor's run_dir"), str(in_way)
            )
        self.name = name or self.run_dir.name or self.run_dir.resolve().name  # (".")
        self.modules = named_modules(self.model)
        self._parameters = list(self.model.parameters())  # (requires_grad is read at checks)
        self._tree = self._tree_now()  # modules and parameters added or replaced later
        self._trainable = self._trainable_now()
        self._producer_modules: dict[str, int] = {}  # id of each producer's module
        self.layers: dict[str, list[tuple[str, nn.Parameter]]] = {}
        self.kinds: dict[str, str] = {}
        self.producers: list[str] = []
        self.alarms = GradientAlarms(self.kinds, warmup=warmup)
        self._channel_count: dict[str, int] = {}
        self._take_layers()
        self.loss = LossTracker(warmup=warmup)
        self.channels = ChannelTracker(
            list_limit=channel_list_limit, clear_min_values=silent_min_values
        )
        self.certifier = Certifier(self.optimizer, list_limit=channel_list_limit)
        self.repairer = Repairer(
            self._chain, repair_seed, channel_list_limit, self.dist if self.dist.active else None
        )
        self.structure: Structure | None = None
        self._learnt_with: set[str] = set()  # the layers trainable when it was learnt
        self.producer_info: dict[str, Producer] = {}
        self.counts: dict[str, int] = dict.fromkeys(ALWAYS_COUNTED, 0)
        self.start_step = start_step
        self.steps = start_step
        self.checks = 0
        self.closed = False  # no more steps (set as close() begins)
        self._finished = False  # close() ran to its end (not cut short by Ctrl+C)
        self._ended: dict[str, str] | None = None  # the error close() began with
        self._busy = 0  # inside _bookkeeping()
        self._record_error: OSError | None = None  # a record file could not be written
        # no more checks: this record stopped (one process), or a rank's did, as the ranks
        # agreed at a check (DDP: the writer keeps checking, writing nothing, until then)
        self._checks_stopped = False
        self._diary_failed = False  # ... and it was diary.jsonl
        self._transformed = False  # the last check's forward pass ran under torch.func
        self._refused_events: set[tuple[str, str]] = set()  # (event, rule) logged once
        self._silent_streak: dict[str, dict[int, tuple[int, int]]] = {}  # checks, values
        # per producer and channel: the longest silence (values) after which a channel
        # reported silent fired again (a sparse unit, not a dead one: see _silence)
        self._revived_after: dict[str, dict[int, int]] = {}
        # per producer (name, module id): the channels flat at every check since it was
        # first checked (absent: not checked yet, every channel); a flat channel among them
        # whose scale is 0 and gradient is not starts from zero (zero-initialised: LoRA's
        # lora_B), and is not stuck. A rerun of an interrupted check intersects again with
        # the same flat channels: nothing to undo.
        self._flat_from_start: dict[tuple[str, int], set[int]] = {}
        self._relu_cache: np.ndarray | None = None
        self._scale_sources: tuple[list[torch.Tensor | nn.Module], list[nn.Module]] | None = None
        self._scale_names: tuple[list[str], list[str]] = ([], [])  # whose, as _scale_sources
        self._scale_order: list[str] = []  # the producer of each scale _scale_parts gave last
        self._pad_index: dict[tuple[int, ...], torch.Tensor] = {}
        self._one_device = len({p.device for p in self.model.parameters()}) <= 1
        first = next(self.model.parameters(), None)
        self._device = first.device if first is not None else torch.device("cpu")
        self._said: set[str] = set()
        # what a Monitor dropped unclosed must give back (see _Held): no reference to self
        self._held = _Held(EagerStance())
        self._unmeasured: list[str] = []
        self._seen_first: set[str] = set()  # the modules the first check's hooks measured
        self._manifest_due = False
        self._activation_dtypes: set[torch.dtype] = set()
        # the last manifest's precision, compiled, and pruned channels per producer
        self._described: tuple[str, bool, dict[str, int]] | None = None
        self._pruned = PrunedChannels()  # the channels pruning masks hold at zero
        self._not_repairable: dict[str, str] = {}
        self._dynamo_at_arming = False
        self.compiled = False
        if is_compiled(model) or is_compiled(self.model):
            self._now_compiled()
        self._lock = threading.Lock()
        self._diary: Any = None
        self._seq_opened = 0  # the diary's lines when this Monitor opened it
        self._metrics: Any = None
        self._stepped_at: _StepMark | None = None  # what the last check saw (_warn_twice)
        self._attempt: _Attempt | None = None  # the check begun and not complete
        self._completed: int | None = None  # the step of a complete check, until step() returns
        self._said_twice = False
        self._said_micro = False
        self._said_not_this_model = False
        start = self._run_start(config)
        try:
            refused = self._open(
                start,
                signing_key=signing_key,
                log=log,
                callback=callback,
                tensorboard=tensorboard,
                sinks=sinks,
                require_seal=require_seal,
                fsync_policy=fsync_policy,
                start_step=start_step,
                repair=repair,
            )
        except KeyboardInterrupt as stop:  # Ctrl+C while the Monitor was made
            self._stopped_opening(stop)
            raise
        if refused is not None:  # (raised here: the traceback ends at Monitor())
            raise refused

    def _open(
        self,
        start: dict[str, Any],
        *,
        signing_key: Any,
        log: bool,
        callback: Callable[[dict[str, Any]], Any] | None,
        tensorboard: str | None,
        sinks: list[Any] | None,
        require_seal: bool,
        fsync_policy: FsyncPolicy | None,
        start_step: int,
        repair: bool,
    ) -> BaseException | None:
        """Open the record (the writing rank), start the sinks, write run_start, arm the
        first check and answer SIGTERM (see :meth:`_stopped_opening` for Ctrl+C); or
        return the error to raise, on every rank, when the record could not be opened."""
        # the writer opens its record; what it raised there is every rank's (see below)
        opening: Exception | None = None
        sink_list: list[Any] = []
        try:
            if self.dist.writer:
                # only the writing rank signs: a key file on its node alone is enough
                key = signing_key_from(signing_key, "Monitor")
                check_event("run_start", start)  # a refusal before any file: none is left
                held = _run_dir_refusal(self.run_dir)  # another Monitor here writes there
                if held is not None:
                    raise held
                # sinks first: a sink that cannot start leaves no files behind
                if log:
                    sink_list.append(LoggingSink())
                if callback is not None:
                    sink_list.append(CallbackSink(callback))
                if tensorboard is not None:
                    sink_list.append(TensorBoardSink(tensorboard))
                sink_list += list(sinks or [])
                self._open_writers(key, require_seal, fsync_policy)
        except Exception as exc:
            opening = exc
        if opening is None:
            self._sinks = SinkDispatcher(sink_list, weakref.WeakMethod(self._sink_failed))
            self._held.on_model = _OnModel(
                weakref.ref(self.model),
                str(self.run_dir),
                repair,
                self._sinks.worker,
                _folder(self.run_dir) if self.dist.writer else None,
            )
            _OPEN_ON_MODELS.append(self._held.on_model)
            if self.dist.writer:
                self._held.unclosed = str(self.run_dir)
            weakref.finalize(self, self._held.release)  # (also when the process ends)
            if self._diary is not None and self._diary.seq and start_step == 0:
                LOGGER.warning(
                    "trainrecord.Monitor: %s continues an earlier run's diary, and steps count "
                    "from 0 again; when training resumed from a checkpoint, pass "
                    "start_step=<optimizer steps already taken> so steps and metrics rows carry "
                    "on; to start a new record instead, use a new run_dir",
                    self.run_dir,
                )
            elif self._diary is not None and self._diary.seq:
                self._warn_steps_again(start_step)
            if self._diary is not None and self._diary.seq:
                self._warn_other_model(start)
            self._emit("run_start", start)
            if self._record_error is not None:  # before training: a clear error, not a warning
                self._give_up_opening()
                opening = self._record_error
        # every rank learns whether the writer opened its record (one all_reduce, at
        # creation only): each raises, the writer its own error, instead of the other ranks
        # training on to wait for it in the first check's collective
        failed_by = self.dist.agree_opened(opening is not None, self._device)
        if isinstance(opening, TrainrecordError):  # a refusal: its message says it all, not
            return opening.with_traceback(None)  # the frames of the writers it came from
        if opening is not None:
            return opening
        if failed_by is not None:
            self._give_up_opening()
            return arguments.ArgumentRefused(
                "Monitor",
                "run_dir",
                f"rank {failed_by} of the process group, which writes the record, could not "
                f"open it in its run_dir ({self.run_dir} here) and refused its Monitor: its "
                "error says why and what to do (a record there it will not continue, a diary "
                "another writer holds, a file in the way, an unreadable signing_key, a sink "
                "that could not start). Every rank refuses the Monitor with it, so that none "
                "waits in a collective for that rank: fix what its error names (or give a new "
                "run_dir), then create the Monitor again on every rank",
            )
        if not self.layers and self.dist.writer:
            LOGGER.warning("trainrecord.Monitor: %s", NO_TRAINABLE.split("; checks")[0])
        if self.steps % self.check_every == 0:
            self._arm(self.steps)
        if self.dist.writer:  # a SIGTERM (Slurm, docker stop) still writes run_end
            # (watched under DDP: a rank blocked in a collective still stops at once)
            sigterm.activate(self, _sigterm_stop(weakref.ref(self)), watch=self.dist.active)
        return None

    def _stopped_opening(self, stop: BaseException) -> None:
        """Ctrl+C while the Monitor was made (a notebook's stop button during a resume's
        verification, or run_start's fsync): nothing is left open. A run_start in the
        record gets its run_end (the KeyboardInterrupt, no step), as a session stopped at
        once; else the files are closed as they are. Before, the half-made Monitor, kept
        by the traceback, held diary.jsonl open and locked (a record of a run_start and no
        run_end) and the cell run again was refused."""
        if self._finished:
            return
        sigterm.deactivate(self)
        sinks = getattr(self, "_sinks", None)
        if sinks is not None and self._diary is not None and self._diary.seq > self._seq_opened:
            self.close(stop)
            return
        if sinks is not None:
            sinks.close(0.0)
        self._give_up_opening()

    def _open_writers(self, key: Any, require_seal: bool, fsync_policy: FsyncPolicy | None) -> None:
        """Open diary.jsonl and metrics.jsonl (the writing rank only); the diary is closed
        again when metrics.jsonl cannot be opened."""
        from trainrecord.diary import DiaryWriter, MetricsWriter

        self._diary = (
            DiaryWriter(self.run_dir, signing_key=key, require_seal=require_seal)
            if fsync_policy is None
            else DiaryWriter(
                self.run_dir,
                fsync_policy=fsync_policy,
                signing_key=key,
                require_seal=require_seal,
            )
        )
        self._seq_opened = self._diary.seq
        try:
            self._metrics = MetricsWriter(self.run_dir)
        except BaseException:
            self._diary.close()
            raise

    def _give_up_opening(self) -> None:
        """Give back what the Monitor's creation took, when it raises after its sinks and
        its place on the model (the writer's record could not be written, on this rank or
        on the writing one): closed, no warning of an unclosed record."""
        self.closed = self._finished = True
        self._held.unclosed = None
        self._held.release()
        with contextlib.suppress(OSError):
            if self._metrics is not None:
                self._metrics.close()
        with contextlib.suppress(OSError):
            if self._diary is not None:
                self._diary.close()

    def _warn_steps_again(self, start_step: int) -> None:
        """Log a warning when ``start_step`` (given, not 0) is not past the steps the record
        this Monitor continues holds already: their numbers would come twice."""
        last = self._metrics.last_step if self._metrics is not None else None
        began = (self._diary.resumed_start or {}).get("start_step", 0)
        if last is not None and start_step <= last:
            held = f"metrics.jsonl already holds a row of step {last}"
        elif isinstance(began, int) and start_step < began:
            held = f"the diary's last session began at step {began}"
        else:
            return
        LOGGER.warning(
            "trainrecord.Monitor: %s continues a run with start_step=%d, but %s: steps from "
            "%d on are recorded twice. That is expected when training resumed from a "
            "checkpoint older than the record's end (after a crash those steps run again; "
            "each session's run_start says where it began); otherwise pass "
            "start_step=<optimizer steps already taken>, the checkpoint's step count",
            self.run_dir,
            start_step,
            held,
            start_step,
        )

    def _warn_micro_batches(self, step: int) -> None:
        """Warn (once) that step() was called at ``step`` right after the check before it
        with a backward between and no optimizer step: once per micro-batch of gradient
        accumulation. Checks then read partial sums and one micro-batch's activations. Said
        once, apart from the step-twice warning (which stays on), as a
        :class:`~trainrecord.errors.MonitorMisuseWarning` (``warnings.warn``, pointing at
        the loop's ``monitor.step()`` call). Under DDP the writing rank alone says it
        (every rank makes the same calls)."""
        self._said_micro = True
        if not self.dist.writer:
            return
        warnings.warn(
            f"trainrecord.Monitor: step() was called at steps {step - 1} and {step} with a "
            "backward between but no optimizer step (the gradients grew, the parameters did "
            "not change): under gradient accumulation call monitor.step(loss) once per "
            "optimizer step, after the last micro-batch's backward() and before "
            "optimizer.step(). Every call counts as a step: steps, checks and metrics rows "
            "now run ahead of the optimizer's, and a check reads a partial sum of the "
            "gradients. (An optimizer step skipped on purpose looks the same: then ignore "
            "this.)",
            MonitorMisuseWarning,
            stacklevel=3,  # the loop's monitor.step() (this is called from step())
        )

    def _warn_twice(self, step: int) -> None:
        """Warn (once) that step() was called at ``step`` right after the check before it
        with nothing done between: the gradient the check read, the same tensor unchanged,
        and no optimizer step (the parameter unchanged). Looked at in the step after each
        check only (the other steps pay nothing for it). A
        :class:`~trainrecord.errors.MonitorMisuseWarning`, as the micro-batch one. Under
        DDP the writing rank alone says it."""
        self._said_twice = True
        if not self.dist.writer:
            return
        warnings.warn(
            f"trainrecord.Monitor: step() was called at steps {step - 1} and {step} with "
            "nothing between (the same gradients, unchanged, and no optimizer step): call "
            "monitor.step(loss) once per optimizer step, after backward() and before "
            "optimizer.step(). Every call counts as a step: steps, checks and metrics rows "
            "now run ahead of the optimizer's",
            MonitorMisuseWarning,
            stacklevel=3,  # the loop's monitor.step() (this is called from step())
        )

    def _warn_not_this_model(
        self, step: int, loss: torch.Tensor | None, probe: ActivationProbe | None
    ) -> None:
        """Warn (once) when the loss given at a check comes from a model this Monitor does
        not watch: none of its modules ran in the check's step and the loss's autograd
        graph reaches none of its parameters. In a notebook, the model built again in
        another cell (``model = Net()``, a new optimizer) and trained with the Monitor made
        for the old one: the checks read the old model's last gradients, never changed, and
        the loss of the new one, and the only warning said step() was called twice. Looked
        at only when none of the model's modules ran (the graph is walked then)."""
        if (
            self._said_not_this_model
            or loss is None
            or loss.grad_fn is None
            or probe is None
            or probe.transformed
            or not self.dist.writer
        ):
            return
        if any(id(module) in probe.called for module in self.modules.values()):
            return
        if _reaches(loss.grad_fn, {id(p) for p in self.model.parameters()}):
            return
        self._said_not_this_model = True
        self._said_twice = True  # (its warning, at the next step, would name another cause)
        warnings.warn(
            f"trainrecord.Monitor: the loss given to step() at step {step} does not come from "
            f"the model this Monitor watches ({type(self.model).__name__}, run_dir "
            f"{self.run_dir}): none of its modules ran in that step. Was the model built "
            "again (model = ... in another notebook cell) after the Monitor was made? The "
            "Monitor still watches the old model and records the old model's gradients "
            "(left from its last step, or none) beside the new model's loss: close it (monitor.close()) and make a Monitor for the new "
            "model and optimizer (a new run_dir, or start_step= to continue this record)",
            MonitorMisuseWarning,
            stacklevel=4,  # the loop's monitor.step() (step() -> _check() -> here)
        )

    def _warn_other_model(self, start: dict[str, Any]) -> None:
        """Log a warning when the diary this Monitor continues was written for a model of
        other parameter names or shapes (its last ``run_start``'s architecture_sha256, which
        the writer found when it verified the diary: no second reading)."""
        before = self._diary.resumed_start if self._diary is not None else None
        if before is not None and before.get("architecture_sha256") != start["architecture_sha256"]:
            LOGGER.warning(
                "trainrecord.Monitor: %s holds a run of another model (%s parameters, "
                "architecture_sha256 %.12s...; this one: %s, %.12s...): its metrics rows and "
                "events now mix two models; give a new run_dir to a different model",
                self.run_dir,
                before.get("parameters"),
                before.get("architecture_sha256"),
                start["parameters"],
                start["architecture_sha256"],
            )

    @property
    def _structure_probe(self) -> StructureProbe | None:
        return self._held.structure_probe

    @_structure_probe.setter
    def _structure_probe(self, probe: StructureProbe | None) -> None:
        self._held.structure_probe = probe

    @property
    def _activation_probe(self) -> ActivationProbe | None:
        return self._held.activation_probe

    @_activation_probe.setter
    def _activation_probe(self, probe: ActivationProbe | None) -> None:
        self._held.activation_probe = probe

    @property
    def _stance(self) -> EagerStance:
        return self._held.stance

    # -- the loop -------------------------------------------------------------------------

    def step(self, loss: torch.Tensor | float | None = None) -> None:
        """Call once per optimizer step, after ``backward()`` and before ``optimizer.step()``."""
        if self.closed:
            raise MonitorClosed("Monitor.step() after close(): create a new Monitor for a new run")
        if loss is not None and not isinstance(loss, LOSS_TYPES):  # at every step, not late
            raise arguments.refuse("monitor.step", "loss", "a tensor, a number or None", loss)
        step = self.steps
        if step % self.check_every > 1 and (step + 1) % self.check_every:
            self.steps = step + 1  # between checks: a counter, nothing else
            return
        checked = self._completed
        if checked is not None and checked == step - 1:
            # Ctrl+C in step() after its check was complete (the check counted its step
            # with its row), caught: this is that step again, and its check is in the
            # record; what that step() left undone is done now, and no step is counted
            with self._bookkeeping():
                self._after_check(checked)
            self._completed = None
            return
        self._completed = None
        mark = self._stepped_at
        if mark is not None:  # the step after a check: was step() called twice?
            self._stepped_at = None
            if mark.step == step - 1 and not self._said_twice:
                if mark.same():
                    self._warn_twice(step)
                elif (
                    not self._said_micro
                    and mark.accumulated()
                    and self._scale_now() == mark.scale  # (a scaler that skipped the step
                ):  # changed its scale)
                    self._warn_micro_batches(step)
            if step % self.check_every and (step + 1) % self.check_every:
                self.steps = step + 1
                return
        with self._bookkeeping():  # a check, or the step before one
            if self._checks_stopped:  # the record stopped: training goes on
                self.steps = step + 1
                return
            if step % self.check_every == 0:
                self._check(step, self._loss_value(loss))  # (counts the step when complete)
                self._after_check(step)
            else:
                self._arm_next(step)
        # Counted once step() has done all it does: a step() that raised (Ctrl+C at the
        # step before a check, in its arming) counts nothing, and the next step() is that
        # step again (a notebook cell interrupted there skipped the loop's optimizer.step():
        # counting it put every later step number one past the loop's)
        self.steps = step + 1
        self._completed = None

    def _after_check(self, step: int) -> None:
        """The rest of the step() of a check at ``step``: the mark that tells a step()
        called twice (:meth:`_warn_twice`), and the arming of the next step's check
        (``check_every=1``)."""
        if not self._said_twice:
            self._stepped_at = _StepMark.of(step, self._parameters, self.optimizer)
            if self._stepped_at is not None:
                self._stepped_at.scale = self._scale_now()
        self._arm_next(step)

    def _arm_next(self, step: int) -> None:
        """At ``step``, arm the check of the next step when it is one."""
        if (step + 1) % self.check_every == 0 and not self._checks_stopped:
            self._arm(step + 1)
            self._window_has_step = True  # this step's optimizer.step() comes next

    def set_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """Follow ``optimizer`` from now on: the optimizer that replaced the one the Monitor
        was given (a new object over the model's parameters, as when Adam is swapped for SGD
        mid-run). Certificates and repairs read and reset its state, a GradScaler's stage
        is looked up under it, and the next check writes a manifest whose notes name it
        (``run_start.optimizer`` keeps the optimizer the session began with).

        A replacement is also found without this call, when the new optimizer steps the
        model's parameters in the step before a check and the one followed does not; call
        it when several optimizers replaced one (the Monitor then certifies and repairs
        nothing until told), or to have the new one followed from this very step. Under
        DDP call it on every rank alike."""
        if self.closed:
            raise MonitorClosed(
                "Monitor.set_optimizer() after close(): create a new Monitor for a new run"
            )
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise arguments.refuse(
                "Monitor.set_optimizer",
                "optimizer",
                "a torch.optim.Optimizer",
                optimizer,
                "pass the optimizer that steps the model now",
            )
        _check_optimizer_trains(self.model, inner_optimizer(optimizer), "Monitor.set_optimizer")
        if any(o is optimizer for o in self._chain) and self.certifier.unknown is None:
            return  # followed already
        self._adopt(optimizer, self.steps, seen=False)

    def close(self, error: BaseException | None = None) -> None:
        """Write run_end and close the files; safe to call twice, and after an exception.

        ``error``: the exception that ended the run, recorded in ``run_end.error`` (type and
        message). When not given, an exception being handled or propagating where close()
        is called (an ``except`` or ``finally`` block; a ``with`` block passes it) is the
        one; a run that ended normally has no ``error``. Anything but an exception (a
        message, an exception class) is refused with a TypeError, and the run stays open.

        Ctrl+C while close() waits for the sinks (a slow callback: at most 10 s) stops the
        wait, not the close: run_end is written and the files closed and sealed, then the
        ``KeyboardInterrupt`` is raised (unless an error ends the run already: that one
        propagates). Ctrl+C anywhere else in it (run_end's fsync, the seal) leaves the rest
        to the next close(), which finishes it (a notebook: run ``monitor.close()`` again)."""
        if error is not None and not isinstance(error, BaseException):
            raise arguments.ArgumentRefused(
                "Monitor.close",
                "error",
                "error must be the exception that ended the run (an instance, as in "
                "`except Exception as exc: monitor.close(exc)`) or None, got "
                f"{arguments.shown(error)}; the run is not closed yet: call close() for a run "
                "that ended normally",
            )
        if self._finished:
            return
        if error is None:
            error = sys.exc_info()[1]
        with self._bookkeeping():
            if error is None:
                if self._close(None) is not None:  # Ctrl+C stopped the sinks' wait
                    raise KeyboardInterrupt from None
                return
            try:
                self._close(ended_by(error))  # (a Ctrl+C in the sinks' wait: this error
            except Exception as exc:  # propagates) the run's own error stays the one
                LOGGER.error(
                    "trainrecord.Monitor: closing %s after %s: %s",
                    self.run_dir,
                    type(error).__name__,
                    exc,
                )

    def _close(self, ended: dict[str, str] | None, sink_wait: float = 10.0) -> BaseException | None:
        """Close; returns the KeyboardInterrupt that cut the sinks' wait short (None: none).

        A close cut short elsewhere (Ctrl+C raised out of it) is finished by the next call,
        with the ``ended`` of the first and no wait for the sinks: every part is safe to run
        again, and run_end is not written twice. Before, the Monitor was marked closed as it
        began, so a close cut short left diary.jsonl open and locked with no run_end, close()
        did nothing again, and a new Monitor on the run_dir was refused until the process
        ended (a notebook: until the kernel restarted)."""
        if self._finished:
            return None
        if self.closed:  # a close cut short (Ctrl+C): finished now, as it began
            ended, sink_wait = self._ended, 0.0
        else:
            self.closed = True
            self._ended = ended
        sigterm.deactivate(self)
        self._disarm()
        # every failure so far counted; the sinks still get run_end
        stopped = _wait_for_sinks(self._sinks.flush, sink_wait)
        self.counts["sink_errors"] = self._sinks.failures
        try:
            if self.dist.writer:
                self._write_run_end(ended)
        except Exception:  # (said to the caller) not run again
            self._finished = True
            self._held.leave_model()
            raise
        finally:  # files, locks and the sinks' thread are given back, whatever failed
            stopped = _wait_for_sinks(self._sinks.close, 0.0 if stopped else sink_wait) or stopped
        self._finished = True
        self._held.unclosed = None
        # Off its model (and its run_dir) once finished: a close cut short keeps diary.jsonl
        # open and locked, and a new Monitor on the run_dir is refused naming this one and
        # its close(), not by the diary's lock (diary.writer.locked, which names no Monitor)
        self._held.leave_model()
        return stopped

    def _write_run_end(self, ended: dict[str, str] | None) -> None:
        if self._diary_failed:  # nothing more can follow the line that is missing
            with contextlib.suppress(OSError):
                self._metrics.close()
            with contextlib.suppress(OSError):
                self._diary.close()
            return
        if self._record_error is not None and ended is None:
            ended = ended_by(self._record_error)  # what ended the record: metrics.jsonl
        try:
            try:
                digest = self._metrics.sha256()
            finally:
                with contextlib.suppress(OSError):  # (the error was said when it happened)
                    self._metrics.close()
            fields: dict[str, Any] = {
                "steps": self.steps - self.start_step,  # this session's
                "checks": self.checks,
                # (an event that was never written has no entry: _emit makes entries of 0)
                "counts": {
                    k: v for k, v in sorted(self.counts.items()) if v or k in ALWAYS_COUNTED
                },
                "metrics_sha256": digest,
            }
            if ended is not None:
                fields["error"] = ended
            if self._diary.last_event != "run_end":  # (written by a close cut short)
                self._emit("run_end", fields)
        except KeyboardInterrupt:  # the diary stays open: the next close() writes run_end
            raise
        except BaseException:
            self._close_diary()
            raise
        self._close_diary()

    def _close_diary(self) -> None:
        try:
            self._diary.close()  # (and its seal)
        except OSError as exc:  # the run is over; the record says what it holds
            LOGGER.error("trainrecord.Monitor: %s", exc)

    @contextlib.contextmanager
    def _bookkeeping(self) -> Iterator[None]:
        """The Monitor's own work in the training thread (a check, arming, closing): a
        SIGTERM arriving meanwhile waits for it to end (see :mod:`trainrecord.sigterm`)."""
        self._busy += 1
        try:
            yield
        finally:
            self._busy -= 1
            if not self._busy:
                sigterm.settle()

    def _sigterm(self) -> None:
        """SIGTERM ends the process: record it in run_end and close the files."""
        self._close(
            {
                "type": "SIGTERM",
                "message": (
                    "the process was stopped by SIGTERM (a scheduler's stop or preemption, "
                    f"docker stop, Kubernetes); the next step would have been {self.steps}"
                ),
            },
            sink_wait=SIGTERM_SINK_WAIT,
        )

    def __enter__(self) -> Monitor:
        return self

    def __repr__(self) -> str:
        """Where the record goes and where the run is (a notebook shows it): never raises,
        also for a Monitor whose creation failed half-way (a traceback's variables)."""
        model = getattr(self, "model", None)
        if getattr(self, "_finished", False):
            state = "closed"
        elif getattr(self, "closed", False):
            state = "closing cut short: call close() again"
        else:
            state = "open"
        return (
            f"<Monitor {str(getattr(self, 'run_dir', '?'))!r}: "
            f"{type(model).__name__ if model is not None else '?'}, "
            f"step {getattr(self, 'steps', '?')}, {getattr(self, 'checks', '?')} checks "
            f"every {getattr(self, 'check_every', '?')} steps, {state}>"
        )

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        """A Monitor is not pickled, copied or saved: say so, and what to save instead."""
        raise TypeError(
            "a trainrecord Monitor cannot be pickled, copied (copy.deepcopy) or saved "
            f"(torch.save): it holds open files ({self.run_dir}/diary.jsonl, metrics.jsonl), "
            "their locks and global hooks. Keep it out of the checkpoint: save "
            "model.state_dict(), optimizer.state_dict() and the step count (now "
            f"{self.steps}); to resume, make a new Monitor(model, optimizer, "
            f"{str(self.run_dir)!r}, start_step=<that count>). When torch.save raised this, "
            "the file it had opened is incomplete: save again without the Monitor"
        )

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> None:
        self.close(error)

    # -- hooks ----------------------------------------------------------------------------

    def _arm(self, check: int) -> None:
        """Install forward hooks for the forward pass of the check of step ``check`` (the
        next step). Arming again replaces what an earlier arming installed: each probe is
        held before its hooks are installed, so a Ctrl+C anywhere in it leaves no hook that
        the next arming (or close()) does not remove."""
        self._disarm()
        self._follow_model()
        self.norms.mark(check)  # what reaches each gradient up to the check (_sat_out)
        if self.structure is None:
            structure_probe = StructureProbe(self.modules, self.model)
            self._structure_probe = structure_probe
            structure_probe.install()
            watched = {
                n: m
                for n, m in self.modules.items()
                if n and (isinstance(m, PRODUCERS) or "BatchNorm" in type(m).__name__)
            }
        else:
            watched = {}
            for name in self.producers:
                measured = self.structure.pairs.get(name, name)
                watched[measured] = self.modules[measured]
        probe = ActivationProbe(
            watched, self.model, note_compiled=not self.compiled, walk=bool(self.norms.made)
        )
        self._activation_probe = probe
        probe.install()
        self._held.step_watch.install()  # which optimizer steps the model, up to the check
        self._hand_marks = None
        if self._awaiting_optimizer():  # did the parameters change in the window? (below)
            self._hand_marks = [
                (p, _fingerprint(p).clone()) for p in self._parameters if p.requires_grad
            ]
        self._stance.enter()  # compiled code runs eagerly until the check (see compiled.py)
        self._dynamo_at_arming = "torch._dynamo" in sys.modules

    def _disarm(self) -> None:
        if self._structure_probe is not None:
            self._structure_probe.remove()
        if self._activation_probe is not None:
            self._activation_probe.remove()
        self._held.step_watch.remove()
        self._stance.exit()

    def _now_compiled(self) -> None:
        """The model is compiled (passed compiled, or seen run compiled at a check): the
        manifest says so; with ``check_every=1`` every step is a check step and runs
        eagerly, which is said once."""
        self.compiled = True
        # the check's hooks are global and skip the compiled wrapper
        warnings.filterwarnings("ignore", message=COMPILED_GLOBAL_HOOKS, category=UserWarning)
        if self.check_every == 1:
            LOGGER.warning(
                "trainrecord.Monitor: check_every=1 with a compiled model: every step is a "
                "check step, and check steps run eagerly (the hooks need the real forward "
                "pass), so the compiled code never runs; use check_every > 1 to train "
                "compiled between checks"
            )

    def _compiled_in_window(self) -> None:
        """Say once when torch.compile was first used between the hooks' installation and
        the check: that forward may have been compiled with the hooks in it."""
        if self._dynamo_at_arming or "torch._dynamo" not in sys.modules:
            return
        self._dynamo_at_arming = True  # TorchDynamo stays loaded: this is said once
        if not self.dist.writer:
            return
        LOGGER.warning(
            "trainrecord.Monitor: torch.compile was first used after the monitor was "
            "created, while its check hooks were installed; the compiled model may keep "
            "graph breaks at them on every step. Create the Monitor after torch.compile "
            "(it then runs check steps eagerly and leaves the compiled code alone)."
        )

    # -- a check --------------------------------------------------------------------------

    def _check(self, step: int, loss: torch.Tensor | float | None) -> None:
        """One check. A check that raised part-way (Ctrl+C, caught by the loop) is run
        again by the next ``step()``, at the same step: see :class:`_Attempt`."""
        attempt = self._attempt
        if attempt is None or attempt.step != step:
            attempt = self._attempt = _Attempt(step)
        else:
            attempt.again()
        # the hooks come off first: a probe is then the attempt's (kept for a run again)
        if self._activation_probe is not None:
            self._activation_probe.remove()
            attempt.probe = self._activation_probe
            self._activation_probe = None
        if self._structure_probe is not None:
            self._structure_probe.remove()
            attempt.structure_probe = self._structure_probe
            self._structure_probe = None
        probe = attempt.probe
        if probe is not None:
            self._transformed = probe.transformed
        self._stance.exit()
        self._follow_optimizer(step)
        self._compiled_in_window()
        if not self.compiled and (
            (probe is not None and probe.compiled_call) or is_compiled(self.model)
        ):  # the loop calls torch.compile(model), or model.compile() ran: a new manifest
            self._now_compiled()
        if self._follow_model():  # the structure probe watched the modules of before
            attempt.structure_probe = attempt.learnt = None  # learnt later
        if probe is not None and probe.dtypes:  # (for the manifest's precision)
            self._activation_dtypes = set(probe.dtypes)
        if (
            self.structure is not None
            and self._described is not None
            and self._described != (self._precision(), self.compiled, self._pruned_counts())
        ):  # autocast switched on or off, a scaler enabled, more channels pruned: a new
            # manifest says so
            self._manifest_due = True
        if self._manifest_due:  # (due until written: Ctrl+C before its line leaves it due)
            self._emit("manifest", self._manifest(step))
            self._manifest_due = False
        tensor = loss if isinstance(loss, torch.Tensor) else None
        structure_probe = attempt.structure_probe
        if structure_probe is not None and self.structure is None:
            learnt = attempt.learnt
            if learnt is None:
                if structure_probe.saw_forward and self.dist.writer:
                    seen = set(probe.maxima) if probe is not None else set()
                    learnt = (structure_probe.finish(tensor), seen)
                if self.dist.active:  # every rank takes the writer's (see Distributed.agreed)
                    learnt = self.dist.agreed(learnt, self._device)
                if learnt is None:  # nothing to learn from: the next armed check learns it
                    attempt.structure_probe = None
                attempt.learnt = learnt
            if learnt is not None:
                self._learn(step, *learnt)
        # What the check changes from here on is undone when it is run again (see _Attempt).
        if attempt.state is None:
            attempt.state = self._judging_state()
        else:
            self._undo(attempt)
        if attempt.reads is not None:  # a run again: what the first attempt read (below)
            value, scale, trained_between, names, values, host, read, lrs, versions = attempt.reads
            self.norms._versions = versions
        else:
            # everything the check reads, gathered on the device and read back in one transfer
            # (and the learning rates, which the loop's scheduler.step() may change before a
            # run again: the loss rule's "lr raised" judges what the first attempt saw)
            lrs = _learning_rates(self.optimizer)
            loss_part, value = self._loss_part(step, loss)
            scale = self._scale(at_check=True)
            grads = self.norms.grads()
            gathered = self.norms.gather(grads)
            trained_between = self.norms.trained_between(grads, step)
            squares = None if gathered is None else gathered.squares
            names = []
            values = {}
            if self.dist.active:  # the same collectives on every rank, whatever it measured
                summed, maxed = self._reduce(step, probe, loss_part)
                parts = [summed, squares, maxed, None]
                measured = self.structure is not None
            else:
                names, stats = self._stat_parts(probe) if self.structure is not None else ([], None)
                parts = [loss_part, squares, *(stats or (None, None))]
                measured = stats is not None
            parts.append(self._scale_vector() if measured else None)
            host = to_host(parts)
            if self.dist.active:
                assert host[0] is not None and host[2] is not None
                value, names, values, host[2], host[3] = self._reduced(step, host[0], host[2])
                if self._checks_stopped:  # a rank's record stopped: every rank stops here
                    return
            elif host[0] is not None:
                value = float(host[0].item())
            read = None
            if gathered is not None:
                assert host[1] is not None
                read = (gathered.owners, gathered.exact(host[1].tolist()))
            if not self.dist.active:  # (under DDP every rank reads again: the same collectives)
                reads = (value, scale, trained_between, names, values, host, read, lrs)
                attempt.reads = (*reads, self.norms._versions)
        rows: dict[str, list[int]] = {}
        if self.structure is not None:
            stats = (host[2], host[3]) if host[2] is not None and host[3] is not None else None
            quiet = (
                len(names) == len(self.producers)
                and stats is not None
                and self._quiet(*stats, host[4])
            )
            if not self.dist.active:
                values = dict(probe.values) if probe else {}
            rows = self._channels(step, names, stats, host[4], quiet, values)
        ran = probe.called if probe is not None and probe.called else None
        filled = probe.filled if probe is not None else set()
        self._warn_not_this_model(step, tensor, probe)
        walked = probe.reached if probe is not None and probe.walk else None
        self._gradients(
            step, value, read, scale, rows, trained_between, ran, filled, tensor, walked, lrs
        )

    def _judging_state(self) -> dict[str, Any]:
        """Copies of what a check changes as it judges (see :class:`_Attempt`): the loss
        rule, the alarms (with each layer's run of unfed checks and its longest, see
        ``GradientAlarms.unfed_needed``), the channel states, certificates, silent streaks
        and revived channels, the parameters' version counters and the
        checks-without-gradients tally."""
        return {
            "loss": _copied(vars(self.loss)),
            "alarms": _copied({k: v for k, v in vars(self.alarms).items() if k != "kinds"}),
            "channels": _copied(vars(self.channels)),
            "certifier": _copied(
                {k: v for k, v in vars(self.certifier).items() if k != "optimizer"}
            ),
            "streak": _copied(self._silent_streak),
            "revived": _copied(self._revived_after),
            "versions": self.norms._versions,
            "without": self.counts["checks_without_gradients"],
        }

    def _undo(self, attempt: _Attempt) -> None:
        """Back to how the check found things, for a run again at its step: its repairs
        undone (the repaired channels' slices of the weights, optimizer state and gradients;
        what the loop trained since stays), its state changes put back (the lines it wrote
        stay; the run again does not repeat them, and repeats a repair with the same new
        weights, ``drawn``, under the same line, ``repairs``)."""
        assert attempt.state is not None
        while attempt.undo:
            attempt.undo[-1]()
            attempt.undo.pop()
        state = attempt.state
        vars(self.loss).update(_copied(state["loss"]))
        vars(self.alarms).update(_copied(state["alarms"]))
        vars(self.channels).update(_copied(state["channels"]))
        vars(self.certifier).update(_copied(state["certifier"]))
        self._silent_streak = _copied(state["streak"])
        self._revived_after = _copied(state["revived"])
        self.norms._versions = state["versions"]
        self.counts["checks_without_gradients"] = state["without"]

    def _gradients(
        self,
        step: int,
        value: float | None,
        read: tuple[list[int], list[float]] | None,
        scale: tuple[float, float] | None,
        rows: dict[str, list[int]],
        trained_between: set[str],
        ran: set[int] | None = None,
        filled: set[int] | frozenset[int] = frozenset(),
        loss: torch.Tensor | None = None,
        walked: set[int] | None = None,
        lrs: tuple[float, ...] | None = None,
    ) -> None:
        """A check's gradient norms, their events and the loss's, and its metrics row
        (``read``: each gradient's owner and sum of squares; ``rows``: the producers' stuck
        counts; ``trained_between``: layers without a gradient now that were updated since
        the last check; ``ran``: the ids of the modules run with gradients in the check
        step's forward pass, None when not known; ``filled``: those of them run on an
        output with values at least once, see :meth:`_ran_empty`; ``loss``: the loss tensor
        given to step(), and ``walked``, the parameters the graphs of the check step's forward
        passes reached, see :meth:`_sat_out`; ``lrs``: the optimizer's learning rates as the
        check's first attempt read them, for the loss rule's "lr raised")."""
        norms, any_grad = self.norms.group(read, 1.0 if scale is None else scale[1])
        routed: set[str] = set()
        if ran is not None:
            trained_between = trained_between | self._sat_out(norms, ran, loss, walked)
            routed = self._ran_empty(norms, ran, filled)
        all_zero = any_grad and all(v == 0.0 for v in norms.values() if v is not None)
        if all_zero:
            any_grad = False  # every gradient exactly zero: after zero_grad(), or nothing flows
        # Every gradient exactly zero under a NaN or infinite loss: a loss over no elements
        # (cross_entropy whose every target is ignore_index, a masked mean of an empty mask)
        # is 0/0 with zero gradients; nonfinite_loss says so, and no_gradients, written once
        # per run, is kept for a step() in the wrong place (its advice is wrong here).
        explained = all_zero and value is not None and not math.isfinite(value)
        if not any_grad:
            self.counts["checks_without_gradients"] += 1
        if not any_grad and not explained:
            message = (
                NO_TRAINABLE
                if not self.layers
                else NO_GRADIENTS_TRANSFORMED
                if self._transformed
                else NO_GRADIENTS_ZERO
                if all_zero
                else NO_GRADIENTS
            )
            self._once("no_gradients", {"step": step, "severity": "warning", "message": message})
        new_level = False
        if value is not None:
            for event, fields in self.loss.observe(step, value, lrs):
                self._emit(event, fields)
            new_level = self.loss.new_level
        bad = [n for n, v in norms.items() if v is not None and not math.isfinite(v)]
        if bad:
            if scale is not None and scale[0] > 0:  # the scaler skips optimizer.step() now
                self._emit(
                    "skipped_step",
                    {"step": step, "severity": "info", "scale": scale[0], "layers": bad},
                )
            else:
                self._emit(
                    "nonfinite_gradient", {"step": step, "severity": "critical", "layers": bad}
                )
        if any_grad:
            above = value is not None and self.loss.above
            for event, fields in self.alarms.observe(
                step,
                norms,
                value,
                trained_between,
                loss_above=above,
                new_level=new_level,
                whole_window=self.checks > 0,  # the first: the steps since the Monitor began
                routed=routed,
            ):
                self._emit(event, fields)
        row = {"step": step, "loss": value, "grad": norms, "stuck": rows}
        written = False
        if self.dist.writer and self._record_error is None:
            rows_before = self._metrics.rows
            try:
                self._metrics.append(row)
            except OSError as exc:
                self._recording_failed(exc, diary=False)
            except BaseException:
                if self._metrics.rows != rows_before:  # (Ctrl+C after the row was written)
                    self.steps, self.checks = step + 1, self.checks + 1  # counted with it
                    self._attempt, self._completed = None, step
                raise
            else:
                written = True
        # The check is complete: counted with its step, right after its row (a check that
        # raised part-way is not counted). An exception later (Ctrl+C in the sinks' hand-off
        # or in step()) must leave rows <= checks <= steps, or run_end is refused; the next
        # step() is then this step again (``_completed``), which counts nothing.
        self.steps, self.checks = step + 1, self.checks + 1
        self._attempt, self._completed = None, step
        if written:
            self._sinks.put("metrics", row)

    def _sat_out(
        self,
        norms: dict[str, float | None],
        ran: set[int],
        loss: torch.Tensor | None = None,
        walked: set[int] | None = None,
    ) -> set[str]:
        """Layers with an all-zero gradient, updated since the last check, whose modules did
        not run in the check step's forward pass (``ran``: the ids of the modules that did):
        they sat this step out, as a task head of round-robin multi-task training does, and
        ``zero_grad(set_to_none=False)`` left them a zero gradient instead of None. A layer
        that ran and got no gradient (a detached branch) is not one of them, nor is one
        that backward passes reached at the other steps since the previous check's no more
        often than at this one (:attr:`GradientNorms.unfed`): a block left out of the
        forward pass, whose parameters momentum or weight decay still move, or
        ``MultiheadAttention.out_proj`` (its holder uses its weight directly, never calling
        it) with a gradient all zero at every step.

        A gradient tensor made since the step before the check is taken as made by the
        check step's backward (:attr:`GradientNorms.made`); when the autograd graph of
        ``loss`` (the tensor given to step()) reaches none of the layer's parameters, the
        loop made it (``p.grad = p.grad.clamp(-1, 1)`` at every step, for every
        parameter): its window cannot be counted, and the layer sat out as when its
        gradients cannot be counted. Before, a task head held by a container that ran,
        under ``zero_grad(set_to_none=False)``, with such a loop, was unfed at every check
        step that did not choose it (a false ``no_gradient`` for the whole run when
        ``check_every`` is a multiple of the task count). A loss given as a number
        (``loss.item()``) or detached has no graph: ``walked`` then tells, the parameters
        the graphs of the check step's forward passes reached (the probe walks the
        outputs' graphs when the last check saw such gradients, ``GradientNorms.made``).
        Before, with such a loss, those heads were ``no_gradient`` for the whole run."""
        out: set[str] = set()
        unfed, made = self.norms.unfed, self.norms.made
        reached: set[int] | None = None  # the parameters the loss's graph reaches (ids)
        for name in self.norms.moved:
            module = self.modules.get(name)
            if norms.get(name) != 0.0 or module is None or id(module) in ran:
                continue
            if name in unfed:
                if name not in made:
                    continue
                if reached is None:
                    reached = _reached(loss, walked)
                    if reached is None:
                        continue  # (no graph to tell by)
                if any(id(p) in reached for _, p in self.layers[name]):
                    continue  # made by the check step's backward: unfed
            out.add(name)
        return out

    def _ran_empty(
        self, norms: dict[str, float | None], ran: set[int], filled: set[int] | frozenset[int]
    ) -> set[str]:
        """Layers without a gradient (none, or all zero) whose modules ran in the check
        step's forward pass on empty tensors only (``ran``: the ids of the modules that ran;
        ``filled``: those that ran on values at least once): an expert of a mixture of
        experts called on the tokens routed to it when none was (``expert(x[mask])``, as
        Switch Transformers' loop over its experts does). Its gradient is all zero by
        construction, and a backward reached it as at every step: neither tells whether the
        other steps of the window routed tokens to it. The router picks it at some steps
        only: it is routed (see ``GradientAlarms.observe``)."""
        out: set[str] = set()
        for name, norm in norms.items():
            if norm:  # (a gradient, or a non-finite one: not empty)
                continue
            module = self.modules.get(name)
            if module is not None and id(module) in ran and id(module) not in filled:
                out.add(name)
        return out

    def _repair_limits(self, structure: Structure, owners: dict[int, list[str]]) -> dict[str, str]:
        """Producers a repair must not touch, with why; and, in ``structure.consumer``, only
        consumers whose outgoing weights can be zeroed without touching another module
        (``owners``: the layers holding each parameter).

        A weight or bias that is computed (a parametrization, weight norm or pruning mask;
        the producer's or its BatchNorm's) would be recomputed from its own parameters on
        the next forward pass, undoing the repair; a parameter
        shared with another module (tied weights) would change that module too."""
        shared = {key for key, names in owners.items() if len(names) > 1}
        limits: dict[str, str] = {}
        for name in self.producers:
            info = self.producer_info[name]
            parts = [(info.module, name), (info.bn_module, info.batchnorm)]
            computed = next(computed_parts(parts), None)
            if computed is not None:
                # (a repair's new values written into such a copy, a pruned BatchNorm's
                # weight, were lost at the next forward pass: the channels stayed dead and
                # were "repaired" again every repair_patience checks)
                owner, role = computed
                limits[name] = (
                    f"the {role} of {owner} is computed (a parametrization, weight norm or "
                    "pruning mask): a repair would be undone at the next forward pass"
                )
                continue
            if info.shared is not None:
                limits[name] = "a parameter it would change is shared with another module"
        for name, consumer in list(structure.consumer.items()):
            weight = self.modules[consumer]._parameters.get("weight")
            if not isinstance(weight, nn.Parameter) or id(weight) in shared:
                del structure.consumer[name]  # repaired, but not function-preserving
        return limits

    def _learn(self, step: int, structure: Structure, seen: set[str]) -> None:
        """Take the structure of the first check's forward pass; ``seen``: the modules whose
        outputs the channel hooks saw in it."""
        written = self.counts.get("structure", 0)
        try:
            self.structure = structure
            self._learnt_with = set(self.layers)
            self._seen_first = seen
            self._take_producers()
            self._manifest_due = True  # until its line is written
            self._emit("structure", structure.event(step))
            self._emit("manifest", self._manifest(step))
            self._manifest_due = False
        except BaseException:
            # Ctrl+C before the structure's line was in the record, and the loop goes on (a
            # notebook): nothing of it is kept; the next check armed for it learns it again.
            # After its line, a manifest still due is written by the next check.
            if self.counts.get("structure", 0) == written:
                self.structure = None
                self.producer_info = {}
                self._manifest_due = False  # (written after the structure learnt again)
            raise

    # -- the layers: what is trainable now --------------------------------------------------

    def _tree_now(self) -> list[int]:
        """The identity of each module's children and own parameters, module by module (the
        modules as last read): a module or parameter added, removed or replaced anywhere in
        the model changes it, whether or not torch tells a hook (``del model.blocks[0]``
        and ``ModuleList.insert`` tell none). A few dictionary reads per module, at the
        check and the step that installs its hooks; ``self.modules`` and
        ``self._parameters`` hold the objects till the next read, so no id is reused."""
        return [
            id(value)
            for module in self.modules.values()
            for held in (module._modules, module._parameters)
            for value in held.values()
        ]

    def _trainable_now(self) -> tuple[tuple[bool, torch.dtype], ...]:
        """Whether each of the model's parameters requires gradients now, and its dtype (a
        few attribute reads)."""
        return tuple((p.requires_grad, p.dtype) for p in self._parameters)

    def _take_layers(self) -> None:
        """The layers (modules owning parameters that require gradients) and producers now,
        and what is built on them; the alarm state of a layer no longer checked is dropped
        (its baseline is kept for when it comes back)."""
        self.layers = parameter_layers(self.model)
        self.kinds.clear()  # (the alarms hold this dict)
        self.kinds.update({n: layer_kind(self.modules, n) for n in self.layers})
        self.producers = [
            n for n, m in self.modules.items() if n and is_producer(m) and n in self.layers
        ]
        self.norms = GradientNorms(self.layers)
        self._channel_count = {n: out_channels(self.modules[n]) for n in self.producers}
        for layer in [n for n in {*self.alarms.active, *self.alarms.unfed} if n not in self.layers]:
            self.alarms.unchecked(layer)

    def _take_producers(self) -> None:
        """What the structure says of each producer now checked; the channel state of a
        producer no longer checked is dropped (a producer checked again starts afresh)."""
        assert self.structure is not None
        owners = parameter_owners(self.modules)
        self.producer_info = {
            p.name: p for p in producers_from(self.structure, self.modules, self.producers, owners)
        }
        self._unmeasured = [
            n for n in self.producers if self.structure.pairs.get(n, n) not in self._seen_first
        ]
        self._not_repairable = self._repair_limits(self.structure, owners)
        now = {n: id(info.module) for n, info in self.producer_info.items()}
        states = (
            self.channels.state,
            self.channels.quiet,
            self.certifier.certified,
            self._silent_streak,
            self._revived_after,
        )
        for state in states:
            for name in [n for n in state if now.get(n) != self._producer_modules.get(n)]:
                del state[name]
        self.channels.released &= set(now)
        self._producer_modules = now
        self._relu_cache = None
        self._scale_sources = None

    def _follow_model(self) -> bool:
        """Follow changes to the model since the last look; True when its modules changed.

        The model is read again when its modules' children or parameters are not the
        objects they were (see :meth:`_tree_now`). When modules were added, removed or
        replaced (``model.fc = nn.Linear(...)``, ``del model.adapter``), the layers are
        taken again and the structure is forgotten: the next check whose hooks are installed
        after the change learns it again and writes ``structure`` and ``manifest``, and
        the loss gets a new tracker (another model's loss is a new series). When
        only the parameters changed (frozen or unfrozen, as gradual unfreezing does; added;
        replaced by new objects, as ``m.weight = nn.Parameter(...)``, weights tied later and
        ``load_state_dict(assign=True)`` do; another dtype), the layers are taken again and
        the next check writes a manifest; when layers frozen at the structure's learning
        are trainable now, the structure is learnt again too (a frozen path leaves no
        autograd graph to learn it from)."""
        changed = False
        tree = self._tree_now()
        read = tree != self._tree  # a module or parameter is not the object it was
        if read:
            modules = named_modules(self.model)
            if [(n, id(m)) for n, m in modules.items()] != [
                (n, id(m)) for n, m in self.modules.items()
            ]:
                for name, module in modules.items():  # a module of another's name: new
                    if self.modules.get(name) is not module:
                        self.alarms.forget(name)
                self.modules = modules
                changed = True
                # The loss of another model is a new series (a replaced head starts at
                # chance): a new tracker, as the replaced layers' baselines are new, and
                # the gradient rule's lowest loss of the run is the new model's.
                self.loss = LossTracker(warmup=self.loss.warmup)
                self.alarms.new_loss_series()
            self._parameters = list(self.model.parameters())
            self._tree = self._tree_now() if changed else tree
        trainable = self._trainable_now()
        if not read and trainable == self._trainable:
            return False
        self._trainable = trainable
        self._take_layers()
        if not changed and self.structure is not None and set(self.layers) - self._learnt_with:
            # Layers trainable now that were frozen when the structure was learnt: a frozen
            # path has no autograd graph, so their pairs and ReLUs were never seen.
            changed = True
        if changed:
            self.structure = None  # learnt again by the next check armed for it
            self._manifest_due = False
        elif self.structure is not None:
            self._take_producers()
            self._manifest_due = True
        return changed

    # -- the optimizer: which one steps the model -------------------------------------------

    def _follow_optimizer(self, step: int) -> None:
        """At a check: follow the optimizer that replaced the one followed, as the
        optimizer steps seen since the check was armed tell (see ``optimizers.decide``)."""
        self._held.step_watch.remove()  # installed again when the next check is armed
        stepped = self._held.step_watch.take()
        has_step, self._window_has_step = self._window_has_step, False
        marks, self._hand_marks = self._hand_marks, None
        if not stepped:
            if has_step and marks is not None and self._awaiting_optimizer():
                self._updated_by_hand(step, marks)
            return
        self._hand_windows = []
        model = self.model
        # every parameter, frozen or not: a frozen phase leaves the followed optimizer's
        # parameters in the model, and it is kept (only replaced parameters let any
        # optimizer over the model's replace it)
        decision = decide(self._chain, stepped, lambda: {id(p) for p in model.parameters()})
        if decision.kind == "adopt":
            self._adopt(decision.candidates[0], step, seen=True)
        elif decision.kind == "unknown":
            self._optimizer_unknown(step, decision.candidates)
        elif decision.kind == "stepped" and self.certifier.unknown is not None:
            name = self._optimizer_name()
            self.certifier.unknown = None  # the one followed steps the model again
            self._optimizer_said(
                f"optimizer: {name} again since the check of step {step}: it stepped the "
                "model's parameters in the step before it; certificates and repairs read "
                "its state again"
            )

    def _awaiting_optimizer(self) -> bool:
        """Whether a repairing Monitor given no optimizer still waits to learn what updates
        the model (no optimizer seen stepping it, no update by hand concluded); a GradScaler
        given says a torch optimizer steps it (the scaler skips its steps at times)."""
        return (
            not self._chain
            and self.repair_enabled
            and self.scaler is None
            and not self._no_torch_optimizer
        )

    def _updated_by_hand(self, step: int, marks: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        """The step before the check of ``step`` was taken by no torch optimizer: did the
        loop update the parameters itself? Only when they changed in that window (``marks``:
        a few values of each trainable parameter when the check was armed), at two checks
        in a row, is that concluded, and repairs go ahead resetting no optimizer state.

        One such window is no evidence: a loop's own NaN guard that skips
        ``optimizer.step()`` right before a check leaves the parameters as they were, and
        repairing then left Adam's moments of the repaired channels in place (the optimizer
        had stepped at every other step). A window whose parameters did not change starts
        the count again; one where an optimizer stepped is followed as usual."""
        moved = any(not torch.equal(_fingerprint(param), seen) for param, seen in marks)
        if not moved:
            self._hand_windows = []
            return
        self._hand_windows.append(step)
        if len(self._hand_windows) < HAND_UPDATE_WINDOWS:
            return
        self._no_torch_optimizer = True
        first = self._hand_windows[0]
        self._optimizer_said(
            f"optimizer: none given to the Monitor, and no torch optimizer stepped in the "
            f"steps before the checks of steps {first} to {step} while the model's "
            "parameters changed in them: the model is updated by the loop itself, so "
            "repairs from this check on reset no optimizer state (an optimizer seen "
            "stepping the model's parameters later is followed)"
        )

    def _optimizer_name(self) -> str:
        return type(self.optimizer).__name__ if self.optimizer is not None else "none"

    def _adopt(self, optimizer: torch.optim.Optimizer, step: int, *, seen: bool) -> None:
        """Follow ``optimizer`` from ``step`` on (``seen`` stepping in the step before the
        check of ``step``, or given with set_optimizer)."""
        old = self._optimizer_name()
        self.optimizer = inner_optimizer(optimizer)
        self._chain = optimizer_chain(optimizer)
        self._optimizers = {id(o) for o in self._chain}
        self.certifier.optimizer = self.optimizer
        self.certifier.unknown = None
        self.certifier.certified.clear()  # said again, with the new optimizer's conditions
        self.certifier.refused.clear()
        self.repairer.optimizers = self._chain
        new = self._optimizer_name()
        reads = (
            "certificates and repairs read its state, and a GradScaler's stage is looked up "
            "under it (run_start.optimizer names the optimizer the session began with)"
        )
        if not seen:
            self._optimizer_said(
                f"optimizer: {new} since step {step}, given with monitor.set_optimizer() "
                f"(before: {old}); {reads}"
            )
        elif old == "none":
            self._optimizer_said(
                f"optimizer: {new} since the check of step {step}: none was given to the "
                f"Monitor, and {new} stepped the model's parameters in the step before it; "
                f"{reads}"
            )
        else:
            self._optimizer_said(
                f"optimizer: {new} since the check of step {step}: in the step before it, "
                f"the {old} followed until then did not step the model's parameters and a "
                f"new {new} holding them did (the optimizer was replaced); {reads}"
            )

    def _optimizer_unknown(self, step: int, candidates: tuple[torch.optim.Optimizer, ...]) -> None:
        """Several optimizers holding the followed one's parameters stepped, and it did
        not: certify and repair nothing until one is known."""
        if self.certifier.unknown is not None:
            return  # said already
        for candidate in candidates:  # (a GradScaler's stage may be under any of them)
            self._optimizers |= {id(o) for o in optimizer_chain(candidate)}
        old = self._optimizer_name()
        names = ", ".join(type(inner_optimizer(c)).__name__ for c in candidates)
        self.certifier.unknown = (
            f"the optimizer stepping these parameters is not known: {old}, followed until "
            f"the check of step {step}, no longer steps them, and several optimizers "
            f"holding them do ({names}); name the one with monitor.set_optimizer(optimizer)"
        )
        self.certifier.certified.clear()
        self._optimizer_said(
            f"optimizer unknown since the check of step {step}: in the step before it "
            f"{old} did not step the model's parameters and several optimizers holding "
            f"them did ({names}); certificates are refused and repairs skipped until one "
            "of them steps them alone in the step before a check, or "
            "monitor.set_optimizer() names it"
        )

    def _optimizer_said(self, note: str) -> None:
        """The manifests' note on the optimizer now; the next check writes a manifest (a
        structure still to learn writes its own, with the note)."""
        self._optimizer_note = note
        if self.structure is not None:
            self._manifest_due = True

    @staticmethod
    def _loss_value(loss: Any) -> torch.Tensor | float | None:
        """The loss a check reads: the tensor, or the number as a float. One no check can
        read is refused before the check begins (nothing of it recorded): an empty tensor,
        a complex one (a real tensor of it would drop the imaginary part), a numpy array of
        more than one value, an int beyond a float's range."""
        if loss is None:
            return None
        if isinstance(loss, torch.Tensor):
            if loss.numel() == 0:
                raise arguments.ArgumentRefused(
                    "monitor.step",
                    "loss",
                    "the loss tensor has no elements; pass the loss that backward() was called on",
                )
            if loss.is_complex():
                raise arguments.ArgumentRefused(
                    "monitor.step",
                    "loss",
                    f"the loss is a complex tensor ({loss.dtype}): a loss to minimise is "
                    "real; pass the real loss backward() was called on (loss.real or "
                    "loss.abs(), whichever it is)",
                )
            return loss
        if isinstance(loss, np.ndarray) and loss.shape == ():  # np.mean(...) of an array
            loss = loss[()]
        if isinstance(loss, (bool, np.bool_)) or not isinstance(loss, numbers.Real):
            raise arguments.refuse("monitor.step", "loss", "a tensor, a number or None", loss)
        try:
            return float(loss)
        except OverflowError:  # an int beyond a float's range
            raise arguments.ArgumentRefused(
                "monitor.step",
                "loss",
                f"the loss {arguments.shown(loss)} is beyond the range of a float; pass the "
                "loss as a float (float('inf') for an infinite one)",
            ) from None

    def _loss_part(
        self, step: int, loss: torch.Tensor | float | None
    ) -> tuple[torch.Tensor | None, float | None]:
        """The loss (as :meth:`_loss_value` gave it) as a one-element tensor still on its
        device, or as a number when it was given as one (under DDP a number too becomes a
        tensor: the check's reduction takes the mean over ranks)."""
        if loss is None:
            return None, None
        if isinstance(loss, torch.Tensor):
            with torch.no_grad():
                detached = loss.detach()
                if not detached.is_floating_point():
                    detached = detached.float()
                if detached.numel() != 1:
                    self._once(
                        "loss_reduced",
                        {"step": step, "severity": "info", "elements": int(detached.numel())},
                    )
                    detached = detached.float().mean()
                return detached.reshape(1), None
        if self.dist.active:  # a number too is the mean over ranks (as a tensor is)
            return torch.tensor([loss], dtype=torch.float32, device=self._device), None
        return None, loss

    def _scale(self, at_check: bool = False) -> tuple[float, float] | None:
        """The enabled GradScaler's scale now, and what the gradients are to be divided by
        (1 when ``scaler.unscale_`` already did it for the optimizer followed); None without
        an enabled scaler. ``at_check``: note whether the scaler held only that optimizer."""
        scaler = self.scaler
        if scaler is None or not getattr(scaler, "is_enabled", lambda: True)():
            return None
        states = getattr(scaler, "_per_optimizer_states", {})
        keys = list(states)  # (a defaultdict: reading it adds no key)
        mine = [key for key in keys if key in self._optimizers]
        if not mine and len(keys) == 1 and self._scaler_alone:
            # One optimizer in the scaler now, another than ours, which was alone in it at
            # the last check: the optimizer was replaced (a check adopts the new one when it
            # has seen it step; this check comes first). Its stage is the gradients'.
            mine = keys
            self._optimizers.add(keys[0])
        if at_check:
            self._scaler_alone = bool(mine) and len(mine) == len(keys)
        state = states[mine[0]] if mine else None
        stage = getattr(state.get("stage"), "name", None) if isinstance(state, dict) else None
        scale = float(scaler.get_scale())
        return scale, 1.0 if stage == "UNSCALED" else scale

    def _scale_now(self) -> float | None:
        """The enabled GradScaler's scale, or None (see :meth:`_scale`)."""
        scale = self._scale()
        return None if scale is None else scale[0]

    def _channels(
        self,
        step: int,
        names: list[str],
        flat: tuple[torch.Tensor, torch.Tensor] | None,
        scales: torch.Tensor | None,
        quiet: bool,
        values: dict[str, int],
    ) -> dict[str, list[int]]:
        """Every producer's stuck counts for the metrics row, from the maxima and minima of
        the producers ``names`` (concatenated in that order, on the host), every producer's
        scales and the values per channel the measured modules showed (``values``, for
        repairs); with the channel events, certificates and repairs they call for
        (none when ``quiet``: see :meth:`_quiet`)."""
        assert self.structure is not None
        if quiet:
            self._flat_from_start = {  # no channel flat now: none was from the start
                (name, id(self.producer_info[name].module)): set() for name in self.producers
            }
            return self._quiet_rows()
        stats: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        if flat is not None:
            sizes = [self._channel_count[n] for n in names]
            highs, lows = flat[0].split(sizes), flat[1].split(sizes)
            stats = {name: (highs[i], lows[i]) for i, name in enumerate(names)}
        out: dict[str, list[int]] = {}
        for name in self.producers:
            info = self.producer_info[name]
            total = self._channel_count[name]
            high, low = stats.get(name, (None, None))
            if high is not None and low is not None and not bool(high.isfinite().all()):
                # NaN or infinite activations say nothing of which channels are stuck: no
                # verdict this check (a stuck state is not cleared by a NaN)
                out[name] = [len(self.certifier.certified.get(name, ())), 0, 0, 0]
                continue
            relu = info.relu is not None
            pruned = self._pruned.of(name, info.module, info.bn_module)
            candidates: list[int] = []
            if relu and high is not None and low is not None:
                candidates = ((high <= 0) | (high == low)).nonzero().flatten().tolist()
                if pruned:  # removed on purpose: never examined (nor certified)
                    candidates = sorted(set(candidates) - set(pruned))
            certified, events = self.certifier.check(step, info, candidates)
            for event, fields in events:
                self._emit(event, fields)
            silent: set[int] = set()
            if relu and high is not None:
                silent = set((high <= 0).nonzero().flatten().tolist()) - certified - set(pruned)
            measured = self.structure.pairs.get(name, name)
            starting: set[int] = set()
            if high is not None and low is not None:
                flat_now = set((high == low).nonzero().flatten().tolist())
                key = (name, id(info.module))
                from_start = self._flat_from_start.get(key, flat_now) & flat_now
                self._flat_from_start[key] = from_start
                if from_start:
                    starting = starting_from_zero(info.module, info.bn_module, sorted(from_start))
            counts = classify(
                total,
                certified,
                high,
                low,
                relu,
                channel_scale(info.module, info.bn_module),
                self.decay_ratio,
                self._silence(name, silent, values.get(measured, 0), high)
                | (silent & self.certifier.silent_by_weights.get(name, set())),
                starting,
                pruned,
            )
            out[name] = counts.row()
            revived = self._revived_after.get(name, {})
            change = self.channels.observe(
                step,
                name,
                info.batchnorm,
                counts,
                values.get(measured, 0),
                pending=bool(revived) and any(c in revived for c in self._silent_streak[name]),
            )
            if change is not None:
                self._emit(*change)
            if self.repair_enabled:
                self._maybe_repair(step, info, counts)
        return out

    def _silence(
        self, name: str, silent: set[int], values: int, high: torch.Tensor | None = None
    ) -> set[int]:
        """The channels of producer ``name`` silent now (``silent``) whose silence rests on
        enough values: seen silent at this check and the checks in a row before it, which
        showed them that many values in all (``values``: this check's values per channel,
        on every rank; ``high``: this check's channel maxima, None when not measured).

        Enough is ``silent_min_values``, or, for a channel that was reported silent and
        then fired (its maximum above 0), twice the longest such silence: a unit that
        fires on one input in a few hundred is sparse, not dead (a contrastive encoder's
        and a GAN generator's such units went ``channels`` / ``channels_cleared`` a dozen
        times in 200 checks, and were repaired while alive). A unit that dies stays
        silent and is reported once its silence is twice its longest healthy one, or
        ``REVIVED_SILENCE_CAP`` x ``silent_min_values`` values (2048) if that is less."""
        streak = self._silent_streak.setdefault(name, {})
        revived = self._revived_after.setdefault(name, {})
        for c in [c for c in streak if c not in silent]:
            _, seen = streak.pop(c)
            if high is not None and seen >= self._silence_needed(revived, c) and high[c] > 0:
                revived[c] = seen  # reported silent, and it fired: sparse
        for c in silent:
            checks, seen = streak.get(c, (0, 0))
            streak[c] = (checks + 1, seen + values)
        return {c for c in silent if streak[c][1] >= self._silence_needed(revived, c)}

    def _silence_needed(self, revived: dict[int, int], channel: int) -> int:
        """Values of silence in a row that make ``channel`` silent (see :meth:`_silence`): at
        most ``REVIVED_SILENCE_CAP`` times ``silent_min_values``, so that a unit whose
        silences grew (each doubled what it needed next) is still found once it dies."""
        needed = max(self.silent_min_values, 2 * revived.get(channel, 0))
        return min(needed, REVIVED_SILENCE_CAP * self.silent_min_values)

    def _quiet_rows(self) -> dict[str, list[int]]:
        """The stuck counts of a check where no producer has a stuck channel."""
        return {name: [0, 0, 0, 0] for name in self.producers}

    def _quiet(self, highs: torch.Tensor, lows: torch.Tensor, scales: torch.Tensor | None) -> bool:
        """True when no producer has a stuck channel now or had one at the last check.

        ``highs`` and ``lows`` are every producer's channel maxima and minima, concatenated
        in producer order, ``scales`` their scales (see ``_scale_vector``), all on the host.
        The common case, decided with a few array operations over every producer's channels
        at once, instead of a loop of small ones per producer. No channel has decayed when
        the smallest scale of all producers is at least ``decay_ratio`` times the largest
        (each layer's median lies between); only when that bound fails are the per-layer
        medians taken. Channels a pruning mask holds at zero (flat or silent, of zero scale
        without a BatchNorm, by design) are left out of all three tests, as
        :func:`~trainrecord.monitor.channels.classify` leaves them out; they are read only
        when something looks stuck or the bound fails."""
        if self.certifier.certified or any(self._silent_streak.values()):
            return False
        if any(level != "none" for level, _ in self.channels.state.values()):
            return False
        high, low = highs.numpy(), lows.numpy()
        stuck = ((high <= 0) & self._relu_mask()) | (high == low)
        pruned: dict[str, list[int]] | None = None  # (read only when something looks stuck)
        if stuck.any():  # pruned channels are flat or silent by design: no verdict on them
            pruned = self._pruned_now()
            keep = self._unpruned(self.producers, pruned, high.size) if pruned else None
            if keep is None or (stuck & keep).any():
                return False
        if scales is None:
            return True
        values = scales.numpy()
        if values.min() >= self.decay_ratio * values.max():  # NaN compares False: see below
            return True
        pruned = self._pruned_now() if pruned is None else pruned
        if pruned:  # out of the bound and of the medians (NaN: nanmedian passes over it)
            keep = self._unpruned(self._scale_order, pruned, values.size)
            if keep is None:
                return False
            if not keep.any():
                return True
            kept = values[keep]
            if kept.min() >= self.decay_ratio * kept.max():
                return True
            scales = torch.from_numpy(np.where(keep, values, np.float32(math.nan)))
        padded = self._padded_scales(scales)
        assert padded is not None
        median = padded.nanmedian(dim=1).values.unsqueeze(1)
        return not bool(((padded < self.decay_ratio * median) & (median > 0)).any())

    def _pruned_now(self) -> dict[str, list[int]]:
        """The producers with channels a pruning mask holds at zero now, and those channels
        (see :class:`~trainrecord.monitor.channels.PrunedChannels`)."""
        out: dict[str, list[int]] = {}
        for name in self.producers:
            info = self.producer_info[name]
            channels = self._pruned.of(name, info.module, info.bn_module)
            if channels:
                out[name] = channels
        return out

    def _unpruned(
        self, order: list[str], pruned: dict[str, list[int]], size: int
    ) -> np.ndarray | None:
        """True for every channel of the producers ``order`` (concatenated in that order,
        ``size`` in all) that ``pruned`` does not name; None when the counts do not add up
        to ``size`` (the check then takes each producer on its own)."""
        keep = np.ones(size, dtype=bool)
        start = 0
        for name in order:
            count = self._channel_count.get(name, 0)
            channels = [c for c in pruned.get(name, ()) if c < count]
            if channels:
                keep[[start + c for c in channels]] = False
            start += count
        return keep if start == size else None

    def _scale_vector(self) -> torch.Tensor | None:
        """Every producer's per-channel scale in one vector, on the parameters' device: the
        BatchNorm ones (|gamma|) first, in producer order, then the others (norms of incoming
        weights). None when no producer has one."""
        gammas, others = self._scale_parts()
        if not gammas and not others:
            return None
        with torch.no_grad():  # no graph: the parameters need no detach()
            parts = gammas + others
            if not self._one_device:
                parts = [t.to(parts[0].device) for t in parts]
            joined = torch.cat(parts).abs_()  # a new tensor: abs_ leaves the parameters be
            return joined if joined.dtype == torch.float32 else joined.float()  # exact

    def _scale_parts(self) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """The BatchNorm gammas (raw) and the other producers' scales (on their device)."""
        if self._scale_sources is None:  # which producers have a gamma: once per structure
            sources: list[torch.Tensor | nn.Module] = []
            others: list[nn.Module] = []
            self._scale_names = ([], [])
            for name in self.producers:
                bn = self.producer_info[name].bn_module
                if bn is not None and own_parameter(bn, "weight"):
                    sources.append(cast(torch.Tensor, bn._parameters["weight"]))
                elif bn is not None and affine_of(bn) is not None:
                    sources.append(bn)  # computed (a parametrization): read at each check
                else:
                    others.append(self.producer_info[name].module)
                    self._scale_names[1].append(name)
                    continue
                self._scale_names[0].append(name)
            self._scale_sources = (sources, others)
        sources, modules = self._scale_sources
        gammas = [s if isinstance(s, torch.Tensor) else self._gamma(s) for s in sources]
        scales = incoming_norms_of(modules)
        kept = [i for i, t in enumerate(scales) if t is not None and t.numel()]
        self._scale_order = self._scale_names[0] + [self._scale_names[1][i] for i in kept]
        return gammas, [cast(torch.Tensor, scales[i]) for i in kept]

    @staticmethod
    def _gamma(bn: nn.Module) -> torch.Tensor:
        """The weight of a BatchNorm whose weight is computed, as its forward pass uses it."""
        affine = affine_of(bn)
        assert affine is not None  # (taken as a source because it has one)
        return affine[0]

    def _padded_scales(self, values: torch.Tensor | None = None) -> torch.Tensor | None:
        """Every producer's per-channel scale, one row each, padded with NaN (None: none).

        Rows in producer order, the BatchNorm ones (|gamma|) first, then the others (norms
        of incoming weights): the rows ``pad_sequence`` of the scales would give, gathered
        from the concatenated vector (``values``, on the host; taken now when not given)
        with an index built once per set of channel counts."""
        gammas, others = self._scale_parts()
        if values is None:
            vector = self._scale_vector()
            if vector is None:
                return None
            values = vector.cpu()
        sizes = tuple(int(g.numel()) for g in gammas) + tuple(int(t.numel()) for t in others)
        index = self._pad_index.get(sizes)
        if index is None:
            width, total = max(sizes), sum(sizes)
            index = torch.full((len(sizes), width), total, dtype=torch.long)
            start = 0
            for row, size in enumerate(sizes):
                index[row, :size] = torch.arange(start, start + size)
                start += size
            self._pad_index[sizes] = index
        nan = torch.full((1,), math.nan, dtype=torch.float32)
        # index_select: a 2-D advanced index runs a parallel kernel that, on a busy CPU,
        # waits milliseconds for a pool thread
        values = torch.cat([values.float(), nan])
        return values.index_select(0, index.view(-1)).view(index.shape)

    def _relu_mask(self) -> np.ndarray:
        """True for every channel (in producer order) whose producer feeds a ReLU."""
        if self._relu_cache is None:
            self._relu_cache = np.concatenate(
                [
                    np.full(self._channel_count[n], self.producer_info[n].relu is not None)
                    for n in self.producers
                ]
            )
        return self._relu_cache

    def _stat_parts(
        self, probe: ActivationProbe | None
    ) -> tuple[list[str], tuple[torch.Tensor, torch.Tensor] | None]:
        """The producers the probe measured (with one value per output channel; any other
        is left unmeasured), and their channels' maxima and minima over the batch,
        concatenated in that order, still on the device (None: nothing measured). One
        process only: under DDP see :meth:`_reduce`."""
        assert self.structure is not None
        names: list[str] = []
        if probe is not None:  # measured, one value per output channel of the producer
            for name in self.producers:
                high = probe.maxima.get(self.structure.pairs.get(name, name))
                if high is not None and high.numel() == self._channel_count[name]:
                    names.append(name)
        if probe is None or not names:
            return names, None
        measured = [self.structure.pairs.get(name, name) for name in names]
        maxima = [probe.maxima[m] for m in measured]
        minima = [probe.minima[m] for m in measured]
        if not self._one_device:  # activations on several devices: gather them on one
            device = maxima[0].device
            maxima = [p.to(device) for p in maxima]
            minima = [p.to(device) for p in minima]
        return names, (torch.cat(maxima), torch.cat(minima))

    def _reduce(
        self, step: int, probe: ActivationProbe | None, loss: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Under DDP: the check's two collectives (see ``Distributed.reduce_check``), over
        every producer in a fixed order whatever this rank measured (a branch it skipped, a
        batch of one sample), so that every rank sends the same layout and every decision
        made from the result (silence, repairs and their broadcasts) is the same on every
        rank. Returns the sums and the maxima, on the device."""
        self.dist.refuse_join()
        extremes: list[tuple[torch.Tensor, torch.Tensor] | int] = []
        values: list[int] = []
        pairs = self.structure.pairs if self.structure is not None else None
        for name in self.producers:
            size = self._channel_count[name]
            measured = pairs.get(name, name) if pairs is not None else None
            high = probe.maxima.get(measured) if probe is not None and measured else None
            if probe is None or measured is None or high is None or high.numel() != size:
                extremes.append(size)
                values.append(0)
            else:
                extremes.append((high, probe.minima[measured]))
                values.append(probe.values.get(measured, 0))
        stopped = self._record_error is not None  # (only ever set on the writer)
        maxed, summed = self.dist.reduce_check(step, loss, extremes, values, self._device, stopped)
        return summed, maxed

    def _reduced(
        self, step: int, summed: torch.Tensor, maxed: torch.Tensor
    ) -> tuple[float | None, list[str], dict[str, int], torch.Tensor | None, torch.Tensor | None]:
        """What :meth:`_reduce` gave, read on the host: the loss (mean over the ranks that
        gave one), the producers measured on some rank, the values per channel of each
        measured module (summed over ranks), and the measured producers' channel maxima
        and minima, concatenated in producer order (None: none measured)."""
        sizes = [self._channel_count[n] for n in self.producers]
        loss, ranks, stopped, counts, high, low = self.dist.read_check(step, maxed, summed, sizes)
        if stopped:  # the writer's record could not be written: no rank checks any more
            self._checks_stopped = True
            return loss, [], {}, None, None
        if 0 < ranks < self.dist.world_size and "loss_ranks" not in self._said:
            self._said.add("loss_ranks")
            if self.dist.writer:
                LOGGER.warning(
                    "trainrecord.Monitor: step %d: the loss was given to monitor.step() on "
                    "%d of %d ranks: the loss recorded is the mean over those; pass it on "
                    "every rank (or on none)",
                    step,
                    ranks,
                    self.dist.world_size,
                )
        if self.structure is None:
            return loss, [], {}, None, None
        names = [n for n, v in zip(self.producers, counts, strict=True) if v > 0]
        values = {
            self.structure.pairs.get(n, n): v
            for n, v in zip(self.producers, counts, strict=True)
            if v > 0
        }
        if not names:
            return loss, names, values, None, None
        if len(names) < len(self.producers):
            keep = torch.repeat_interleave(
                torch.tensor([v > 0 for v in counts]), torch.tensor(sizes)
            )
            high, low = high[keep], low[keep]
        return loss, names, values, high, low

    def _maybe_repair(self, step: int, info: Producer, counts: ChannelCounts) -> None:
        """Repair certified channels at once, and silent ones (``counts.observed``) once
        silent at ``repair_patience`` checks in a row over ``repair_min_values`` values."""
        streak = self._silent_streak.setdefault(info.name, {})
        chosen = sorted(
            set(counts.certified)
            | {
                c
                for c in counts.observed
                if streak[c][0] >= self.repair_patience and streak[c][1] >= self.repair_min_values
            }
        )
        if not chosen or info.name in self._not_repairable:
            return
        if self.certifier.unknown is not None:  # whose state to reset is not known
            return
        if not self._chain and not self._no_torch_optimizer:
            return  # no optimizer given and none seen yet: its state would be left (noted)
        consumer_name = self.structure.consumer.get(info.name) if self.structure else None
        consumer = (consumer_name, self.modules[consumer_name]) if consumer_name else None
        block = self.structure.consumer_block.get(info.name, 1) if self.structure else 1
        attempt = self._attempt
        assert attempt is not None  # (a repair is made inside a check: see _check)
        fields = self.repairer.repair(
            step, info, chosen, consumer, block, undo=attempt.undo, drawn=attempt.drawn
        )
        # a check run again repeats the repair as first made: its fields, so its one line
        fields = attempt.repairs.setdefault((info.name, tuple(chosen)), fields)
        revived = self._revived_after.get(info.name, {})
        for c in chosen:
            streak.pop(c, None)
            revived.pop(c, None)  # a new unit: its silence is judged afresh
        self.certifier.certified.pop(info.name, None)
        self.channels.released.add(info.name)  # its clear is not held back: see channels.py
        self._emit("repair", fields)

    def _frozen_layers(self) -> list[str]:
        """Layers with parameters, none of them trainable (a fine-tune's frozen base): named
        in the manifest, which lists only the layers it checks; named as
        :func:`parameter_layers` names them (a parametrized module with its
        parametrizations' parameters, a parameter the model itself owns by its name)."""
        layers = layer_parameters(self.modules)
        return [n for n, own in layers.items() if not any(p.requires_grad for _, p in own)]

    def _tied_layers(self) -> list[list[str]]:
        """Groups of layers that own one trainable parameter together (GPT-2's wte and
        lm_head): their gradient norms cover its one gradient."""
        owners = parameter_owners(self.modules, trainable_only=True)
        groups = {tuple(names) for names in owners.values() if len(names) > 1}
        return [list(g) for g in sorted(groups)]

    # -- writing --------------------------------------------------------------------------

    def _emit(self, event: str, fields: dict[str, Any]) -> None:
        with self._lock:  # from the training thread and the sink thread
            if self._record_error is not None and event != "run_end":
                return  # not recorded, not counted (under DDP the writer checks on a while)
            counted = event not in ("run_start", "run_end")
            if counted:
                self.counts.setdefault(event, 0)
            if not self.dist.writer:
                if counted:
                    self.counts[event] += 1
                return
            attempt = self._attempt if counted and event != "sink_error" else None
            key = ""
            if attempt is not None:
                key = event + json.dumps(fields, sort_keys=True, default=str)
                done = attempt.written_before(key)
                if done is not None:  # a check run again: this line is in the record
                    if not done.delivered and done.line is not None:
                        done.delivered = True
                        self._sinks.put("event", done.line)
                    return
            seq = self._diary.seq
            try:
                line = self._diary.append(event, fields)
            except OSError as exc:
                self._recording_failed(exc, diary=True)
                return
            except RecordRefused as exc:
                self._refused(event, exc)
                return
            finally:
                # counted in run_end when its line is in the record, also when the append
                # then raised (Ctrl+C during its fsync); no call in between: a signal is
                # handled at calls, and the count must not miss the line or count a missing one
                if counted and self._diary.seq != seq:
                    self.counts[event] += 1
                    if attempt is not None:
                        attempt.lines.append(_Written(key, self._diary.last_line))
        if event != "sink_error":
            self._sinks.put("event", line)
            if attempt is not None:
                attempt.lines[-1].delivered = True

    def _refused(self, event: str, exc: RecordRefused) -> None:
        """An event the diary writer refused: not in the record (so not counted), said once in
        the log (run_start's refusal is raised: at creation, a clear error before training)."""
        if event == "run_start":
            raise exc  # at creation: a clear error before training starts
        # an event the spec refuses is the Monitor's own mistake: never the end of
        # training; the record stays valid without it, and the log says which
        if (event, exc.rules[0]) not in self._refused_events:
            self._refused_events.add((event, exc.rules[0]))
            LOGGER.error(
                "trainrecord.Monitor: step %d: a %s event was not recorded (%s); "
                "training goes on; this is a trainrecord bug, please report it",
                self.steps,
                event,
                exc,
            )

    def _once(self, event: str, fields: dict[str, Any]) -> None:
        if event not in self._said:
            self._said.add(event)
            written = self.counts.get(event, 0)
            try:
                self._emit(event, fields)
            except BaseException:  # (Ctrl+C) not in the record: said at its next occasion
                if self.counts.get(event, 0) == written:
                    self._said.discard(event)
                raise

    def _recording_failed(self, exc: OSError, *, diary: bool) -> None:
        """A record file could not be written (a full disk): say so once, stop recording,
        and let training go on (see spec/README "A record that cannot be written")."""
        if self._record_error is None:
            self._record_error = exc
            if not self.dist.active:  # under DDP every rank stops at the next check, together
                self._checks_stopped = True
                self._disarm()
            LOGGER.error(
                "trainrecord.Monitor: recording stopped at step %d, training goes on: %s%s",
                self.steps,
                exc,
                ""
                if diary
                else " (run_end at close says so: diary.jsonl is intact and ends complete)",
            )
        self._diary_failed = self._diary_failed or diary

    def _sink_failed(self, sink: str, error: str) -> None:
        LOGGER.warning("trainrecord: sink %s failed: %s", sink, error)
        with contextlib.suppress(Exception):
            self._emit("sink_error", {"sink": sink, "error": error})

    def _run_start(self, config: dict[str, Any] | None) -> dict[str, Any]:
        named = list(self.model.named_parameters())
        return {
            "name": self.name,
            "tool": f"trainrecord {__version__}",
            "model": class_name(self.model),
            "parameters": sum(p.numel() for _, p in named),
            "layers": list(self.layers),
            "architecture_sha256": architecture_sha256((n, p.shape) for n, p in named),
            "optimizer": type(self.optimizer).__name__ if self.optimizer is not None else None,
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "platform": platform.platform(),
            "config": config,
            "record_version": 1,
            **({"start_step": self.start_step} if self.start_step else {}),
        }

    def _outside_optimizer(self) -> list[str]:
        """The layers none of whose trainable parameters the optimizer holds; none when it
        holds none of the model's (master weights, a vmap ensemble's stacked ones) or shards
        them across processes (ZeroRedundancyOptimizer: each holds a part)."""
        optimizer = self.optimizer
        if optimizer is None or "ZeroRedundancy" in type(optimizer).__name__:
            return []
        held = {id(p) for group in optimizer.param_groups for p in group["params"]}
        outside = [
            layer
            for layer, params in self.layers.items()
            if not any(id(p) in held for _, p in params)
        ]
        return outside if len(outside) < len(self.layers) else []

    def _precision(self) -> str:
        """The manifest's ``precision``: the parameters' dtypes (``float32``; several
        joined by ``", "``), then, when the measured outputs of this check's forward pass
        had a dtype no parameter has (autocast), ``"<dtypes> parameters, <dtypes>
        activations (autocast) in this check's forward pass"``, then, with an enabled
        GradScaler, ``"; GradScaler: gradient norms divided by the scale"``. Read from
        what the check already holds (the parameters' dtypes, the probe's output dtypes)."""
        dtypes = sorted({str(dtype).replace("torch.", "") for _, dtype in self._trainable})
        precision = ", ".join(dtypes) or "float32"
        seen = sorted({str(d).replace("torch.", "") for d in self._activation_dtypes})
        if seen and set(seen) - set(dtypes):  # autocast: outputs in another precision
            precision = (
                f"{precision} parameters, {', '.join(seen)} activations (autocast) in "
                "this check's forward pass"
            )
        if self.scaler is not None and getattr(self.scaler, "is_enabled", lambda: True)():
            precision += "; GradScaler: gradient norms divided by the scale"
        return precision

    def _pruned_counts(self) -> dict[str, int]:
        """Per producer under a ``torch.nn.utils.prune`` mask (its weight's, or its
        BatchNorm's), how many of its channels the masks hold at zero now (0 for
        unstructured pruning, which removes no whole channel)."""
        out: dict[str, int] = {}
        for name in self.producers:
            info = self.producer_info.get(name)
            if info is None:
                continue
            channels = self._pruned.masked(name, info.module, info.bn_module)
            if channels is not None:
                out[name] = len(channels)
        return out

    @staticmethod
    def _pruned_note(pruned: dict[str, int]) -> str:
        """The manifest's note on the producers under a pruning mask."""
        layers = ", ".join(f"{name} ({count})" for name, count in pruned.items())
        return (
            "pruned channels (torch.nn.utils.prune masks holding a channel's incoming "
            "weights, or its BatchNorm weight, at zero; producers entries say how many): "
            f"{layers}: removed on purpose, they are not counted as stuck (in no category "
            "of channels events or metrics rows) nor in the channels a level is counted "
            "against, and are never certified or repaired; a check where the masks changed "
            "writes a new manifest"
        )

    def _manifest(self, step: int) -> dict[str, Any]:
        producers = []
        assert self.structure is not None
        pruned = self._pruned_counts()
        for name in self.producers:
            info = self.producer_info[name]
            reason = info.static_reason()
            entry: dict[str, Any] = {
                "layer": name,
                "certifiable": reason is None,
                "measured": name not in self._unmeasured,
                "batchnorm": info.batchnorm,
                "relu": info.relu,
                "consumer": self.structure.consumer.get(name),
            }
            if reason is not None:
                entry["reason"] = reason
            if name in pruned:
                entry["pruned"] = pruned[name]
            producers.append(entry)
        precision = self._precision()
        self._described = (precision, self.compiled, pruned)
        notes = [
            "steps between checks only increment a counter; forward hooks are installed for "
            "the forward pass of a check step only (every forward with gradients from the "
            "step before the check on; a module's passes in eval mode, a validation pass, "
            "count only when it ran none in training mode)",
            "per-layer gradient norms come from one batched pass over the gradients per "
            "check (BLAS dot products on the CPU, torch._foreach_norm elsewhere), summed per "
            "layer in float64; a sum of squares that underflows or overflows float32 is "
            "taken again in float64",
            "the loss is read at checks only: a non-finite loss between checks shows at the "
            "next check",
            "skipped steps are recorded at checks whose gradients are not finite, "
            "the condition under which the GradScaler skips the optimizer step",
        ]
        if self.dist.wrapper is not None and not self.dist.active:
            notes.append(
                f"the model is wrapped in {self.dist.wrapper} in one process: the module "
                "inside it is monitored, and nothing is reduced across processes"
            )
        if self._unmeasured:
            notes.append(
                "no channel statistics for "
                + ", ".join(self._unmeasured)
                + " at the first check: no forward pass with gradients gave them two or more "
                "values per channel (a module the forward pass never calls, as "
                "MultiheadAttention does with its out_proj, or a batch of one sample); their "
                "constant and silent counts stay 0 and none is certified while that lasts "
                "(their producers entries say measured: false); decayed channels are still "
                "counted"
            )
        if pruned:
            notes.append(self._pruned_note(pruned))
        frozen = self._frozen_layers()
        if frozen:
            notes.append(
                f"frozen, not checked (every parameter they own has requires_grad False; "
                f"checked from the first check after they are unfrozen): {len(frozen)} "
                + ("module" if len(frozen) == 1 else "modules")
                + ": "
                + ", ".join(frozen)
            )
        outside = self._outside_optimizer()
        if outside:
            notes.append(
                "layers with trainable parameters the optimizer given to the Monitor does "
                "not hold: "
                + ", ".join(outside)
                + ": their gradients are measured and judged; unless another optimizer "
                "updates them (SparseAdam for a sparse embedding, a GAN's other optimizer), "
                "nothing does: add them to an optimizer, or set requires_grad=False"
            )
        trainable = {id(p) for params in self.layers.values() for _, p in params}
        if (
            self.optimizer is not None
            and _trains_none_of(self.optimizer, trainable)
            # none of the model's parameters at all: only frozen ones is a frozen phase
            and _trains_none_of(self.optimizer, {id(p) for p in self.model.parameters()})
        ):
            notes.append(
                f"the optimizer given to the Monitor ({type(self.optimizer).__name__}) "
                "holds none of the model's trainable parameters now: they were replaced "
                "after it was built (load_state_dict(assign=True), m.weight = "
                "nn.Parameter(...)). That optimizer trains none of them, and the Monitor's "
                "certificates and repairs read its state of parameters the model no longer "
                "holds. An optimizer built again over them is followed from the first check "
                "it steps before (or at once with monitor.set_optimizer(optimizer)); until "
                "then the Monitor does not know it. If the loop built none, nothing trains "
                "the model: load without assign=True (it copies into the parameters the "
                "optimizer holds), or build the optimizer again"
            )
        if self._optimizer_note is not None:
            notes.append(self._optimizer_note)
        tied = self._tied_layers()
        if tied:
            notes.append(
                "layers sharing a parameter (tied weights): "
                + "; ".join(" and ".join(group) for group in tied)
                + ": each one's gradient norm covers the shared parameter's one gradient, so "
                "an alarm on one of them comes with one on the others"
            )
        if self.compiled:
            notes.append(
                "the model is compiled (torch.compile): check steps run eagerly "
                "(compiler stance force_eager from the step before each check until the "
                "check), so the hooks see the real forward pass; "
                + (
                    "with check_every=1 every step is a check: the compiled code never runs"
                    if self.check_every == 1
                    else "other steps run the compiled code, which never saw a hook"
                )
            )
        return {
            "step": step,
            "check_every": self.check_every,
            "layers": list(self.layers),
            "producers": producers,
            "channel_checks": {
                "measured": "per-channel max and min of the tensor each "
                "producer's ReLU receives (its BatchNorm's output, or its own)",
                "categories": ["certified", "flat", "silent", "decayed"],
                "decay_ratio": self.decay_ratio,
                "silent_min_values": self.silent_min_values,
                "list_limit": self.channels.list_limit,
            },
            "repair": (
                {
                    "patience": self.repair_patience,
                    "min_values": self.repair_min_values,
                    "rng": self.repairer.rng,
                    "function_preserving": sorted(
                        n for n in self.structure.consumer if n not in self._not_repairable
                    ),
                    "not_repaired": dict(self._not_repairable),
                }
                if self.repair_enabled
                else False
            ),
            "precision": precision,
            "distributed": self.dist.manifest(),
            "notes": notes,
        }


@dataclass
class _StepMark:
    """One gradient as a check left it: weak references (a check holds no tensor alive)
    to a parameter and its gradient, with their version counters, which any in-place
    change (an optimizer step, zero_grad, a backward that accumulates) moves."""

    step: int
    param: weakref.ref[torch.Tensor]
    grad: weakref.ref[torch.Tensor]
    param_version: int
    grad_version: int
    values: torch.Tensor | None = None  # a few of the parameter's values, as the check saw
    scale: float | None = None  # the GradScaler's, when one is given

    @classmethod
    def of(
        cls, step: int, parameters: list[nn.Parameter], optimizer: torch.optim.Optimizer | None
    ) -> _StepMark | None:
        """The mark of the first trainable parameter with a gradient that ``optimizer``
        updates (any trainable one without an optimizer); None when none has one. A frozen
        parameter's stale gradient, or one another optimizer steps, stays the same across a
        correct optimizer step: marking it warned on a correct loop (a review found it)."""
        held = (
            None
            if optimizer is None
            else {id(p) for group in optimizer.param_groups for p in group["params"]}
        )
        for param in parameters:
            grad = param.grad
            if grad is not None and param.requires_grad and (held is None or id(param) in held):
                try:
                    versions = param._version, grad._version
                except (AttributeError, RuntimeError):  # a tensor without a version counter
                    return None
                values = _fingerprint(param).clone()
                return cls(step, weakref.ref(param), weakref.ref(grad), *versions, values)
        return None

    def accumulated(self) -> bool:
        """Whether a backward added to the gradient the check read (the same tensor, its
        version moved) with no optimizer step between (the parameter unchanged): step()
        called once per micro-batch of gradient accumulation."""
        param, grad = self.param(), self.grad()
        if param is None or grad is None or param.grad is not grad:
            return False
        try:
            if param._version != self.param_version or grad._version == self.grad_version:
                return False
        except (AttributeError, RuntimeError):
            return False
        # an optimizer writing through p.data moves no version counter: the values tell
        seen = self.values
        return seen is not None and bool(torch.equal(_fingerprint(param), seen))

    def same(self) -> bool:
        """Whether the parameter and its gradient are as they were (nothing happened)."""
        param, grad = self.param(), self.grad()
        if param is None or grad is None or param.grad is not grad:
            return False
        try:
            return (param._version, grad._version) == (self.param_version, self.grad_version)
        except (AttributeError, RuntimeError):
            return False


REVIVED_SILENCE_CAP = 8
"""A channel reported silent that fired again needs at most this many times
``silent_min_values`` values of silence to be silent again (2048 by default): its silences
may grow (one in a few thousand inputs), its death must still be found."""

HAND_UPDATE_WINDOWS = 2
"""Checks in a row whose preceding step changed the parameters with no torch optimizer
stepping, before a repairing Monitor given no optimizer concludes that the loop updates
the weights itself (see ``Monitor._updated_by_hand``)."""

_FINGERPRINT = 16
"""Values of a parameter a fingerprint holds (see :func:`_fingerprint`)."""


def _fingerprint(param: torch.Tensor) -> torch.Tensor:
    """The first :data:`_FINGERPRINT` values of ``param`` (a view: ``clone()`` to keep
    them), compared with ``torch.equal`` later to tell whether it changed: an optimizer
    writing through ``p.data`` moves no version counter. A step mark keeps one parameter's
    (once per check), a repairing Monitor given no optimizer every trainable one's while it
    waits to learn what updates the model (``Monitor._updated_by_hand``)."""
    return param.detach().reshape(-1)[:_FINGERPRINT]


@dataclass
class _Written:
    """A line a check wrote: its event and fields (``key``), the line, whether the sinks got
    it."""

    key: str
    line: dict[str, Any] | None
    delivered: bool = False


@dataclass
class _Attempt:
    """A check begun at ``step`` and not complete yet.

    Ctrl+C in the middle of a check, caught by the loop (a notebook cell interrupted, then
    run again): the next ``step()`` runs the check again at the same step. It measures the
    forward pass the first attempt's hooks saw (``probe``, ``structure_probe``,
    ``learnt``) and what it read (``reads``: the loss, the gradient norms, the channel
    statistics; not under DDP, whose ranks read again together), so a loop that trained on
    between (Ctrl+C caught, ``optimizer.step()``, the next batch) gets the check of its
    step, not of the next batch's loss and gradients (a spike said twice, with two
    values). It starts from the state the first attempt found (``state``; the repairs it
    made are undone by ``undo``, newest first, on the repaired slices only: the loop may
    have taken an optimizer step since, which stays; a repair made again takes the first
    attempt's new weights, ``drawn``, and fields, ``repairs``: one line, and the loop's
    random numbers are not drawn again), and does not write again a line the
    earlier attempts wrote (``lines``, matched by event and fields): each event is written
    once, and one an attempt had decided but not written is written by the run again.

    Under DDP this is a known limit, not a supported pattern: every rank reads again (the
    collectives are made again together), so a run again after the loop trained on judges
    the next batch, and a rank other than the writer counts both attempts' events in its
    own (never written) ``counts``. ``torchrun`` sends SIGINT to every rank, which as a
    rule leaves some rank inside a collective another has left, so the group cannot train
    on; a notebook's interrupt does not reach the workers it launched (see spec/README.md,
    "Ctrl+C in a check under DDP")."""

    step: int
    probe: ActivationProbe | None = None
    structure_probe: StructureProbe | None = None
    learnt: tuple[Structure, set[str]] | None = None
    state: dict[str, Any] | None = None
    undo: list[Callable[[], None]] = field(default_factory=list)
    drawn: dict[tuple[str, tuple[int, ...]], torch.Tensor] = field(default_factory=dict)
    repairs: dict[tuple[str, tuple[int, ...]], dict[str, Any]] = field(default_factory=dict)
    reads: tuple[Any, ...] | None = None
    lines: list[_Written] = field(default_factory=list)
    unmatched: Counter[str] = field(default_factory=Counter)

    def again(self) -> None:
        """A run again begins: every line written so far is to be matched once."""
        self.unmatched = Counter(written.key for written in self.lines)

    def written_before(self, key: str) -> _Written | None:
        """The line an earlier attempt wrote with this event and these fields, not yet
        matched in this run; None when there is none."""
        if not self.unmatched[key]:
            return None
        self.unmatched[key] -= 1  # (matched from the last such line back)
        return [written for written in self.lines if written.key == key][self.unmatched[key]]


_SHARED = frozenset({int, float, bool, str, type(None), tuple, frozenset})
"""Types a copy of a check's state shares (tuples hold numbers and strings there)."""


def _copied(value: Any) -> Any:
    """A copy of a check's state: dicts, lists, sets and deques copied all the way down,
    dataclass instances attribute by attribute; numbers, strings and tuples (of those)
    shared. About 3 times faster than ``copy.deepcopy`` on the alarms' per-layer baselines
    (tens of microseconds a check for 60 layers)."""
    kind = type(value)
    if kind in _SHARED:
        return value
    if kind is dict:
        return {k: v if type(v) in _SHARED else _copied(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _SHARED else _copied(v) for v in value]
    if kind is set:
        return set(value)
    if kind is deque:
        return deque([v if type(v) in _SHARED else _copied(v) for v in value], maxlen=value.maxlen)
    plain = _DATACLASSES.get(kind)
    if plain is None:  # (is_dataclass once per type: a check copies dozens of baselines)
        plain = _DATACLASSES[kind] = is_dataclass(kind)
    if plain:
        new = object.__new__(kind)
        vars(new).update(
            {k: v if type(v) in _SHARED else _copied(v) for k, v in vars(value).items()}
        )
        return new
    return copy.deepcopy(value)


_DATACLASSES: dict[type, bool] = {}
"""Whether each type :func:`_copied` met is a dataclass (a class, as a value, is not one:
its type is ``type``)."""


@dataclass(eq=False)
class _OnModel:
    """An open Monitor on a model: its run folder, whether it repairs, and its sinks'
    thread (which holds nothing of the Monitor: see ``sinks._deliver``)."""

    model: weakref.ref[nn.Module]
    run_dir: str
    repair: bool
    sinks: SinkThread
    folder: str | None = None  # the run_dir resolved, where this process writes the record


_OPEN_ON_MODELS: list[_OnModel] = []
"""The open Monitors of this process (a few at most: a GAN's two)."""


def _overlap(model: nn.Module, other: nn.Module) -> str | None:
    """How ``other`` (another Monitor's model) overlaps ``model``: the same model, one of its
    modules, a model it is a module of, or a model sharing a parameter with it (a module
    both hold, as two heads on one encoder, or a tied weight); None when they share no
    parameter."""
    if other is model:
        return "this model"
    for name, module in model.named_modules():
        if module is other:
            return f"a part of this model (its module {name!r})"
    for name, module in other.named_modules():
        if module is model:
            return f"a model this one is a part of (as its module {name!r})"
    theirs = {id(param): name for name, param in other.named_parameters()}
    for name, param in model.named_parameters():
        if id(param) in theirs:
            return (
                f"a model sharing a parameter with this one (its {name!r} is the other "
                f"model's {theirs[id(param)]!r}: a module both hold, or a tied weight)"
            )
    return None


def _in_the_way(model: nn.Module, repair: bool) -> tuple[_OnModel, str] | None:
    """The first open Monitor whose model overlaps ``model`` when either repairs, and how."""
    for other in _OPEN_ON_MODELS:
        theirs = other.model()
        if theirs is None or not (repair or other.repair):
            continue
        where = _overlap(model, theirs)
        if where is not None:
            return other, where
    return None


def _alone_refusal(
    model: nn.Module, run_dir: Path, repair: bool
) -> arguments.ArgumentRefused | None:
    """The refusal (None: none) of a Monitor on a model another open Monitor watches when
    either repairs: a repair changes weights the other's record describes without a word in it (its
    certificates and channel counts no longer hold), and two repairing Monitors repair the
    same channels at one step, the second overwriting the first's new weights (the first
    record's ``rng`` and method no longer describe them). A model that is a module of the
    other's (or holds it), or that shares a parameter with it (a module both hold, a tied
    weight), counts as the same: a repair of one changes the other's weights. Watch-only
    Monitors on one model are let be: each record is true (each pays for its own checks).
    This runs at construction only: nothing per step. It is raised after the ranks'
    agreement at creation (see ``Distributed.agree_schedule``), with every rank refusing.

    A Monitor in the way that no one holds any more is let go first: its sinks deliver
    what they had queued (at most a second), and one ``gc.collect()`` frees it when only a
    reference cycle kept it (a callback that refers to it)."""
    found = _in_the_way(model, repair)
    if found is not None:
        found[0].sinks.flush(1.0)
        gc.collect()
        found = _in_the_way(model, repair)
    if found is None:
        return None
    other, where = found
    return arguments.ArgumentRefused(
        "Monitor",
        "repair" if repair else "model",
        f"another Monitor is open on {where} (run_dir {other.run_dir}, repair="
        f"{other.repair}) and this one (run_dir {run_dir}) has repair={repair}: one "
        "open Monitor per model when either repairs (a repair changes weights the "
        "other record describes without a word in it, so its certificates and channel "
        "counts would no longer hold). close() the other Monitor first (or use each in "
        "a with block; a notebook cell run again leaves the one it made before open: run "
        "monitor.close() on it), or watch only, with repair=False on both. A Monitor no "
        "variable holds any more stays open while a traceback holds it: in a notebook, "
        "the last error's (sys.last_traceback) when a cell raised while it trained; this "
        "error replaces that one, so running this cell again finds the model free",
    )


def _folder(run_dir: Path) -> str:
    """``run_dir`` as one name for one folder (absolute, links resolved)."""
    return str(run_dir.resolve())


def _writing_to(folder: str) -> bool:
    """Whether an open Monitor of this process writes its record in ``folder``."""
    return any(other.folder == folder for other in _OPEN_ON_MODELS)


def _run_dir_refusal(run_dir: Path) -> arguments.ArgumentRefused | None:
    """The refusal (None: none) of a Monitor whose run_dir another open Monitor of this
    process writes to: its diary is locked until that one is closed. Said here, naming where
    the other one is, rather than by the diary writer's lock (``diary.writer.locked``,
    which knows no Monitor). A Monitor no one holds any more, kept only by a reference
    cycle (a traceback dropped since), is let go first by one ``gc.collect()``: before, the
    run_dir stayed locked until the garbage collector happened to run. A Monitor the
    script's or notebook's namespace holds is named by that variable, also when the last
    error's traceback holds it too (a training function it was passed to raised): running
    the cell again would not let it go."""
    folder = _folder(run_dir)
    if not _writing_to(folder):
        return None
    gc.collect()
    if not _writing_to(folder):
        return None
    variable = _held_by_main(folder)
    held = None if variable is not None else _held_by_last_error(folder)
    if held is not None:
        name, function, error = held
        where = (
            f"the variable {name!r} of {function}() holds it: {function}() raised "
            f"{error} (the last error) without closing it, and that error's traceback "
            "(sys.last_traceback) keeps its variables. This error replaces that traceback: "
            "run this cell again and that Monitor is let go (its record ends without "
            f"run_end, as after a crash) and this one continues the record. In {function}() "
            "use 'with Monitor(...) as monitor:' so that an error closes it, with run_end"
        )
    else:
        name = variable or "monitor"
        where = (
            "it was not closed (a notebook cell that makes a Monitor, run again, leaves the "
            "one it made before open: its variable still holds that one until this call "
            f"returns). Close it ({name}.close()), then make this one; or give a new run_dir"
        )
    return arguments.ArgumentRefused(
        "Monitor",
        "run_dir",
        f"another Monitor of this process is open on {run_dir} and writes its record there "
        f"(diary.jsonl is locked until it is closed): {where}",
    )


def _held_by_last_error(folder: str) -> tuple[str, str, str] | None:
    """Where an open Monitor writing to ``folder`` is a variable of a function the last
    error ended (a frame of ``sys.last_traceback``): the variable's name, the function's
    and the error's type. Names only: nothing of that Monitor is kept."""
    trace = getattr(sys, "last_traceback", None)
    error = type(getattr(sys, "last_value", None)).__name__
    while trace is not None:
        frame = trace.tb_frame
        if frame.f_locals is not frame.f_globals:  # (a module's variables are the user's)
            for name, value in frame.f_locals.items():
                on = getattr(getattr(value, "_held", None), "on_model", None)
                if isinstance(value, Monitor) and on is not None and on.folder == folder:
                    return name, frame.f_code.co_name, error
        trace = trace.tb_next
    return None


def _held_by_main(folder: str) -> str | None:
    """How the script's or notebook's own namespace (``__main__``) reaches an open Monitor
    writing to ``folder``: a variable's name, or ``Out[n]`` (IPython keeps a cell's shown
    value there); None when neither does. Names only: nothing of that Monitor is kept."""
    space = getattr(sys.modules.get("__main__"), "__dict__", {})

    def writes_there(value: Any) -> bool:
        on = getattr(getattr(value, "_held", None), "on_model", None)
        return isinstance(value, Monitor) and on is not None and on.folder == folder

    for name, value in list(space.items()):
        if not name.startswith("_") and writes_there(value):
            return name
    shown = space.get("Out")
    if isinstance(shown, dict):
        for number, value in list(shown.items()):
            if writes_there(value):
                return f"Out[{number}]"
    return None


@dataclass
class _Held:
    """What a Monitor holds in the process beyond its own objects: the check's global
    hooks, the compiler stance and its place on its model (the sinks' thread ends by
    itself when the Monitor's dispatcher is collected: see ``sinks._deliver``). A Monitor
    dropped without close() (a notebook cell that raised) gives them back when it is
    collected; before, its hooks measured every later forward pass and kept the model's
    modules alive, and compiled code anywhere in the process ran eagerly for good. (The
    diary writers close themselves.)"""

    stance: EagerStance
    unclosed: str | None = None  # the run folder, while the Monitor writes and is not closed
    structure_probe: StructureProbe | None = None
    activation_probe: ActivationProbe | None = None
    step_watch: StepWatch = field(default_factory=StepWatch)
    on_model: _OnModel | None = None  # in _OPEN_ON_MODELS while the Monitor is open

    def leave_model(self) -> None:
        """Take the Monitor off its model (see :func:`_alone_refusal`)."""
        if self.on_model is not None:
            with contextlib.suppress(ValueError):
                _OPEN_ON_MODELS.remove(self.on_model)
            self.on_model = None

    def release(self) -> None:
        """Remove the hooks, give the stance back, let the sinks' thread end; say so when the
        Monitor was never closed (dropped, or still open when the process ends)."""
        if self.unclosed is not None:
            LOGGER.warning(
                "trainrecord.Monitor: %s was not closed: its record has no run_end and no "
                "seal (trainrecord verify says 'no run_end yet'); call monitor.close() when "
                "training ends, also after an exception, or use 'with Monitor(...) as "
                "monitor:'",
                self.unclosed,
            )
            self.unclosed = None
        self.leave_model()
        for probe in (self.structure_probe, self.activation_probe):
            if probe is not None:
                probe.remove()
        self.structure_probe = self.activation_probe = None
        self.step_watch.remove()
        self.stance.exit()


def _check_options(
    *,
    check_every: Any,
    scaler: Any,
    repair: Any,
    repair_seed: Any,
    repair_patience: Any,
    repair_min_values: Any,
    silent_min_values: Any,
    callback: Any,
    sinks: Any,
    log: Any,
    tensorboard: Any,
    channel_list_limit: Any,
    warmup: Any,
    decay_ratio: Any,
    start_step: Any,
) -> None:
    """Refuse a Monitor option of the wrong type or out of its range, naming it (see
    :mod:`trainrecord.arguments`); before any file is made."""
    call = "Monitor"
    arguments.whole(call, "check_every", check_every, 1, fix="steps between checks, e.g. 50")
    arguments.whole(call, "start_step", start_step, 0, fix="the optimizer steps already taken")
    for name, value in (
        ("repair_patience", repair_patience),
        ("repair_min_values", repair_min_values),
        ("silent_min_values", silent_min_values),
    ):
        arguments.whole(call, name, value, 1)
    arguments.whole(call, "channel_list_limit", channel_list_limit, 0, fix="e.g. 16")
    arguments.whole(call, "warmup", warmup, 0, fix="checks before the first alarm, e.g. 5")
    arguments.real(
        call,
        "decay_ratio",
        decay_ratio,
        minimum=0.0,
        below=1.0,
        fix="a fraction of the layer's median channel scale, e.g. 1e-3",
    )
    arguments.flag(call, "repair", repair, "repair=True re-initialises stuck channels")
    arguments.flag(call, "log", log, "log=False keeps events out of the logger")
    if repair_seed is not None:
        arguments.whole(
            call,
            "repair_seed",
            repair_seed,
            -(2**63),
            2**64 - 1,
            "a seed for torch.Generator.manual_seed, or None for the global RNG",
        )
    if scaler is not None and not callable(getattr(scaler, "get_scale", None)):
        raise arguments.refuse(
            call,
            "scaler",
            "a torch.amp.GradScaler (an object with get_scale()) or None",
            scaler,
            "pass the GradScaler whose scale(loss) you call backward() on, or leave scaler "
            "out when training without loss scaling",
        )
    if callback is not None and not callable(callback):
        raise arguments.refuse(
            call,
            "callback",
            "a function called with every diary line (a dict), or None",
            callback,
            "e.g. callback=lambda line: print(line['event'])",
        )
    if sinks is not None and not isinstance(sinks, (list, tuple)):
        raise arguments.refuse(
            call,
            "sinks",
            "a list of sinks (objects with name, event(line) and metrics(row)) or None",
            sinks,
            "one sink is sinks=[sink]",
        )
    if tensorboard is not None:
        arguments.path(call, "tensorboard", tensorboard, "give TensorBoard's log folder")


def _check_optimizer_trains(
    model: nn.Module, optimizer: torch.optim.Optimizer | None, call: str = "Monitor"
) -> None:
    """Refuse an optimizer that updates parameters of modules (``nn.Parameter``) but none of
    the model's trainable ones: one built for another model, or for a copy of this one. A
    partial overlap is ordinary (frozen parts, several optimizers for parts of one model),
    and so is an optimizer of plain tensors only (a vmap ensemble's stacked parameters,
    master weights), whose training the check's ``no_gradients`` event explains."""
    if optimizer is None:
        return
    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    if _trains_none_of(optimizer, trainable):
        held = {id(p) for group in optimizer.param_groups for p in group["params"]}
        who = "Monitor's optimizer" if call == "Monitor" else "the optimizer"
        raise arguments.ArgumentRefused(
            call,
            "optimizer",
            f"{who} ({type(optimizer).__name__}, {len(held)} tensors) updates "
            f"none of the model's {len(trainable)} trainable parameters: it was built for "
            "another model, or for a copy of this one (copy.deepcopy, a model loaded or "
            "made again after the optimizer). Build the optimizer from this model's "
            "parameters (optimizer = SGD(model.parameters(), ...)), or give the Monitor "
            "the model this optimizer trains",
        )


def _learning_rates(optimizer: torch.optim.Optimizer | None) -> tuple[float, ...] | None:
    """The learning rate of each param group (the loss rule does not count a rise that came
    with a raised one as the loss's own); None when one is not a number (not known)."""
    rates: list[float] = []
    for group in getattr(optimizer, "param_groups", None) or []:
        lr = group.get("lr") if isinstance(group, dict) else None
        if isinstance(lr, torch.Tensor) and lr.numel() == 1:
            lr = lr.item()
        if isinstance(lr, bool) or not isinstance(lr, int | float) or not math.isfinite(lr):
            return None
        rates.append(float(lr))
    return tuple(rates) or None


def _trains_none_of(optimizer: torch.optim.Optimizer, trainable: set[int]) -> bool:
    """Whether ``optimizer`` updates parameters of modules (``nn.Parameter``) but none of
    ``trainable`` (the ids of the model's trainable parameters; none: every parameter
    frozen, which the Monitor says itself). An optimizer of plain tensors only (a vmap
    ensemble's stacked parameters, master weights) trains what the model computes with."""
    if not trainable:
        return False
    tensors = [p for group in optimizer.param_groups for p in group["params"]]
    return any(isinstance(p, nn.Parameter) for p in tensors) and trainable.isdisjoint(
        id(p) for p in tensors
    )


def _sigterm_stop(monitor: weakref.ref[Monitor]) -> sigterm.Stop:
    """The Monitor's part in a SIGTERM, holding it weakly (a dropped Monitor is collected)."""

    def begin() -> None:
        held = monitor()
        if held is not None:
            held._sigterm()

    def busy() -> bool:
        held = monitor()
        return held is not None and held._busy > 0

    return sigterm.Stop(begin, busy=busy)


def _reached(loss: torch.Tensor | None, walked: set[int] | None) -> set[int] | None:
    """The ids of the parameters the check step's backward could reach: those the loss
    tensor's graph reaches, or, for a loss given as a number or detached, ``walked`` (those
    the graphs of the forward passes' outputs reach; None: not walked, not known)."""
    if loss is not None and loss.grad_fn is not None:
        return set(graph_leaves(loss.grad_fn))
    return walked


def _reaches(node: Any, params: set[int]) -> bool:
    """Whether the autograd graph from ``node`` (a loss's ``grad_fn``) reaches a parameter
    whose id is in ``params`` (its AccumulateGrad node)."""
    return any(leaf in params for leaf in graph_leaves(node))


def _wait_for_sinks(wait: Callable[[float], None], timeout: float) -> BaseException | None:
    """Wait for the sinks (``flush`` or ``close``) at most ``timeout`` seconds; a Ctrl+C
    stops the wait only, and is returned."""
    try:
        wait(timeout)
    except KeyboardInterrupt as exc:
        return exc
    return None


def ended_by(error: BaseException) -> dict[str, str]:
    """``run_end.error``: the exception's class name and message (at most 500 characters;
    text that cannot go into UTF-8, a lone surrogate, replaced, so run_end is always
    written)."""
    try:
        message = str(error)
    except Exception:  # a __str__ that raises: the type still says what ended the run
        message = ""
    message = message[:500].encode("utf-8", "replace").decode("utf-8")
    return {"type": type(error).__name__ or "Exception", "message": message}


def to_host(parts: list[torch.Tensor | None]) -> list[torch.Tensor | None]:
    """The tensors in ``parts`` on the host, flattened, read back in one transfer (one
    synchronisation on a GPU); None stays None. Parts on a device are joined for the
    transfer, their dtypes promoted together (exact: float16 and float32 values widen
    without change); parts already on the host are returned as they are, flattened."""
    present = [p.reshape(-1) for p in parts if p is not None]
    if not present:
        return list(parts)
    if all(p.device.type == "cpu" for p in present):  # nothing to transfer
        pieces = iter(present)
    else:
        device = next(p.device for p in present if p.device.type != "cpu")
        present = [p.to(device) for p in present]
        joined = (torch.cat(present) if len(present) > 1 else present[0]).cpu()
        pieces = iter(joined.split([p.numel() for p in present]))
    return [None if p is None else next(pieces) for p in parts]
