"""Widgets shared by the text pages: the sentence, the model, layer/head. They write the shared keys
(``app.state.K``); a link's ``hide=`` leaves a control out, its value then checked here as a widget's would be."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from app.runtime.heads import HEAD_BLOCKS
from app.runtime.models import get_card, list_models, model_loaded, policy, session_models
from app.state import DEFAULTS, PERSIST, K, bounded, choose, clamp, current_text, hidden, settle
from app.ui.charts import set_source
from app.ui.clicks import once
from app.ui.guard import busy, show_error
from app.ui.safe_text import md, quoted
from app.views.explore.keys import Explore
from engine.corpora.stories import generate_stories
from engine.families import hub_labels, text_families
from engine.records import ModelCard
from engine.text import UNKNOWN_WORDS_LEAD, quote_input


def text_box() -> str:
    """The shared sentence; returns its current value."""
    if hidden("text"):
        return current_text()
    # no max_chars: the browser would drop a longer paste silently; the engine cuts it with a notice instead
    st.text_area(
        "Your text",
        value=current_text(),
        key=K.text,
        height=90,
        **PERSIST,
        help="Any text; long input is cut at the token limit (Advanced), with a notice.",
    )
    return current_text()


LONG_EXAMPLE_STORIES = 900  # generated children's stories: ~80,000 characters, over 16,384 GPT-2 tokens


def use_text(text: str) -> None:
    """Make ``text`` the shared sentence (before :func:`text_box` draws the box)."""
    st.session_state[K.text] = text


def _use_long_example(limit: int) -> None:
    """on_click of "Try a long text": generated stories (the same every time) and the largest token limit."""
    use_text("\n".join(generate_stories(LONG_EXAMPLE_STORIES, seed=2026)))
    st.session_state[K.max_tokens] = limit


def pick_model(families: frozenset[str] | None = None) -> str:
    """The model picker over ``families`` (default the text families), this session's trained models first, and a
    field for any Hub id or folder; returns the id to load."""
    families = text_families() if families is None else families
    specs = [s for s in (*session_models(), *list_models()) if s.family in families]
    help = "Offline models work anywhere; Hub models download the first time (internet needed)."
    _model_box(specs, K.model, help, hide=hidden("model"))
    kinds = f"{', '.join(hub_labels('encoder', 'decoder'))} models, and the "
    kinds += f"{', '.join(hub_labels('encoder-decoder'))} encoder-decoders (e.g. google-t5/t5-small)."
    typed = typed_model_field(K.hub_id, "Another model", "e.g. gpt2, bert-base-uncased", kinds, hide=hidden("model"))
    return typed or st.session_state[K.model]


def pick_family_model(family: str, key: str, fallback: str, help: str, hub: tuple[str, str, str, str]) -> str:
    """The "Model" box over the catalog's ``family`` models and a field for another (``hub``: its arguments)."""
    _model_box([s for s in list_models() if s.family == family], key, help, fallback)
    return typed_model_field(*hub) or st.session_state[key]


def _model_box(specs, key: str, help: str, fallback: str | None = None, hide: bool = False) -> None:
    """The "Model" selectbox over ``specs`` (a Hub model's label says it needs internet), kept among them."""
    labels = {s.id: s.label if s.offline else f"{s.label} — needs internet" for s in specs} or {fallback: fallback}
    choose(key, labels)
    if not hide:
        st.selectbox("Model", list(labels), format_func=labels.get, key=key, **PERSIST, help=help)


