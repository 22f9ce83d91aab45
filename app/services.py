"""The only app module that touches the engine's loading and tracing, behind Streamlit caches.

- ``get_model``: ``st.cache_resource`` around ``engine.load`` — one read-only model per id, shared
  by every session (never trained, moved or re-configured here).
- ``get_trace``: ``st.cache_data`` around ``engine.trace`` — keyed by plain values, returns a
  picklable ``AttentionTrace`` of numpy arrays.

Torch work is bounded for a shared 2-core classroom server: one intra-op thread per job and at
most ``MAX_JOBS`` forward passes at once.
"""

from __future__ import annotations

import logging
import threading

import numpy as np
import streamlit as st

import engine
import engine.registry
from engine import AttentionTrace, EngineError, ModelSpec, VisionTrace
from engine.analysis import vision as _vision

log = logging.getLogger(__name__)

MAX_JOBS = 2
_jobs = threading.BoundedSemaphore(MAX_JOBS)
_threads_set = False


def _bound_threads() -> None:
    global _threads_set
    if not _threads_set:
        engine.set_threads(1)
        _threads_set = True


@st.cache_data(show_spinner=False, ttl=60)
def list_models() -> tuple[ModelSpec, ...]:
    """The model catalog (offline models first)."""
    return engine.list_models()


@st.cache_resource(show_spinner=False, max_entries=4)
def _shared_model(model_id: str):
    _bound_threads()
    return engine.load(model_id)


def get_model(model_id: str):
    """Load a model once per server process; shared, read-only. A model this session trained on the
    Train page is returned from the runtime registry instead (never cached, never shared)."""
    trained = engine.registry.runtime_model(model_id, session_id())
    return trained if trained is not None else _shared_model(model_id)


@st.cache_data(show_spinner=False, max_entries=64, ttl=3600)
def get_trace(model_id: str, text: str, causal: bool | None, max_tokens: int) -> AttentionTrace:
    """Trace ``text`` through the cached model (same arguments → same cached trace)."""
    model = get_model(model_id)
    with _jobs:
        return engine.trace(model, text, causal=causal, max_tokens=max_tokens)


@st.cache_resource(show_spinner=False)
def device_label() -> str:
    """Where forward passes run, for the sidebar."""
    return engine.device_name()


def friendly_error(err: BaseException) -> str:
    """A message for the UI: engine errors as written, anything else as one calm sentence."""
    if isinstance(err, EngineError):
        return str(err)
    log.exception("unexpected error", exc_info=err)
    return f"Something went wrong while computing this ({type(err).__name__}). Try a shorter text or another model."


def warm_up() -> None:
    """Import torch and transformers in the background so the first trace does not wait for them."""

    def work() -> None:
        try:
            from engine.pretrained.hf_api import hf

            hf()  # imports torch and transformers under the engine's import lock
        except Exception:  # warm-up is best effort
            log.debug("warm-up import failed", exc_info=True)

    if not getattr(warm_up, "_started", False):
        warm_up._started = True  # type: ignore[attr-defined]
        threading.Thread(target=work, name="warm-up", daemon=True).start()


# ---------------------------------------------------------------- Heads: ablation panel


@st.cache_data(show_spinner=False, max_entries=16, ttl=3600)
def get_head_layout(model_id: str) -> dict[str, tuple[int, int]]:
    """``{block: (n_layers, n_heads)}`` of a model that head ablation supports.

    Raises:
        EngineError: the model family has no head ablation (RNN attention, ViT).
    """
    from engine.analysis.ablation import head_layout

    return head_layout(get_model(model_id))


