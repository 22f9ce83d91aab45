"""The train page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

from app.url_params import Param, boolean, integer, number, one_of, tab_bar
from engine.training.job_settings import INT_RANGES, POS_ENCODINGS, TASK_LABELS


class Train:
    """The Train live page's keys (``app/views/train/page.py``): ``prefix`` + a setting's name (``train_task``, ...)."""

    prefix = "train_"


#: the tabs (``page.TABS``: the same labels in the same order); a plain ``st.tabs``, so not hideable
TABS = {"own": "Your own model", "induction": "Induction heads"}
PAGE = frozenset({"train"})
#: the settings' defaults are the page's ``DEFAULTS``; bounds: engine/training/job_settings.py
PARAMS = (
    Param("train_task", one_of(TASK_LABELS), "reverse", PAGE),
    Param("train_n_layers", integer(*INT_RANGES["n_layers"]), 2, PAGE),
    Param("train_n_heads", one_of((1, 2, 4, 8)), 4, PAGE),
    Param("train_d_model", one_of((16, 32, 64, 128, 256)), 64, PAGE),
    Param("train_pos_encoding", one_of(POS_ENCODINGS), "learned", PAGE),
    Param("train_causal", boolean, True, PAGE),
    Param("train_steps", integer(*INT_RANGES["steps"]), 500, PAGE),
    Param("train_batch_size", one_of((8, 16, 32, 64, 128, 256)), 64, PAGE),
    Param("train_seed", integer(*INT_RANGES["seed"]), 0, PAGE),
    Param("train_lr", number(1e-5, 0.1), 0.003, PAGE),
    tab_bar("train_tab", TABS, PAGE, hide=None),
)
