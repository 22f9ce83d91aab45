"""What the engine hands out: traces, plain data (numpy arrays and Python values), one module per kind.

No torch tensors or modules cross this line, so traces pickle cheaply (the app's caches, the prefetch
child's pipe) and can be used from a notebook without the model. Each kind lives next to the code that
reads it:

- :mod:`engine.traces.attention`: :class:`~engine.traces.attention.AttentionTrace`, one block of heads over
  a sequence (every text model, a ViT's patches, a captioner's cross-attention), with
  :mod:`engine.traces.overview` for long inputs;
- :mod:`engine.traces.seq2seq`: an encoder-decoder's three blocks; :mod:`engine.traces.alignment`: an RNN's
  additive attention; :mod:`engine.traces.vision`: a ViT's image and a Swin's windows;
  :mod:`engine.traces.caption`: the captioners'.

Every kind follows :class:`Trace`, so pages ask a trace instead of testing its type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from engine.records import Family
from engine.traces.attention import AttentionTrace


@runtime_checkable
class Trace(Protocol):
    """What every trace type has, so pages and services ask instead of testing types.

    :class:`AttentionTrace`, ``Seq2SeqTrace``, ``AlignmentTrace``, ``VisionTrace``, ``WindowTrace``,
    ``CaptionTrace`` and ``PatchCaptionTrace`` all follow it; a new family's trace type must too
    (``tests/unit/test_trace_protocol.py``).

    Attributes:
        model_id: the id the model was loaded with.
        family: the model family.
        device: where the forward pass ran ("cpu", "cuda").
        notices: sentences for the UI.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def family(self) -> Family: ...

    @property
    def device(self) -> str: ...

    @property
    def notices(self) -> tuple[str, ...]: ...

    def attention_blocks(self) -> dict[str, AttentionTrace]:
        """``{name: AttentionTrace}`` for each block of transformer heads (``"self"``; or ``"encoder"``,
        ``"decoder"``, ``"cross"``); empty when the model has no Q/K heads (RNN attention)."""
        ...


@dataclass(frozen=True, eq=False)
class TrainingSnapshot:
    """What a training run looks like at one moment; yielded by ``engine.training.train``.

    Plain data (the probe trace holds numpy arrays), so a page can keep a list of snapshots and
    redraw curves and heatmaps from them while the run goes on in another thread.

    Attributes:
        step: optimizer updates done so far (0 = before training).
        total_steps: updates the run was configured for (a progress bar's maximum).
        loss: mean training loss over the steps since the previous snapshot (at step 0, and when no
            step ran since the previous snapshot, the loss on the fixed evaluation batch).
        eval_loss: loss on the fixed evaluation batch.
        metric: the task's metric on the fixed evaluation batch (``metric_name``; exact match for
            the toy tasks: the fraction of sequences with every answer token right).
        token_accuracy: fraction of answer tokens predicted right on the evaluation batch.
        lr: learning rate of the last step (of the first step at step 0).
        tokens_per_s: training throughput since the previous snapshot (0.0 at step 0).
        elapsed_s: training wall time so far, paused time and snapshot time excluded.
        probe_trace: attention of the current model on the task's fixed probe input.
        device: where the model trains ("cpu", "cuda").
        metric_name: what ``metric`` measures, for labels.
        final: True for the last snapshot of a run.
        stopped: True when the run ended early because it was asked to stop.
    """

    step: int
    total_steps: int
    loss: float
    eval_loss: float
    metric: float
    token_accuracy: float
    lr: float
    tokens_per_s: float
    elapsed_s: float
    probe_trace: AttentionTrace | None
    device: str = "cpu"
    metric_name: str = "exact match"
    final: bool = False
    stopped: bool = False
