"""bertviz views: Jesse Vig's head, model and neuron views for every model family, offline: each a self-contained
HTML document (engine/views/bertviz_html.py, d3 and jQuery inlined) in an iframe; nothing loads from a CDN."""

from __future__ import annotations

import streamlit as st

from app.controls.pickers import causal_toggle, load_model, max_tokens_input, pick_model, show_notices, text_box
from app.links import open_page
from app.runtime.models import list_models
from app.runtime.request import TraceRequest
from app.state import PERSIST, K, bounded
from app.ui.guard import attempt
from app.ui.linked_tokens import focus
from app.ui.safe_text import md
from app.views.bertviz_views.data import bertviz_view, source_trace
from app.views.bertviz_views.keys import Bertviz
from app.views.vit.data import vit_digit_count, vit_windowed
from app.views.vit.keys import Vit
from engine.families import FAMILIES, text_families  # every family: the views read any trace through attention_blocks()

BERTVIZ_FAMILIES = FAMILIES - {"captioner"}  # the captioner's attention is over an image grid, one map per word
SELF_ATTENTION = text_families() - {"encoder-decoder"}  # text models with one self-attention stack: a causal toggle

VIEWS = {"head": "Head view", "model": "Model view", "neuron": "Neuron view (queries · keys)"}
MAX_TOKENS_LIMIT = 512

CAPTIONS = {
    "head": "Each line joins a token on the left (the query, *who is looking*) to a token on the right (the key, "
    "*what it looks at*); the darker the line, the more attention. Colours are heads: click a colour square "
    "to hide or show that head, double-click to show it alone; hover a token to see only its lines.",
    "model": "Every layer (rows) and head (columns) at once, each thumbnail a small head view. Click a thumbnail to "
    "enlarge it. Early layers often look at neighbours; later ones at punctuation, [CLS]/[SEP] or related "
    "words.",
    "neuron": "How one head computes its weights: click **+** by the heading after hovering a left token to open "
    "the query vector q, every key vector k, their elementwise product q×k, the dot product q·k (scaled "
    "by 1/√d) and the softmax that turns scores into the weights the lines show. Blue = positive, "
    "orange = negative.",
}


#: Streamlit sizes a frame to its document, which is never shorter than the frame itself: a shorter view after a
#: taller one kept the taller one's height (~200 px blank). The drawing says its body's height itself, after
#: Streamlit's own measure of each change (which counts the frame's height).
FIT_FRAME = """<script>(function () {
  let waiting = 0;
  function say() {
    const height = Math.ceil(Math.max(document.body.scrollHeight, document.body.getBoundingClientRect().bottom));
    window.parent.postMessage({type: "streamlit:iframe:setSize", width: document.body.scrollWidth, height}, "*");
  }
  function later() {
    clearTimeout(waiting);
    waiting = setTimeout(say, 30);
  }
  new MutationObserver(later).observe(document.body, {childList: true, subtree: true, attributes: true});
  window.addEventListener("load", later);
  later();
})();</script>"""


#: the head view opens on the page's highlighted token: its lines alone, as hovering it shows them (each draw)
HIGHLIGHT = """<script>(function () {
  function show() {
    const token = document.querySelectorAll("#left > g:not(.attentionBoxes) > g")[%d];
    if (token && !token.dataset.shown) {
      token.dataset.shown = "1";
      token.dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
    }
  }
  new MutationObserver(show).observe(document.body, {childList: true, subtree: true});
  show();
})();</script>"""


def pick_source(family: str) -> str | int:
    """The sentence (shared with the other pages), or for a ViT one of the bundled 8×8 digits."""
    if family != "vit":
        return text_box()
    last, says = vit_digit_count() - 1, "The ViT cuts the image into 16 patches of 2×2 pixels and adds a [CLS] token."
    label = "Digit image (scikit-learn's 8×8 digits)"
    index = st.number_input(label, 0, last, 0, 1, key=Bertviz.digit, **PERSIST, help=says)
    return bounded(index, 0, last)