@st.cache_data(show_spinner=False, max_entries=128, ttl=3600)
def get_ablation(
    model_id: str,
    text: str,
    heads: tuple[tuple[str, int, int | None], ...],
    causal: bool | None,
    max_tokens: int,
    keep_only: bool = False,
):
    """``engine.analysis.ablation.ablate`` on the cached model (an ``AblationResult``, plain data).

    Args:
        heads: a sorted tuple of ``(block, layer, head)`` (``head=None``: the whole layer), hashable
            so that the same selection hits the cache.
    """
    from engine.analysis.ablation import ablate

    model = get_model(model_id)
    with _jobs:
        return ablate(model, text, heads, causal=causal, max_tokens=max_tokens, keep_only=keep_only)


# ---------------------------------------------------------------- Bahdanau attention
# The RNN translators (additive / dot attention) and the transformer translator, for app/views/bahdanau.py.

BAHDANAU_MODELS = {"additive": "bahdanau-translator", "dot": "luong-translator"}
TRANSFORMER_TRANSLATOR = "tiny-translator"
BAHDANAU_MAX_TOKENS = 32  # the RNN translators read at most 32 source tokens


@st.cache_data(show_spinner=False, max_entries=64, ttl=3600)
def bahdanau_trace(model_id: str, text: str):
    """``engine.trace`` of an RNN translator (``AlignmentTrace``) or of tiny-translator (``Seq2SeqTrace``)."""
    return get_trace(model_id, text, None, BAHDANAU_MAX_TOKENS)


@st.cache_data(show_spinner=False, max_entries=4)
def bahdanau_parameters(model_id: str):
    """The attention weights (W, U, v or W_h) of an RNN translator, as numpy."""
    from engine.analysis.bahdanau_steps import attention_parameters

    return attention_parameters(get_model(model_id))


@st.cache_data(show_spinner=False, max_entries=256, ttl=3600)
def bahdanau_step(model_id: str, text: str, step: int):
    """Every number of one decoding step (``StepBreakdown``), recomputed in numpy from the model's weights."""
    from engine.analysis.bahdanau_steps import step_breakdown

    return step_breakdown(bahdanau_parameters(model_id), bahdanau_trace(model_id, text), step)


@st.cache_data(show_spinner=False, max_entries=64, ttl=3600)
def bahdanau_agreement(model_id: str, text: str):
    """``(Agreement | None, why not)``: attention argmax vs the grammar's gold alignment for this sentence."""
    from engine.analysis.bahdanau_steps import trace_agreement

    return trace_agreement(bahdanau_trace(model_id, text))


@st.cache_data(show_spinner=False, max_entries=4)
def bahdanau_disagreement(model_id: str):
    """A grammar sentence where the model's attention and the gold alignment differ (searched once), or None."""
    from engine.analysis.bahdanau_steps import find_disagreement

    model = get_model(model_id)
    with _jobs:
        return find_disagreement(model)


@st.cache_data(show_spinner=False, max_entries=64)
def bahdanau_reference(text: str):
    """The toy grammar's reference (``Reference``) of a source sentence or date."""
    from engine.analysis.toy_grammar import reference

    return reference(text)


@st.cache_data(show_spinner=False)
def bahdanau_vocabulary() -> dict[str, list[str]]:
    """The translators' source words by kind, and the example sentences."""
    from engine.analysis.toy_grammar import EXAMPLES, vocabulary_by_kind

    return {"examples": list(EXAMPLES), **vocabulary_by_kind()}


# ---------------------------------------------------------------- Vision Transformer
# Images in (samples, validated uploads), one cached trace per (model, image), and the page's
# analyses as plain numpy / dataclasses from engine.analysis.vision.


@st.cache_data(show_spinner=False, max_entries=32)
def vit_sample(source: str, name: str) -> np.ndarray:
    """A bundled sample: ``source`` digit (``name`` = index), shape or photo (``name`` = its name)."""
    from engine import samples

    if source == "digit":
        return samples.digit(int(name))[0]
    if source == "shape":
        return samples.shape(name)
    if source == "photo":
        return samples.photo(name)
    raise EngineError(f"Unknown sample source {source!r}.")


def vit_digit_label(index: int) -> int:
    """The true label of digit sample ``index``."""
    from engine import samples

    return samples.digit(index)[1]