def typed_model_field(key: str, title: str, example: str, families_help: str, hide: bool = False) -> str:
    """The field for a model outside the list, as far as the server's policy allows; returns what was typed.
    ``hide``: no field (a link locked the model), but its value is used."""
    rules = policy()
    if not rules.hub and not rules.model_dirs:
        return ""
    if hide:
        return (st.session_state.get(key) or "").strip()
    kinds = [what for what, on in (("Hugging Face id", rules.hub), ("folder", bool(rules.model_dirs))) if on]
    name = " or ".join(kinds)
    with st.expander(f"{title} ({name})", expanded=bool(st.session_state.get(key))):
        where = " A folder must lie inside a model folder the server's admin allowed." if rules.model_dirs else ""
        st.text_input(
            name[:1].upper() + name[1:],
            key=key,
            placeholder=example if rules.hub else "/path/to/saved_model",
            help=f"{families_help}{where} Leave empty to use the picker.",
            **PERSIST,
        )
    return (st.session_state.get(key) or "").strip()


def text_and_model(max_tokens_limit: int):
    """The header of the text pages: the sentence, the model and token limit, then the load; returns
    ``(model_id, max_tokens, card)``, ``card`` None when the model could not be loaded (the message is shown)."""
    left, right = st.columns([3, 2])
    with left:
        text_box()
        long_text_button(max_tokens_limit)
    with right:
        model_id, max_tokens = pick_model(), max_tokens_input(max_tokens_limit)
        card = model_card(model_id)
    if card is not None:
        name_source(model_id, card)
    return model_id, max_tokens, card


def model_card(model_id: str) -> ModelCard | None:
    """:func:`load_model`, and which model it is where a link locked the picker."""
    card = load_model(model_id)
    if card is not None and hidden("model"):
        st.caption(f"Model: **{md(model_name(model_id, card))}** (fixed by this link)")
    return card


def long_text_button(max_tokens_limit: int) -> None:
    """ "Try a long text", on pages whose limit is over 1,024 tokens (unless a link hides the text or the limit)."""
    if max_tokens_limit > 1024 and not hidden("text") and not hidden("max_tokens"):
        st.button(
            "Try a long text",
            icon=":material/article:",
            on_click=once(_use_long_example),
            args=(max_tokens_limit,),
            key=Explore.long_example,
            help=f"Fills the box with generated stories and sets the token limit to {max_tokens_limit:,}. "
            "Tiny random GPT-2 reads all of it; MiniLM reads the first 512 tokens.",
        )


def model_name(model_id: str, card: ModelCard) -> str:
    """The model's catalog label, or the id typed for a model outside the catalog."""
    return card.spec.label if card.spec.id == model_id else model_id


def name_source(model_id: str, card: ModelCard) -> None:
    """Every chart of the page names the model and sentence (call it after the sentence box)."""
    set_source(model_name(model_id, card), current_text())


def load_model(model_id: str) -> ModelCard | None:
    """Load (once per server) with a spinner; the :class:`ModelCard`, or None once the error is shown."""
    with busy(f"Loading {quoted(model_id)} (the first load takes a few seconds)…", model_loaded(model_id)):
        try:
            return get_card(model_id)
        except Exception as err:  # noqa: BLE001 — loading may raise anything (engine, torch, Hub): the picker's message
            named = quote_input(model_id) in str(err)  # a typed id is shown once, not twice
            show_error(err, before=f"Could not load {'the model' if named else quoted(model_id)}: ", level="error")
            return None


def open_head(layer: int, head: int) -> None:
    """Make ``layer`` / ``head`` the shared layer and head (:func:`layer_head` keeps them in range)."""
    st.session_state[K.layer], st.session_state[K.head] = layer, head


def layer_head(n_layers: int, n_heads: int, columns, kinds: Sequence[str] = ()) -> tuple[int, int]:
    """Layer and head selectboxes in the two ``columns`` (shared keys, clamped to this model's size first; a column
    None draws no box: a view in the browser picks it); a model whose layers differ in ``kinds``
    (``AttentionTrace.layer_kinds``) shows each layer's kind: "3 · sliding 4096"."""
    left, right = columns
    badge = {"format_func": lambda i: f"{i} · {kinds[i]}"} if len(set(kinds)) > 1 else {}
    if hidden("layer"):
        layer = clamp(K.layer, 0, n_layers - 1)
    else:
        layer = pick_index("Layer", n_layers, K.layer, left, **badge)
    head = (
        clamp(K.head, 0, n_heads - 1) if hidden("head") or right is None else pick_index("Head", n_heads, K.head, right)
    )
    return layer, head