def link_own_views(reason: str) -> None:
    """Too big for bertviz: say so, and point to the app's own views."""
    st.warning(f"{reason} The app's own views send one head at a time and pool long inputs.")
    open_page("explore.py", "Explore: one head large + every head of a layer", icon=":material/grid_on:")
    open_page("heads.py", "Heads: every layer × head, metrics, comparisons", icon=":material/view_module:")


def show_view(view: str, source: TraceRequest | tuple[str, int]) -> None:
    """One bertviz view in an iframe, with its caption and a download button."""
    layer, head = int(st.session_state.get(K.layer) or 0), int(st.session_state.get(K.head) or 0)
    with st.spinner(f"Building the {VIEWS[view].lower()}…"):
        result = bertviz_view(view, source, layer, head)
    if result["reason"] == "no-qk":
        st.info(
            "The neuron view needs queries and keys. This RNN's attention has none: its score for each source "
            "word comes from the decoder state and that word's encoder state (additive: vᵀ tanh(W s + U h); "
            "dot: s · W h). The head view shows its alignment."
        )
        return
    if result["reason"]:
        link_own_views(result["reason"])
        return
    token = focus() if view == "head" and isinstance(source, TraceRequest) else None
    mark = HIGHLIGHT % token if token is not None and token < result["n_tokens"] else ""
    st.iframe(result["html"] + FIT_FRAME + mark, height="content", alt=f"bertviz {view} view")
    st.caption(CAPTIONS[view])
    label, name = "Download this view as HTML (works offline)", f"bertviz_{view}_view.html"
    st.download_button(
        label, result["html"], name, "text/html", f"{Bertviz.download}{view}", icon=":material/download:"
    )


def main() -> None:
    st.title("bertviz views")
    st.write(
        "Jesse Vig's [bertviz](https://github.com/jessevig/bertviz) pictures of attention, drawn here for "
        "every model family of the app, offline."
    )

    top_left, top_right = st.columns([3, 2])
    with top_right:
        model_id = pick_model(BERTVIZ_FAMILIES)
    if (card := load_model(model_id)) is None:
        return
    family = card.family
    with top_left:
        source = pick_source(family)
    with top_right:
        causal = causal_toggle(model_id, card.default_causal) if family in SELF_ATTENTION else None
        max_tokens = max_tokens_input(MAX_TOKENS_LIMIT)

    if family == "rnn-attention":
        st.info(
            "This is an RNN with Bahdanau/Luong attention: one attention map per translation (target words "
            "× source words), no layers, heads, queries or keys. The head view shows that map; the neuron view "
            "has nothing to show."
        )
    view = st.radio("View", list(VIEWS), format_func=VIEWS.get, horizontal=True, key=Bertviz.view, **PERSIST)
    source = (model_id, source) if isinstance(source, int) else TraceRequest(model_id, source, causal, max_tokens)
    if (trace := attempt(lambda: source_trace(source))) is None:
        return
    show_notices(trace, card.max_positions)
    if vit_windowed(trace):  # a Swin: small windows per block, not one attention over every token
        st.info(
            "This is a Swin: each block attends inside small windows of patches, not over all tokens at once, "
            "so bertviz's views (one token-to-token map per head) do not fit it. The Vision Transformer page "
            "shows its windows."
        )
        key = Vit.model if any(s.id == model_id for s in list_models()) else Vit.hub_id
        open_page("vit.py", "Vision Transformer: this Swin's windows", {key: model_id}, icon=":material/image:")
        return
    if family == "vit":
        st.caption(f"Prediction: **{trace.prediction}**. Tokens: [CLS] and patches p0–p15, row by row.")
    if family == "encoder-decoder":
        st.caption(
            f"Translation: **{md(trace.output_text)}**. Pick Encoder, Decoder or Cross in the view's "
            "*Attention* menu; in Cross, left = French tokens written, right = English source."
        )
    attempt(lambda: show_view(view or "head", source))


main()