@st.cache_data(show_spinner=False, max_entries=16, ttl=3600)
def vit_read_upload(data: bytes) -> tuple[np.ndarray, tuple[str, ...]]:
    """Validate and decode uploaded bytes in the engine (Pillow sniffs the content; nothing on disk).

    Raises:
        engine.images.ImageError: with a message for the user.
    """
    from engine.images import read_image

    decoded = read_image(data)
    return decoded.pixels, decoded.notices


@st.cache_data(show_spinner=False, max_entries=16, ttl=3600)  # ViT-B/16: ~5 MB of Q/K/V per trace
def get_vision_trace(model_id: str, image: np.ndarray) -> VisionTrace:
    """Classify ``image`` with the cached model and capture its attention."""
    model = get_model(model_id)
    with _jobs:
        return engine.trace(model, image)


def vit_cls_maps(trace: VisionTrace, layer: int) -> np.ndarray:
    """[CLS]'s attention to every patch for every head of ``layer``: ``[head, rows, cols]``."""
    return _vision.cls_map(trace, layer)


def vit_patch_map(trace: VisionTrace, layer: int, head: int, patch: int) -> np.ndarray:
    """Patch ``patch``'s attention to every patch: ``[rows, cols]``."""
    return _vision.patch_map(trace, layer, head, patch)


@st.cache_data(show_spinner=False, max_entries=64, ttl=3600)
def vit_rollout_map(model_id: str, image: np.ndarray, fusion: str, discard: float) -> np.ndarray:
    """[CLS]'s row of the attention rollout through all layers: ``[rows, cols]`` (cached: for ViT-B it
    computes 12 layers × 12 heads of 197² weights, seconds on a busy 2-core server)."""
    return _vision.rollout_map(get_vision_trace(model_id, image), head_fusion=fusion, discard_ratio=discard)


def vit_last_layer_map(trace: VisionTrace, fusion: str) -> np.ndarray:
    """[CLS]'s raw attention in the last layer, heads fused the same way as the rollout: ``[rows, cols]``."""
    from engine.analysis.rollout import fuse_heads

    return _vision.to_grid(trace, fuse_heads(trace.attention.pattern(trace.attention.n_layers - 1), fusion)[0])


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def vit_occlusion(model_id: str, image: np.ndarray, k: int, fusion: str, discard: float, seed: int = 0):
    """Hide the k patches the rollout ranks highest (vs k random, k lowest) and re-classify."""
    trace = get_vision_trace(model_id, image)
    ranking = vit_rollout_map(model_id, image, fusion, discard)
    with _jobs:
        return _vision.occlusion_check(get_model(model_id), trace, ranking, k, seed=seed)


# ---------------------------------------------------------------- positional encodings


@st.cache_data(show_spinner=False, max_entries=32)
def pos_sinusoidal(n_pos: int, d_model: int):
    """The sinusoidal table ``[n_pos, d_model]``, its dot-product similarity, and that matrix's
    largest spread along a diagonal (0 = depends on ``|p − q|`` only)."""
    from engine.analysis import positional

    table = positional.sinusoidal_table(n_pos, d_model)
    sim = positional.similarity(table, "dot")
    return table, sim, positional.by_offset_spread(sim)


@st.cache_data(show_spinner=False, max_entries=32)
def pos_shift_check(n_pos: int, d_model: int, k: int):
    """``engine.analysis.positional.shift_check``: PE(pos + k) against R_k · PE(pos)."""
    from engine.analysis import positional

    return positional.shift_check(n_pos, d_model, k)


@st.cache_data(show_spinner=False, max_entries=8)
def pos_learned_table(model_id: str):
    """A loaded model's position table (``PositionTable``) and its cosine similarity."""
    from engine.analysis import positional

    table = positional.position_table(get_model(model_id))
    return table, positional.similarity(table.values, "cosine")


