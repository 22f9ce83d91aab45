"""The training loop: config validation, determinism, snapshots, pause / resume / stop, that it learns."""

from __future__ import annotations

import math
import queue
import threading
import time

import numpy as np
import pytest
import torch
from torch import nn

from engine.records import Tokens
from engine.traces import TrainingSnapshot
from engine.traces.attention import AttentionTrace
from engine.training.loop import TrainConfig, TrainingControl, make_model, train
from engine.training.tasks import make_task

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TINY = dict(d_model=32, n_heads=2, n_layers=2, d_mlp=64)


def tiny_run(task_name: str = "previous-token", seed: int = 0, **config) -> list[TrainingSnapshot]:
    task = make_task(task_name, length=6)
    model = make_model(task, seed=seed, **TINY)
    settings = dict(steps=20, batch_size=16, snapshot_every=5, warmup=5, eval_batch_size=32, seed=seed, device="cpu")
    settings.update(config)
    return list(train(model, task, TrainConfig(**settings)))


# ---- TrainConfig -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value",
    [
        ("steps", 0),
        ("steps", -5),
        ("steps", 2.5),
        ("batch_size", 0),
        ("snapshot_every", -1),
        ("lr", float("nan")),
        ("lr", float("inf")),
        ("lr", 0.0),
        ("lr", -1e-3),
        ("warmup", -1),
        ("weight_decay", float("nan")),
        ("weight_decay", -0.1),
        ("grad_clip", float("inf")),
        ("grad_clip", 0.0),
        ("seed", -1),
        ("seed", True),
        ("device", "tpu"),
        ("min_lr_ratio", 1.5),
    ],
)
def test_train_config_rejects(field, value):
    with pytest.raises(ValueError, match=f"TrainConfig: {field} must be"):
        TrainConfig(**{field: value})


def test_train_config_lists_every_problem():
    with pytest.raises(ValueError) as err:
        TrainConfig(steps=0, lr=float("nan"))
    assert "steps must be" in str(err.value) and "lr must be" in str(err.value)


def test_lr_schedule_warmup_then_cosine():
    cfg = TrainConfig(steps=110, warmup=10, lr=1e-2, min_lr_ratio=0.1)
    assert cfg.lr_at(0) == pytest.approx(1e-3)
    assert cfg.lr_at(9) == pytest.approx(1e-2)
    assert cfg.lr_at(10) == pytest.approx(1e-2)
    assert cfg.lr_at(60) == pytest.approx(1e-2 * (0.1 + 0.9 * 0.5))
    assert cfg.lr_at(110) == pytest.approx(1e-3)
    lrs = [cfg.lr_at(s) for s in range(10, 110)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:]))
    assert TrainConfig(steps=5, warmup=0).lr_at(0) == pytest.approx(TrainConfig().lr)


def test_cuda_without_gpu_is_a_readable_error():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    task = make_task("copy", length=3)
    with pytest.raises(ValueError, match="no CUDA GPU"):
        next(train(make_model(task, **TINY), task, TrainConfig(device="cuda")))


# ---- snapshots and determinism -----------------------------------------------------------------------


def test_snapshots_contents():
    snaps = tiny_run(steps=12, snapshot_every=5)
    assert [s.step for s in snaps] == [0, 5, 10, 12]
    assert [s.final for s in snaps] == [False, False, False, True]
    assert not any(s.stopped for s in snaps)
    first, last = snaps[0], snaps[-1]
    assert first.tokens_per_s == 0.0 and first.elapsed_s == 0.0 and first.loss == first.eval_loss
    assert all(s.total_steps == 12 and s.device == "cpu" for s in snaps)
    assert all(b.elapsed_s > a.elapsed_s for a, b in zip(snaps, snaps[1:]))
    assert all(s.tokens_per_s > 0 for s in snaps[1:])
    for s in snaps:
        assert math.isfinite(s.loss) and math.isfinite(s.eval_loss)
        assert 0.0 <= s.metric <= 1.0 and 0.0 <= s.token_accuracy <= 1.0
        assert s.lr > 0 and s.metric_name == "exact match"
        tr = s.probe_trace
        assert isinstance(tr, AttentionTrace)
        assert tr.n_queries == 7 and tr.n_layers == 2 and tr.n_heads == 2 and tr.causal
        assert tr.tokens.strings[0] == "<bos>"
        np.testing.assert_allclose(tr.pattern(0).sum(axis=-1), 1.0, atol=1e-5)
    # the probe trace follows the weights: it changes as the model learns
    assert not np.allclose(first.probe_trace.q(0), last.probe_trace.q(0))


def test_same_seed_same_losses():
    a = tiny_run(seed=3)
    b = tiny_run(seed=3)
    c = tiny_run(seed=4)
    assert [s.loss for s in a] == [s.loss for s in b]
    assert [s.metric for s in a] == [s.metric for s in b]
    np.testing.assert_array_equal(a[-1].probe_trace.k(1), b[-1].probe_trace.k(1))
    assert [s.loss for s in a] != [s.loss for s in c]


def test_make_model_is_seeded_and_leaves_global_rng_alone():
    task = make_task("copy")
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = make_model(task, seed=1)
    b = make_model(task, seed=1)
    assert torch.equal(torch.rand(3), expected)
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values()))
    assert a.cfg.vocab_size == len(task.vocab) and a.cfg.max_len == task.seq_len


def test_it_learns_previous_token():
    snaps = tiny_run("previous-token", steps=200, snapshot_every=100, warmup=20, batch_size=32, lr=1e-2)
    assert snaps[-1].eval_loss < 0.25 * snaps[0].eval_loss, [s.eval_loss for s in snaps]
    assert snaps[-1].token_accuracy > 0.9


