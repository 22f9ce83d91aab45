"""The Vision Transformer page's Swin section (attention inside w×w windows that odd blocks shift; 2×2 patches
merge between stages): one query patch's window at a time; and the patch picker both sections use."""

from __future__ import annotations

import streamlit as st

from app.controls.pickers import pick_index, pick_int
from app.ui.charts import clicked_square, show_chart
from app.ui.export import csv_button, grid_table
from app.views.vit.data import swin_window_row
from app.views.vit.figures import window_overlay
from app.views.vit.keys import Vit


def pick_patch(key: str, n: int, clicked: int | None) -> int:
    """The query patch: the one ``clicked`` on the chart, else the typed one, kept inside the ``n`` patches."""
    if clicked is not None:
        st.session_state[key] = clicked
    return pick_int(st.number_input, "Patch (click one in the chart, or type its number)", 0, n - 1, key, step=1)


def _pickers(trace) -> tuple[int, int, int]:
    """Stage, block and head (each kept inside what this model has)."""
    c1, c2, c3 = st.columns(3)

    def stage_name(s: int) -> str:
        rows, cols = trace.stage_blocks(s)[0].grid
        return f"{s}: {rows}×{cols} patches of {trace.cell_size(s)} px"

    def block_name(b: int) -> str:
        return f"{b}: windows shifted by {blocks[b].shift}" if blocks[b].shift else f"{b}: regular windows"

    help = "Between stages Swin merges each 2×2 group of patches into one: fewer, larger patches, like a conv-net."
    with c1:
        stage = pick_index("Stage", trace.n_stages, Vit.swin_stage, format_func=stage_name, help=help)
    blocks = trace.stage_blocks(stage)
    help = "Even blocks cut the grid into regular windows; odd blocks shift the windows by half a window."
    with c2:
        block = pick_index("Block", len(blocks), Vit.swin_block, format_func=block_name, help=help)
    with c3:
        head = pick_index("Head", blocks[block].n_heads, Vit.swin_head)
    return stage, block, head


def _explain(trace, stage: int, block: int, row) -> str:
    """The caption under the window chart: what is drawn, and what a shift does in this block."""
    b = trace.block_at(stage, block)
    w, s = b.window, b.shift
    text = (
        f"Swin lets a patch attend only inside its window of {w}×{w} patches (white outline): colours are the "
        f"query's weights (they sum to 1 over the window), the thin lines are this block's window borders, and "
        f"the query is outlined in cyan. Click another patch to make it the query."
    )
    after = [x for x in trace.stage_blocks(stage) if x.block == block + 1 and x.shift]
    if b.n_windows == 1 and not s:
        text += " This stage's grid fits in one window, so here attention covers the whole image and nothing shifts."
    elif s:
        text += (
            f" **Shifted windows:** before cutting windows, block {block} rolls the grid {s} patches up and to the "
            f"left, so its windows start {s} patches further down and right than in the block before and straddle "
            "that block's borders: this is how information crosses from one window to the next, while each "
            "attention stays small."
        )
        if len(row.pieces) > 1:
            text += (
                " The roll wraps round at the edges, so this window also holds patches from the opposite edge "
                "(dashed): a mask stops the query from looking at them, and only its own side gets weight."
            )
    elif after:
        text += f" The next block shifts these windows by half a window ({after[0].shift} patches): pick it to see."
    if row.padding > 5e-4:
        text += (
            f" {row.padding:.1%} of the weight goes to padding (the grid is padded to a multiple of {w}); it is "
            "not on the map."
        )
    return text


def show_windows(trace) -> None:
    """Stage/block/head pickers, the query patch (clicked or typed) and its window over the image."""
    st.subheader("Where one patch looks: attention inside windows")
    st.write(
        "A Swin Transformer has no [CLS] token and never attends over the whole image at once: each block "
        "splits the patches into small windows and runs attention inside each window only."
    )
    stage, block, head = _pickers(trace)
    b = trace.block_at(stage, block)
    rows, cols = b.grid
    cell = trace.cell_size(stage)
    hit = clicked_square(Vit.swin_map, Vit.swin_click, cell, rows, cols)
    left, right = st.columns([1, 2])
    with left:
        patch = pick_patch(Vit.swin_patch, rows * cols, hit)
        row = swin_window_row(trace, stage, block, head, patch)
        r, c = divmod(patch, cols)
        st.caption(
            f"Patch {patch} is row {r}, column {c} of stage {stage}'s {rows}×{cols} grid; it sits in window "
            f"{row.window_index} of {b.n_windows} in this block."
        )
        name = f"swin_S{stage}_B{block}_H{head}_P{patch}.csv"
        csv_button("Download the weights as CSV", grid_table(row.weights), name, float_format="%.6f")
    with right:
        title = f"Patch {patch} → its window, stage {stage}, block {block}, head {head}"
        fig = window_overlay(trace.image, row, cell, patch, title=title)
        show_chart(fig, key=Vit.swin_map, on_select="rerun", selection_mode="points")
        st.caption(_explain(trace, stage, block, row))