def pick_block(blocks: list[str], key: str) -> str:
    """The attention block to show among ``blocks`` (no widget for one block)."""
    if len(blocks) <= 1:
        return blocks[0] if blocks else "self"
    choose(key, blocks)
    if hidden("block"):
        return st.session_state[key]
    return st.selectbox(
        "Attention block",
        blocks,
        key=key,
        **PERSIST,
        format_func=lambda name: HEAD_BLOCKS.get(name, name),
        help="Encoder: the source sentence reads itself. Decoder: the output reads what it has "
        "written so far (causal). Cross: each output token reads the source sentence.",
    )


def kv_sharing(trace, head: int | None = None) -> str:
    """ " Heads 0–3 share key/value head 0 (grouped-query attention…)." for a grouped-query trace (every group of the
    layer where ``head`` is None), else ""."""
    if getattr(trace, "kv_heads", None) is None:
        return ""
    group = trace.n_heads // trace.kv_heads
    kvs = range(trace.kv_heads) if head is None else [trace.key_head(head)]
    spans = ", ".join(f"heads {kv * group}–{kv * group + group - 1} share key/value head {kv}" for kv in kvs)
    return (
        f" {spans[0].upper()}{spans[1:]} (grouped-query attention: this model has {trace.kv_heads} key/value heads "
        f"for {trace.n_heads} query heads), so their keys and values are the same."
    )


def limit_hint(max_positions: int | None = None) -> str:
    """Where the token limit is changed, for a truncation warning ("" where raising it cannot help)."""
    if hidden("max_tokens"):
        return ""
    limit = token_limit(10**9)
    if max_positions is not None and limit >= max_positions:
        return ""
    most = f" (this model reads up to {max_positions:,} tokens)" if max_positions is not None else ""
    return f" To read more of it, raise **{LIMIT_LABEL}** in **{LIMIT_EXPANDER}**, {LIMIT_PLACE}{most}."


def show_notices(trace, max_positions: int | None = None) -> None:
    """A trace's notices: truncation as a warning saying where the token limit is, the rest as info."""
    truncated = getattr(trace, "truncated", False)
    for i, notice in enumerate(trace.notices):
        if notice.startswith(UNKNOWN_WORDS_LEAD):  # where to find sentences this model reads in full
            notice_md = md(notice) + " See **Examples** and **Words this model knows**, next to the text box."
        else:
            notice_md = md(notice)
        if truncated:
            st.warning(notice_md + (limit_hint(max_positions) if i == len(trace.notices) - 1 else ""))
        else:
            st.info(notice_md)


def causal_toggle(model_id: str, default: bool) -> bool:
    """The causal-mask toggle; each time the model changes it starts at ``default`` (the model's own)."""
    if st.session_state.get(K.causal_for) != model_id:
        st.session_state[K.causal] = bool(default)
        st.session_state[K.causal_for] = model_id
    settle(K.causal_default, bool(default))  # a link names the mask only when it differs from this
    if hidden("causal"):
        return bool(st.session_state.get(K.causal, default))
    own = "on" if default else "off"
    return bool(
        st.toggle(
            "Causal mask",
            key=K.causal,
            **PERSIST,
            help="On: each token sees only itself and earlier tokens (as in GPT). "
            "Off: every token sees the whole sentence (as in BERT). Same weights either way. "
            f"This model's own setting: {own}.",
        )
    )


#: the token limit's label and where it sits, also named by :func:`limit_hint` in a truncation warning
LIMIT_LABEL = "Token limit"
LIMIT_EXPANDER = "Advanced"
LIMIT_PLACE = "under the model picker"


