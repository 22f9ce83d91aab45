"""The pretraining page's session-state keys (and URL parameters: the same names)."""

from __future__ import annotations

from app.url_params import Param, integer, one_of, tab_bar, text


class Pretraining:
    """The Pretraining objectives page's keys (``app/views/pretraining/page.py``); prefixes: ``fill_bars`` /
    ``fill_att`` per blank, ``finetune`` and ``nsp_inspect`` per moment (``before`` / ``after``)."""

    tab = "pretraining_tab"
    fill_text, fill_pick, fill_bars, fill_att = "fill_text", "fill_pick", "fill_bars_", "fill_att_"
    objectives_text, objectives_layer = "objectives_text", "objectives_layer"
    mask_mlm, mask_next, mask_span = "obj_mask_mlm", "obj_mask_next", "obj_mask_span"
    real_mlm, real_next, real_span = "obj_real_mlm", "obj_real_next", "obj_real_span"
    # the two fine-tuning tabs (finetune.py): the colour task's and next-sentence prediction's
    finetune_steps, finetune_lr, finetune_go = "finetune_steps", "finetune_lr", "finetune_go"
    finetune_result, finetune_running, finetune = "finetune_result", "finetune_running", "finetune_"
    finetune_change, finetune_colour = "finetune_change", "finetune_colour"
    nsp_steps, nsp_lr, nsp_go, nsp_result = "nsp_steps", "nsp_lr", "nsp_go", "nsp_result"
    nsp_running = "nsp_loss_running"
    nsp_examples, nsp_loss, nsp_curve_csv, nsp_shares = "nsp_examples", "nsp_loss", "nsp_curve_csv", "nsp_shares"
    nsp_change, nsp_cls_change, nsp_pair, nsp_inspect = "nsp_change", "nsp_cls_change", "nsp_pair", "nsp_inspect_"
    cost_n, cost_d, cost_table, cost_measure = "cost_n", "cost_d", "cost_table", "cost_measure"
    cost_times, cost_measured = "cost_times", "cost_measured"  # cost_measured: the (n, d) last asked to measure


TABS = {
    "fill": "Fill in the blank",
    "objectives": "Objectives side by side",
    "finetune": "Fine-tuning changes attention",
    "nsp": "Next sentence and [CLS]",
    "cost": "The cost of attention",
}
FILL_DEFAULT = "lily found a red ball . she gave [MASK] to tom ."
OBJECTIVES_DEFAULT = "the big red ball , the small blue box and the old green car ."
COST_N = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
COST_D = (16, 32, 64, 128, 256, 512, 1024)
FINETUNE_LRS = (1e-4, 3e-4, 1e-3, 3e-3)
PAGE = frozenset({"pretraining"})
PARAMS = (
    tab_bar(Pretraining.tab, TABS, PAGE),
    Param(Pretraining.fill_text, text(300), FILL_DEFAULT, PAGE),
    Param(Pretraining.objectives_text, text(200), OBJECTIVES_DEFAULT, PAGE),
    Param(Pretraining.objectives_layer, integer(0, 2), 0, PAGE),
    Param(Pretraining.cost_n, one_of(COST_N), 512, PAGE),
    Param(Pretraining.cost_d, one_of(COST_D), 64, PAGE),
    Param(Pretraining.finetune_steps, integer(50, 500), 200, PAGE),
    Param(Pretraining.finetune_lr, one_of(FINETUNE_LRS), 1e-3, PAGE),
)
