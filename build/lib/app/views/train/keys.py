"""The train page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

from app.url_params import Param, boolean, integer, number, one_of, tab_bar
from engine.training.job_settings import INT_RANGES, POS_ENCODINGS, TASK_LABELS


class Train:
    """The Train live page's keys (``app/views/train/page.py``): ``prefix`` + a setting's name (``train_task``, ...)."""

    prefix = "train_"


#: the tabs (a plain ``st.tabs``, so not hideable)
TABS = {"own": "Your own model", "induction": "Induction heads"}
PAGE = frozenset({"train"})
HEADS, WIDTHS, BATCHES = (1, 2, 4, 8), (16, 32, 64, 128, 256), (8, 16, 32, 64, 128, 256)
#: the settings (``train_<name>``), their defaults and how a link reads them; bounds: engine/training/job_settings.py
SETTINGS = {
    "task": (one_of(TASK_LABELS), "reverse"),
    "n_layers": (integer(*INT_RANGES["n_layers"]), 2),
    "n_heads": (one_of(HEADS), 4),
    "d_model": (one_of(WIDTHS), 64),
    "pos_encoding": (one_of(POS_ENCODINGS), "learned"),
    "causal": (boolean, True),
    "steps": (integer(*INT_RANGES["steps"]), 500),
    "batch_size": (one_of(BATCHES), 64),
    "seed": (integer(*INT_RANGES["seed"]), 0),
    "lr": (number(1e-5, 0.1), 0.003),
}
DEFAULTS = {name: value for name, (_, value) in SETTINGS.items()}
PARAMS = (
    *(Param(f"{Train.prefix}{name}", read, value, PAGE) for name, (read, value) in SETTINGS.items()),
    tab_bar(f"{Train.prefix}tab", TABS, PAGE, hide=None),
)