def token_limit(limit: int) -> int:
    """The shared token limit, inside ``[4, limit]``."""
    return bounded(st.session_state.get(K.max_tokens, DEFAULTS[K.max_tokens]), 4, limit)


def max_tokens_input(limit: int = 1024) -> int:
    """The token-limit field (inside an "Advanced" expander); returns the bounded value."""
    if hidden("max_tokens"):
        return token_limit(limit)
    with st.expander(LIMIT_EXPANDER):
        # value= is the current setting, not the minimum: a page opened fresh must not fall back to 4
        st.number_input(
            LIMIT_LABEL,
            min_value=4,
            max_value=limit,
            value=token_limit(limit),
            step=16,
            key=K.max_tokens,
            help="Longer input is truncated; the page says when.",
            **PERSIST,
        )
    return token_limit(limit)


class _Section(contextlib.nullcontext):
    """One of a page's sections: ``open`` or not; usable in ``with``."""

    def __init__(self, open: bool) -> None:
        super().__init__(self)
        self.open = open


def page_tabs(labels: list[str], key: str, closed: bool = False) -> list:
    """A page's sections, one open at a time under a segmented control (unlike ``st.tabs`` only the open one runs);
    one object per label. The open label is kept under ``key``; ``hide=tabs`` draws no buttons. ``closed``: none
    is open until one is picked (each costs the server a model pass), and a second click closes it again."""
    if st.session_state.get(key) not in labels and not (closed and st.session_state.get(key) is None):
        st.session_state[key] = None if closed else labels[0]  # a stale or never-set value
    chosen = (
        st.session_state[key]
        if hidden("tabs")
        else st.segmented_control(
            "Section",
            labels,
            key=key,
            required=not closed,
            default=None if closed else labels[0],
            label_visibility="collapsed",
        )
    )
    return [_Section(label == chosen) for label in labels]


def pick_index(label: str, n: int, key: str, where=st, **kwargs) -> int:
    """A selectbox over 0 … n − 1 (a layer, a head) in ``where``, its value kept inside this model's range first."""
    clamp(key, 0, n - 1)
    return int(where.selectbox(label, range(n), key=key, **PERSIST, **kwargs))


def pick_head(n: int, key: str, every: str, persist: bool = True) -> int | None:
    """A head selectbox whose first option (−1), named ``every``, stands for all heads; returns None for it."""
    clamp(key, -1, n - 1)
    keep = PERSIST if persist else {}
    head = st.selectbox("Head", range(-1, n), key=key, format_func=lambda h: every if h < 0 else f"head {h}", **keep)
    return None if head < 0 else int(head)


def pick_int(widget, label: str, low: int, high: int, key: str, start: int | None = None, **kwargs) -> int:
    """``widget`` (a slider, a number box) over ``low … high``, its value kept and read back inside them."""
    clamp(key, low, high, start=start)
    widget(label, low, high, key=key, **PERSIST, **kwargs)
    return bounded(st.session_state.get(key), low, high)


UPLOAD_TYPES = ["png", "jpg", "jpeg", "gif", "bmp", "webp", "tif", "tiff"]  # what engine.images.read_image reads


def upload_field(label: str, key: str, empty: str, read: Callable[[bytes], Any]) -> tuple[Any, str] | None:
    """A picture upload: ``read(bytes)`` of the file and its name; None with a note when there is none to use."""
    help = "PNG, JPEG, GIF, BMP, WebP or TIFF, up to 10 MB. It stays in memory and is never saved."
    upload = st.file_uploader(label, type=UPLOAD_TYPES, key=key, help=help)
    if upload is None:
        st.info(empty)
        return None
    try:
        return read(upload.getvalue()), upload.name
    except Exception as err:  # noqa: BLE001 — read_image words its known failures; Pillow may raise others
        show_error(err, before=f"{quoted(upload.name)} cannot be used: ", level="error")
        return None
