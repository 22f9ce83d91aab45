"""What every section of the Heads page receives (the request, its block chosen, and the head), and the metrics'
names."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from app.runtime.heads import HEAD_BLOCKS, block_is_square
from app.runtime.request import TraceRequest
from engine import AttentionTrace

#: metric column → (label for people, number format, what it means)
METRICS: dict[str, tuple[str, str, str]] = {
    "entropy": ("entropy (nats)", ".2f", "how spread out a row is: 0 = all on one token, ln n = even over n tokens"),
    "entropy_bits": ("entropy (bits)", ".2f", "the same entropy in bits (nats ÷ ln 2)"),
    "broad": ("broadness", ".2f", "entropy ÷ its maximum for the keys a row may see: 1 = perfectly even"),
    "mean_distance": (
        "mean distance (tokens)",
        ".1f",
        "Σ weight × |query position − key position|, averaged over queries",
    ),
    "sink": ("sink share", ".2f", "weight on marker tokens ([CLS], [SEP], <bos>, …; not [UNK]) and the first token"),
    "previous": ("previous-token share", ".2f", "weight on the token just before"),
    "self": ("self share", ".2f", "weight on the token itself"),
    "next": ("next-token share", ".2f", "weight on the token just after"),
    "alignment": (
        "alignment",
        ".2f",
        "1 − broadness: how sharply each target word picks a few source words (cross-attention only)",
    ),
}


def metric_columns(columns) -> dict:
    """``st.dataframe`` column_config for the metric columns present in ``columns``."""
    config = {
        m: st.column_config.NumberColumn(METRICS[m][0], format="%.3f", help=METRICS[m][2])
        for m in METRICS
        if m in columns
    }
    config["pattern"] = st.column_config.TextColumn("best match", help="the pattern this head matches best")
    config["score"] = st.column_config.NumberColumn(
        "score", format="%.2f", help="the best match's score (its share, or broadness for 'broad')"
    )
    return config


@dataclass(frozen=True)
class HeadsContext:
    """The Heads page's shared choices: the request (its block chosen), the family, the block's attention, the head."""

    request: TraceRequest
    family: str
    attention: AttentionTrace
    layer: int
    head: int

    @property
    def block(self) -> str:
        return self.request.block

    @property
    def square(self) -> bool:
        """True for self-attention (queries and keys are the same tokens)."""
        return block_is_square(self.block)

    @property
    def block_label(self) -> str:
        return HEAD_BLOCKS.get(self.block, "")