def test_model_is_left_in_eval_mode():
    task = make_task("copy", length=3)
    model = make_model(task, **TINY)
    gen = train(model, task, TrainConfig(steps=3, snapshot_every=1, device="cpu", eval_batch_size=8))
    next(gen)
    next(gen)
    assert model.training
    gen.close()
    assert not model.training


# ---- model-agnostic ----------------------------------------------------------------------------------


class Bigram(nn.Module):
    """Not our Transformer: ``model(inputs) -> logits`` is all the loop needs."""

    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.table(tokens)  # (B, T, V)


def uniform_trace(model: nn.Module, token_ids: list[int], tokens: Tokens) -> AttentionTrace:
    n = len(token_ids)
    zeros = np.zeros((1, n, 2), dtype=np.float32)
    return AttentionTrace("bigram", "decoder", tokens, tokens, (zeros,), (zeros,), (zeros,), (1.0,), causal=True)


def test_any_model_with_a_trace_fn():
    task = make_task("previous-token", length=5)
    cfg = TrainConfig(steps=10, snapshot_every=5, device="cpu", eval_batch_size=16)
    snaps = list(train(Bigram(len(task.vocab)), task, cfg, trace_fn=uniform_trace))
    assert [s.step for s in snaps] == [0, 5, 10]
    assert snaps[-1].probe_trace.model_id == "bigram"
    with pytest.raises(TypeError, match="pass trace_fn"):
        next(train(Bigram(len(task.vocab)), task, cfg))


def test_logits_of_the_wrong_shape_are_a_readable_error():
    task = make_task("copy", length=3)
    narrow = nn.Embedding(len(task.vocab), 3)  # (B, T) -> (B, T, 3): fewer logits than tokens
    with pytest.raises(
        ValueError, match=r"logits of shape \(256, 8, 3\); the copy task needs \(256, 8, V\) with V ≥ 21"
    ):
        next(train(narrow, task, TrainConfig(device="cpu"), trace_fn=uniform_trace))


# ---- pause / resume / stop from another thread -------------------------------------------------------


class Runner:
    """Consumes ``train`` in a background thread, as the Train page will."""

    def __init__(self, control: TrainingControl) -> None:
        task = make_task("previous-token", length=4)
        model = make_model(task, d_model=16, n_heads=2, n_layers=1, d_mlp=32)
        cfg = TrainConfig(steps=100_000, batch_size=4, snapshot_every=1, eval_batch_size=4, device="cpu")
        self.snaps: queue.Queue[TrainingSnapshot] = queue.Queue()
        self.all: list[TrainingSnapshot] = []
        self.thread = threading.Thread(target=self._run, args=(model, task, cfg, control), daemon=True)
        self.thread.start()

    def _run(self, model, task, cfg, control) -> None:
        for snap in train(model, task, cfg, control):
            self.snaps.put(snap)

    def wait_for(self, n: int, timeout: float = 10.0) -> None:
        for _ in range(n):
            self.all.append(self.snaps.get(timeout=timeout))

    def settle(self, quiet: float = 0.3, limit: float = 10.0) -> int:
        """Collect snapshots until none came for ``quiet`` seconds (the step under way has finished)."""
        end = time.monotonic() + limit
        while time.monotonic() < end:
            try:
                self.all.append(self.snaps.get(timeout=quiet))
            except queue.Empty:
                return len(self.all)
        raise AssertionError(f"snapshots kept coming for {limit} s")

    def drain(self) -> int:
        while not self.snaps.empty():
            self.all.append(self.snaps.get_nowait())
        return len(self.all)


def test_pause_resume_stop_from_another_thread():
    control = TrainingControl()
    runner = Runner(control)
    runner.wait_for(3)
    control.pause()
    assert control.is_paused
    paused_at = runner.settle()  # the step under way may finish and yield once more
    time.sleep(0.5)
    assert runner.drain() == paused_at, "the loop took steps while paused"
    assert runner.thread.is_alive()
    control.resume()
    assert not control.is_paused
    runner.wait_for(3)  # it goes on
    control.stop()
    runner.thread.join(timeout=10)
    assert not runner.thread.is_alive()
    runner.drain()
    last = runner.all[-1]
    assert last.final and last.stopped and last.step < last.total_steps
    steps = [s.step for s in runner.all]
    assert steps[:-1] == list(range(len(steps) - 1)), "one snapshot per step, none lost"
    assert steps[-1] in (steps[-2], steps[-2] + 1)


def test_stop_while_paused_ends_with_a_final_snapshot():
    control = TrainingControl()
    runner = Runner(control)
    runner.wait_for(2)
    control.pause()
    runner.settle()
    control.stop()
    assert control.is_stopped and not control.is_paused
    runner.thread.join(timeout=5)
    assert not runner.thread.is_alive()
    runner.drain()
    assert runner.all[-1].final and runner.all[-1].stopped
    assert sum(s.final for s in runner.all) == 1


def test_wait_if_paused():
    control = TrainingControl()
    assert control.wait_if_paused(0)
    control.pause()
    t0 = time.perf_counter()
    assert not control.wait_if_paused(0.05)
    assert time.perf_counter() - t0 >= 0.04
    threading.Timer(0.05, control.resume).start()
    assert control.wait_if_paused(5)
    control.pause()
    threading.Timer(0.05, control.stop).start()
    assert not control.wait_if_paused(5)  # woken by stop, and told not to go on
    control.pause()  # no effect after stop
    assert not control.is_paused and control.is_stopped
