"""The Vision Transformer page's Swin section: attention inside windows that shift between blocks.

A Swin has no [CLS] token and no attention over the whole image: each block attends inside w×w windows of
its stage's patch grid, odd blocks shift those windows, and 2×2 patches merge between stages. So the page
shows one query patch at a time: pick a stage, a block (odd ones shifted) and a head, click a patch, and see
its window over the image with the weights it gives the patches there. The numbers come from
``swin_window_row`` (the engine's ``engine.analysis.windows``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from app.state import PERSIST, bounded, clamp
from app.ui.charts import clicked_point, show_chart
from app.views.vit.data import swin_window_row
from app.views.vit.figures import square_at
from app.views.vit.keys import Vit
from app.views.vit.windows import window_overlay


def _apply_click(cell: int, grid: tuple[int, int]) -> None:
    """A click on the window chart (its selection, kept in session state) picks the query patch, once per click:
    the clicked point (pixels) is remembered, so a selection still held after a stage change is not read again
    with the new stage's patch size."""
    point = clicked_point(Vit.swin_map)
    if point is None or st.session_state.get(Vit.swin_click) == point:
        return
    st.session_state[Vit.swin_click] = point
    hit = square_at(point, cell, *grid)
    if hit is not None:
        st.session_state[Vit.swin_patch] = hit[0] * grid[1] + hit[1]


def _pickers(trace) -> tuple[int, int, int]:
    """Stage, block and head (each kept inside what this model has)."""
    c1, c2, c3 = st.columns(3)
    with c1:
        clamp(Vit.swin_stage, 0, trace.n_stages - 1)

        def stage_name(s: int) -> str:
            rows, cols = trace.stage_blocks(s)[0].grid
            return f"{s}: {rows}×{cols} patches of {trace.cell_size(s)} px"

        stage = int(
            st.selectbox(
                "Stage",
                range(trace.n_stages),
                format_func=stage_name,
                key=Vit.swin_stage,
                **PERSIST,
                help="Between stages Swin merges each 2×2 group of patches into one: fewer, larger "
                "patches, like the layers of a conv-net.",
            )
        )
    blocks = trace.stage_blocks(stage)
    with c2:
        clamp(Vit.swin_block, 0, len(blocks) - 1)

        def block_name(b: int) -> str:
            return f"{b}: windows shifted by {blocks[b].shift}" if blocks[b].shift else f"{b}: regular windows"

        block = int(
            st.selectbox(
                "Block",
                range(len(blocks)),
                format_func=block_name,
                key=Vit.swin_block,
                **PERSIST,
                help="Even blocks cut the grid into regular windows; odd blocks shift the windows by half a window.",
            )
        )
    with c3:
        n_heads = blocks[block].n_heads
        clamp(Vit.swin_head, 0, n_heads - 1)
        head = int(st.selectbox("Head", range(n_heads), key=Vit.swin_head, **PERSIST))
    return stage, block, head


def _explain(trace, stage: int, block: int, row) -> str:
    """The caption under the window chart: what is drawn, and what a shift does in this block."""
    b = trace.block_at(stage, block)
    w, s = b.window, b.shift
    rows, cols = b.grid
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


def show_windows(trace, csv_bytes: Callable[[np.ndarray], bytes]) -> None:
    """Stage/block/head pickers, the query patch (clicked or typed) and its window over the image."""
    st.subheader("Where one patch looks: attention inside windows")
    st.write(
        "A Swin Transformer has no [CLS] token and never attends over the whole image at once: each block "
        "splits the patches into small windows and runs attention inside each window only."
    )
    stage, block, head = _pickers(trace)
    b = trace.block_at(stage, block)
    rows, cols = b.grid
    n, cell = rows * cols, trace.cell_size(stage)
    _apply_click(cell, b.grid)
    clamp(Vit.swin_patch, 0, n - 1)
    left, right = st.columns([1, 2])
    with left:
        st.number_input(
            "Patch (click one in the chart, or type its number)",
            min_value=0,
            max_value=n - 1,
            step=1,
            key=Vit.swin_patch,
            **PERSIST,
        )
        patch = bounded(st.session_state.get(Vit.swin_patch), 0, n - 1)
        row = swin_window_row(trace, stage, block, head, patch)
        r, c = divmod(patch, cols)
        st.caption(
            f"Patch {patch} is row {r}, column {c} of stage {stage}'s {rows}×{cols} grid; it sits in window "
            f"{row.window_index} of {b.n_windows} in this block."
        )
        st.download_button(
            "Download the weights as CSV",
            csv_bytes(row.weights),
            file_name=f"swin_S{stage}_B{block}_H{head}_P{patch}.csv",
            mime="text/csv",
            icon=":material/download:",
        )
    with right:
        title = f"Patch {patch} → its window, stage {stage}, block {block}, head {head}"
        show_chart(
            window_overlay(trace.image, row, cell, patch, title=title),
            key=Vit.swin_map,
            on_select="rerun",
            selection_mode="points",
        )
        st.caption(_explain(trace, stage, block, row))