@st.cache_data(show_spinner=False, max_entries=32)
def pos_rope(d_head: int, offset: int, seed: int, n_pos: int, starts: tuple[int, ...]):
    """RoPE demo data: ``(q, k, rotated q [n_pos, d], rotated k [n_pos, d], thetas, relative scores)``."""
    import numpy as np

    from engine.analysis import positional

    q, k = positional.rope_example_vectors(d_head, seed)
    positions = np.arange(n_pos)
    scores = positional.rope_relative_scores(q, k, offset, np.array(starts), base=10000.0)
    return (q, k, positional.rope_rotate(q, positions), positional.rope_rotate(k, positions),
            positional.rope_thetas(d_head), scores)  # fmt: skip


@st.cache_data(show_spinner=False, max_entries=32)
def pos_alibi(n_heads: int, n_pos: int):
    """ALiBi ``(slopes [H], bias [H, n, n])``."""
    from engine.analysis import positional

    return positional.alibi(n_heads, n_pos)


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def pos_order_blindness(text: str, seed: int, max_tokens: int):
    """``engine.analysis.order_blindness.order_blindness`` on fresh copies of tiny-gpt-stories."""
    from engine.analysis.order_blindness import order_blindness

    _bound_threads()
    with _jobs:
        return order_blindness(text, seed=seed, max_tokens=max_tokens)


# ---------------------------------------------------------------- Step by step
# One query row of one head is O(n · d_head) on top of the cached trace, and the calculator's
# tables are at most 5 × 4: neither is worth a cache entry (pickling would cost more than the math).

def query_steps(trace: AttentionTrace, layer: int, head: int, query: int):
    """Every step of attention for one query token of one head (``engine.analysis.stepwise``)."""
    from engine.analysis import stepwise

    return stepwise.query_steps(trace, layer, head, query)


def calculator_example(n_tokens: int, width: int):
    """Default tokens, Q, K, V for the calculator: ``(tokens, Q, K, V)``."""
    from engine.analysis import stepwise

    return stepwise.calculator_example(n_tokens, width)


def calculator_matrix(data, name: str, shape: tuple[int, int]):
    """A typed table as a validated float matrix; raises ``EngineError`` with a message for the user."""
    from engine.analysis import stepwise

    return stepwise.to_matrix(data, name, shape)


def calculator_steps(q, k, v, scale: float, causal: bool):
    """Attention on the calculator's own Q, K, V with every step kept."""
    from engine.analysis import stepwise

    return stepwise.attention_steps(q, k, v, scale, causal)


# ---------------------------------------------------------------- Heads
# Whole-model views for the Heads page: every layer × head from one cached trace. Arguments are
# plain values (model_id, text, causal, max_tokens, block) so results are cached per view.

#: attention blocks of an encoder-decoder trace; "self" is the only block of encoder/decoder traces
HEAD_BLOCKS: dict[str, str] = {
    "encoder": "Encoder self-attention",
    "decoder": "Decoder self-attention",
    "cross": "Cross-attention",
}
SIMILARITY_MAX_TOKENS = 64  # JS divergence on at most 64 query rows × 64 key bins
SIMILARITY_MAX_HEADS = 192  # e.g. 16 layers × 12 heads; larger models: the first layers
MODEL_VIEW_CELLS = 64  # thumbnails pooled to at most this many cells per side (32 above 36 heads)


def attention_block(trace, block: str = "self") -> AttentionTrace:
    """The AttentionTrace of ``block`` (``"self"`` for encoder/decoder traces; encoder|decoder|cross for seq2seq)."""
    if isinstance(trace, engine.Seq2SeqTrace):
        if block not in HEAD_BLOCKS:
            raise EngineError(f"Pick one of {', '.join(HEAD_BLOCKS.values())}.")
        return getattr(trace, block)
    if not isinstance(trace, AttentionTrace):
        raise EngineError("This model has no transformer attention heads to show here.")
    return trace


def heads_attention(model_id: str, text: str, causal: bool | None, max_tokens: int, block: str) -> AttentionTrace:
    """The cached trace's attention block (no extra forward pass)."""
    return attention_block(get_trace(model_id, text, causal, max_tokens), block)


def block_is_square(block: str) -> bool:
    """Self-attention (queries and keys are one sequence); False for cross-attention."""
    return block != "cross"


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def head_metrics_table(model_id: str, text: str, causal: bool | None, max_tokens: int, block: str) -> "pd.DataFrame":
    """One row per head: layer, head, label, score and every metric of ``engine.analysis.metrics``."""
    import pandas as pd

    from engine.analysis import metrics as M

    att = heads_attention(model_id, text, causal, max_tokens, block)
    square = block_is_square(block)
    blocked = np.isneginf(att.mask(0))
    sinks = M.sink_positions(att.key_tokens.special)
    per_layer = [M.head_metrics(att.pattern(layer), sinks, blocked=blocked, square=square)
                 for layer in range(att.n_layers)]  # one layer at a time: bounded memory on long inputs
    values = {name: np.stack([m[name] for m in per_layer]) for name in per_layer[0]}
    labels, scores = M.label_heads(values)
    layers, heads = np.meshgrid(np.arange(att.n_layers), np.arange(att.n_heads), indexing="ij")
    frame = pd.DataFrame({
        "layer": layers.ravel(), "head": heads.ravel(),
        "pattern": labels.ravel().astype(str), "score": scores.ravel(),
    })
    for name in ("entropy", "entropy_bits", "broad", "mean_distance", "sink", "previous", "self", "next", "alignment"):
        frame[name] = values[name].ravel()
    frame = frame.drop(columns=list(M.CROSS_ONLY if square else M.SQUARE_ONLY))  # n/a for this block
    return frame


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def model_view_tiles(model_id: str, text: str, causal: bool | None, max_tokens: int, block: str) -> tuple[np.ndarray, bool]:
    """Every head's pattern pooled to block maxima ``[layer, head, s, t]`` (s, t ≤ the cell cap) and whether it was pooled."""
    from app.components.heatmap import pool_max

    att = heads_attention(model_id, text, causal, max_tokens, block)
    cells = MODEL_VIEW_CELLS if att.n_layers * att.n_heads <= 36 else MODEL_VIEW_CELLS // 2
    tiles = np.stack([np.stack([pool_max(p, cells) for p in att.pattern(layer)]) for layer in range(att.n_layers)])
    return tiles.astype(np.float32), tiles.shape[-2:] != (att.n_queries, att.n_keys)


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def head_similarity(model_id: str, text: str, causal: bool | None, max_tokens: int, block: str
                    ) -> tuple[np.ndarray, np.ndarray, bool, int]:
    """``(divergence [N, N], clustering order, coarsened, layers used)`` over heads flattened layer-major.

    At most ``SIMILARITY_MAX_HEADS`` heads (whole layers from the first) and ``SIMILARITY_MAX_TOKENS``
    query rows × key bins enter the comparison.
    """
    from engine.analysis.similarity import cluster_order, coarsen, head_divergence

    att = heads_attention(model_id, text, causal, max_tokens, block)
    n_layers = min(att.n_layers, max(1, SIMILARITY_MAX_HEADS // att.n_heads))
    pieces = [coarsen(att.pattern(layer), SIMILARITY_MAX_TOKENS, SIMILARITY_MAX_TOKENS) for layer in range(n_layers)]
    small = np.concatenate([piece for piece, _ in pieces])  # [n_layers · n_heads, ≤64, ≤64], layer-major
    coarsened = pieces[0][1]
    divergence = head_divergence(small)
    return divergence, cluster_order(divergence), coarsened, n_layers


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def rollout_maps(model_id: str, text: str, causal: bool | None, max_tokens: int, block: str,
                 head_fusion: str, discard_ratio: float) -> tuple[np.ndarray, np.ndarray]:
    """``(rollout [layer, n, n], fused [layer, n, n])`` of a self-attention block.

    ``rollout[l]`` is the rollout through layers 0..l; ``fused[l]`` is layer l's raw attention with its
    heads fused the same way (no residual, nothing discarded).
    """
    from engine.analysis.rollout import fuse_heads, rollout

    if not block_is_square(block):
        raise EngineError("Rollout needs self-attention: cross-attention has no path from layer to layer.")
    att = heads_attention(model_id, text, causal, max_tokens, block)
    layers = [att.pattern(layer) for layer in range(att.n_layers)]
    maps = rollout(layers, head_fusion=head_fusion, discard_ratio=float(discard_ratio))
    fused = np.stack([fuse_heads(p, head_fusion) for p in layers]).astype(np.float32)
    return maps, fused


# ---------------------------------------------------------------- bertviz views


def get_digit_trace(model_id: str, index: int) -> VisionTrace:
    """A ViT trace of scikit-learn's bundled 8×8 digit number ``index`` (clamped to the 1,797 images);
    the same cached trace the Vision Transformer page uses for that digit."""
    from engine import samples

    index = min(max(int(index), 0), samples.n_digits() - 1)
    return get_vision_trace(model_id, vit_sample("digit", str(index)))


@st.cache_data(show_spinner=False, max_entries=32, ttl=3600)
def bertviz_view(view: str, model_id: str, source: str | int, causal: bool | None, max_tokens: int,
                 layer: int = 0, head: int = 0) -> dict:
    """One bertviz view ("head", "model" or "neuron") of a model's trace, as an offline HTML document.

    Args:
        view: which bertviz view.
        model_id: a model id; ``source`` is the text, or a digit index for a ViT.
        causal, max_tokens: as for :func:`get_trace`.
        layer, head: shown first.

    Returns:
        ``{"html": str | None, "height": int, "reason": str | None, "n_tokens": int}``; ``html`` is None
        and ``reason`` says why when the view is too big or does not exist for this model.
    """
    from engine.views import bertviz_html as bv

    if isinstance(source, int):
        trace = get_digit_trace(model_id, source)
    else:
        trace = get_trace(model_id, source, causal, max_tokens)
    n = bv.n_tokens(trace)
    if view == "neuron" and isinstance(trace, engine.AlignmentTrace):
        return {"html": None, "height": 0, "n_tokens": n, "reason": "no-qk"}
    reason = bv.too_big(trace, view)
    if reason:
        return {"html": None, "height": 0, "n_tokens": n, "reason": reason}
    if view == "head":
        return {"html": bv.head_view_html(trace, layer), "height": bv.head_view_height(trace), "n_tokens": n,
                "reason": None}
    if view == "model":
        return {"html": bv.model_view_html(trace), "height": bv.model_view_height(trace), "n_tokens": n,
                "reason": None}
    return {"html": bv.neuron_view_html(trace, layer, head), "height": bv.neuron_view_height(trace),
            "n_tokens": n, "reason": None}


# ---------------------------------------------------------------- Train live
# The Train page's calls into engine.training.jobs: one job per session (keyed by session_id()), run by
# the server-wide JobManager in its own thread; the page polls progress and sends heartbeats.


def session_id() -> str:
    """A random id for this browser session (kept in session state)."""
    if "_session_id" not in st.session_state:
        import uuid

        st.session_state["_session_id"] = uuid.uuid4().hex
    return st.session_state["_session_id"]


def session_models() -> tuple[ModelSpec, ...]:
    """Models this session trained (the Train page's "Open in Explore"), for the model pickers."""
    return engine.registry.runtime_specs(session_id())


def train_manager():
    """The server-wide training job manager (cap on concurrent jobs, FIFO queue, heartbeat reaper)."""
    from engine.training.jobs import get_manager

    return get_manager()


@st.cache_data(show_spinner=False, max_entries=64, ttl=600)
def train_estimate(settings: tuple[tuple[str, object], ...]) -> tuple[int, float, str]:
    """``(parameters, seconds per step measured on 3 throwaway steps, device)`` for validated settings.

    Raises:
        JobSettingsError: the settings are invalid (message lists why).
    """
    from engine.training.job_settings import build_model, build_task, time_steps, validate_settings

    checked = validate_settings(dict(settings))
    _bound_threads()
    task = build_task(checked.task)
    params = sum(p.numel() for p in build_model(checked, task).parameters())
    with _jobs:
        per_step = time_steps(checked)
    return params, per_step, "cpu"


def train_start(settings: dict) -> None:
    """Validate and start (or queue) this session's job, replacing its previous one.

    Raises:
        JobSettingsError: invalid settings (nothing started).
    """
    _bound_threads()
    engine.registry.unregister_runtime(session_id())
    train_manager().submit(session_id(), settings, alive=_connected())


def _connected():
    """A thread-safe "is this browser session still connected?" check (None outside a served app)."""
    try:
        from streamlit.runtime import Runtime
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        if ctx is None or not Runtime.exists():
            return None
        runtime, sid = Runtime.instance(), ctx.session_id
        return lambda: runtime.is_active_session(sid)
    except Exception:  # noqa: BLE001 — heartbeats alone still stop abandoned jobs
        return None


def train_progress():
    """This session's job progress (None without a job); also the heartbeat that keeps the job alive."""
    manager = train_manager()
    manager.heartbeat(session_id())
    job = manager.get(session_id())
    return None if job is None else job.progress()


def train_control(action: str) -> None:
    """``pause`` | ``resume`` | ``stop`` | ``reset`` this session's job."""
    manager = train_manager()
    if action == "reset":
        manager.discard(session_id())
        engine.registry.unregister_runtime(session_id())
    elif action in ("pause", "resume", "stop"):
        getattr(manager, action)(session_id())


def train_answer(text: str):
    """The finished model's greedy answer to ``text`` and the right one (raises ValueError with a message)."""
    from engine.training.export import answer

    job = train_manager().get(session_id())
    if job is None or not job.progress().finished:
        raise ValueError("train a model first")
    with _jobs:
        return answer(job, text)


def train_checkpoint() -> bytes:
    """This session's finished model as a zip (safetensors + config JSON + model card), built in memory."""
    from engine.training.export import checkpoint_zip

    job = train_manager().get(session_id())
    if job is None or not job.progress().finished:
        raise ValueError("train a model first")
    return checkpoint_zip(job, f"trained-{job.settings.task}")


def train_register() -> str:
    """Register this session's finished model for the other pages; returns its model id."""
    import uuid

    from engine.training.export import runtime_model

    job = train_manager().get(session_id())
    if job is None or not job.progress().finished:
        raise ValueError("train a model first")
    model_id = f"trained-{job.settings.task}-{uuid.uuid4().hex[:6]}"
    engine.registry.register_runtime(model_id, runtime_model(job, model_id), session_id())
    return model_id


def train_options() -> dict:
    """Choices for the Train page's widgets: tasks (name → label), positional encodings, example inputs."""
    from engine.training.job_settings import INT_RANGES, LR_RANGE, POS_ENCODINGS, TASK_LABELS

    return {"tasks": dict(TASK_LABELS), "pos_encodings": list(POS_ENCODINGS), "ranges": dict(INT_RANGES),
            "lr_range": LR_RANGE}


def train_task_info(task: str) -> dict:
    """What the page shows about a task: description, metric, the ideal pattern (or None), an example input."""
    from engine.training.job_settings import build_task

    t = build_task(task)
    examples = {"copy": "a f c p b k", "reverse": "a f c p b k", "sort": "f a k c p b", "previous-token": "a b c d e",
                "induction": "a d c f", "stories": "lily found a", "translation": "the red car is fast ."}
    return {"description": t.description, "metric": t.metric_name, "ideal": t.ideal_pattern(),
            "example": examples.get(task, ""), "seq_len": t.seq_len}
