"""Session-state keys and their defaults, declared once.

``K`` holds the keys the text pages share; a page moved to this rule has a class of its own (``Bahdanau``, ``Vit``, ``Positional``, ``Step``, ``Heads``)
that its page, its components and ``app/url_params.py`` all read, so a key or a link's default is spelled
in one place (``tests/unit/test_state_keys.py`` lists the moved files and fails on a key written in place).

Widgets are created with ``key=K.*`` and ``persist_state="session"`` (a value survives a page
switch). The URL carries them through ``app.url_state`` (the table of parameters: ``app/url_params.py``),
not through ``bind="query-params"``.

Writes that are not a user's action go through the helpers at the end of this module, one per idiom
(``tests/unit/test_state_keys.py`` fails on a default written in place elsewhere):

- :func:`default` / :func:`defaults`: the value a key starts a session with (set once, then left to the
  user, a link, a widget); :func:`default_from` when the value must be made (read from the link or the
  browser, a random id, a store lookup) and only once.
- :func:`choose`: a choice among fixed options; a value that is none of them (a forged link, an old session, a
  model that went away) becomes the first option or a given fallback.
- :func:`clamp`: a number inside ``[low, high]`` (a layer after a model switch), with the value a session
  starts with; :func:`bounded` is the same check on a value without writing it.
- :func:`settle`: put a computed value in before its widget is drawn, writing only a change.
- :func:`keep`: write a widget's value back to itself on every run, for the keys measured to need it.

What a page still writes itself is what a user did (a callback storing a click, a button's result, an error
to show once).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import streamlit as st

DEFAULT_TEXT = "The animal didn't cross the street because it was too tired."
DEFAULT_MODEL = "minilm"


class K:
    """Session-state keys (also the URL query-parameter names: ``app/url_params.py``)."""

    text = "text"
    model = "model"
    hub_id = "hub_id"
    layer = "layer"
    head = "head"
    causal = "causal"
    max_tokens = "max_tokens"
    session_id = "_session_id"  # this browser session's random id (services.session_id)
    causal_for = "_causal_for"  # the model the causal toggle's default was read for
    causal_default = "_causal_default"  # that default: a link names the mask only when it differs from it


class Bahdanau:
    """The Bahdanau page's keys (``app/views/bahdanau/page.py``, ``app/views/bahdanau/step.py``); the four
    its links carry are the URL parameters of the same names (``app/url_params.py``)."""

    text = "bahdanau_text"
    variant = "bahdanau_variant"
    example = "bahdanau_example"
    tf_layer = "bahdanau_tf_layer"
    tf_head = "bahdanau_tf_head"  # -1: the average of the heads
    step = "bahdanau_step"
    differs = "bahdanau_differs"  # the "Try <the sentence where attention and gold links differ>" button
    # charts and downloads (element keys; ``cmp`` is a prefix: one chart per attention variant)
    map, map_csv, cmp, cmp_transformer = "bahdanau_map", "bahdanau_map_csv", "bahdanau_cmp_", "bahdanau_cmp_transformer"
    step_table, step_csv = "bahdanau_step_table", "bahdanau_step_csv"
    state, energies, context = "bahdanau_state", "bahdanau_energies", "bahdanau_context"

    DEFAULTS: dict[str, Any] = {text: "the red car is big", variant: "additive", tf_layer: 0, tf_head: -1}


class ROOM:
    """Session keys of a class in one room (issue 21); the room itself lives in the class store (``app.store``)."""

    joined = "class_joined"  # the code of the room this browser joined
    link_seen = "class_link_seen"  # the ?room= value already acted on (a join is tried once per link, not per rerun)
    join_error = "class_join_error"  # why that link could not join (shown while the link is open)
    teacher = "class_teacher"  # (code, token) of the class this browser teaches
    browser = "class_browser"  # this browser's anonymous id (services.browser_id: from its cookie, else random)
    looked_up = "class_looked_up"  # True once this session asked the store which room this browser is in
    reveal_error = "class_reveal_error"  # why the last Reveal press failed (shown once)
    # the Class page's widgets (``app/views/classroom/page.py``) and the student's panel (``room_panel``)
    start, restart, end, leave = "class_start", "class_restart", "class_end", "class_leave"
    q_prompt, q_options, q_right, ask_choice = "class_q_prompt", "class_q_options", "class_q_right", "class_ask_choice"
    p_model, p_text, p_layer, p_head, p_word = (
        "class_p_model",
        "class_p_text",
        "class_p_layer",
        "class_p_head",
        "class_p_word",
    )
    ask_predict = "class_ask_predict"
    # the lesson a room walks through (``app/views/classroom/room_lesson.py``): the teacher's pick and buttons
    lesson_pick, lesson_ref, lesson_start = "class_lesson_pick", "class_lesson_ref", "class_lesson_start"
    lesson_prev, lesson_next, lesson_stop = "class_lesson_prev", "class_lesson_next", "class_lesson_stop"
    lesson_error = "class_lesson_error"  # why the last lesson button failed (shown once)
    # prefixes + a question's id: its Reveal button, a student's pick and Send button, the charts of the live
    # question (``results``) and of earlier ones (``past``)
    reveal, pick, send, results, past = "class_reveal_", "class_pick_", "class_send_", "class_", "class_past_"
    map = "class_map_"  # + a question's id: the map of a "which head is this?" question
    h_model, h_text, h_layer, h_head, ask_head = (
        "class_h_model",
        "class_h_text",
        "class_h_layer",
        "class_h_head",
        "class_ask_head",
    )
    invite = "class_invite"  # presenter mode: the container of the code, join link and QR code (its CSS sizes them)


class Vit:
    """The Vision Transformer page's keys (``app/views/vit/page.py``); those its links carry are the URL parameters of
    the same names (``app/url_params.py``, which takes their defaults and options from here)."""

    model, hub_id = "vit_model", "vit_hub_id"
    source, digit, shape, photo, upload = "vit_source", "vit_digit", "vit_shape", "vit_photo", "vit_upload"
    layer, head, patch = "vit_layer", "vit_head", "vit_patch"
    fusion, discard, discard_rule, k = "vit_fusion", "vit_discard", "vit_discard_rule", "vit_k"
    last_click = "_vit_click"  # the patch last clicked on the chart, so one click picks it once
    # a Swin (windowed attention): stage, block in the stage, head, the query patch on the stage's grid
    swin_stage, swin_block, swin_head, swin_patch = (
        "vit_swin_stage",
        "vit_swin_block",
        "vit_swin_head",
        "vit_swin_patch",
    )
    swin_click = "_vit_swin_click"  # the point last clicked on the window chart (pixels), read once
    # charts (element keys; ``patch_map``'s selection is read as the click)
    image, probs, cls, heads, patch_map = "vit_image", "vit_probs", "vit_cls", "vit_heads", "vit_patch_map"
    rollout, last = "vit_rollout", "vit_last"
    swin_map = "vit_swin_map"  # the query's window over the image; its selection is read as the click

    OPTIONS: dict[str, tuple[str, ...]] = {
        source: ("digit", "shape", "photo", "upload"),
        shape: ("circle", "ring", "square", "cross", "diagonal", "triangle"),
        photo: ("china", "flower"),
        fusion: ("mean", "max", "min"),
    }
    DEFAULTS: dict[str, Any] = {
        source: "digit",
        digit: 1500,
        shape: "circle",
        photo: "china",
        model: "tiny-vit-digits",
        hub_id: "",
        fusion: "mean",
        discard: 0.0,
        discard_rule: "all-off-diagonal",
        k: 2,
        layer: 0,
        head: 0,
        patch: 0,
        swin_stage: 0,
        swin_block: 0,
        swin_head: 0,
        swin_patch: 0,
    }


class Captions:
    """The Captions page's keys (``app/views/captions/page.py``); ``view``, ``source``, ``scene``, ``search`` and ``beam`` are
    also its URL parameters (``app/url_params.py``). Prefixes + an object's number (0, 1): the drawn objects'
    ``shape``, ``colour``, ``size``, ``row`` and ``col``."""

    view, model, source, scene, upload = "cap_view", "cap_model", "cap_source", "cap_scene", "cap_upload"
    count, textured = "cap_count", "cap_textured"
    shape, colour, size, row, col = "cap_shape_", "cap_colour_", "cap_size_", "cap_row_", "cap_col_"
    search, beam, word, cell, mistake, open_mistake = (
        "cap_search",
        "cap_beam",
        "cap_word",
        "cap_cell",
        "cap_mistake",
        "cap_open_mistake",
    )
    last_click = "_cap_click"  # the cell last clicked on the large map, so one click picks it once
    # a pretrained captioner (ViT + GPT-2, BLIP): the typed Hub id or folder, the decoder layer and head (−1: the mean)
    hub_id, layer, head = "cap_hub_id", "cap_layer", "cap_head"
    # charts, tables and downloads (element keys)
    picture, panels, large, betas = "cap_picture", "cap_panels", "cap_large", "cap_betas"
    cell_words, cell_table = "cap_cell_words", "cap_cell_table"
    csv, mistakes, mistake_picture, mistake_panels = (
        "cap_csv",
        "cap_mistakes",
        "cap_mistake_picture",
        "cap_mistake_panels",
    )

    OPTIONS: dict[str, tuple[str, ...]] = {
        view: ("caption", "mistakes"),
        source: ("scene", "draw", "upload"),
        search: ("greedy", "beam"),
    }
    MEAN_HEADS = -1  # the head picker's "mean over heads"
    DEFAULTS: dict[str, Any] = {
        view: "caption",
        source: "scene",
        scene: 4,
        search: "greedy",
        beam: 3,
        model: "scene-captioner",
        hub_id: "",
        layer: None,
        head: MEAN_HEADS,
    }
    #: the drawing a session starts with: (shape, colour, size, row, column) of each object, and how many are shown
    DRAWING: tuple[tuple[str, str, str, int, int], ...] = (
        ("square", "blue", "large", 18, 20),
        ("circle", "red", "small", 46, 22),
    )
    DRAW_DEFAULTS: dict[str, Any] = {count: 2, textured: False}


class Positional:
    """The Positional page's keys (``app/views/positional/page.py``, ``app/views/positional/sections.py``):
    widgets, charts and downloads of each tab; ``tab`` is also the URL parameter that opens a tab."""

    tab = "pos_tab"
    # Sinusoidal tab
    sin_len = "pos_sin_len"
    sin_d = "pos_sin_d"
    sin_k = "pos_sin_k"
    sin_dims = "pos_sin_dims"
    sin_angles = "pos_sin_angles"
    sin_curves = "pos_sin_curves"
    sin_heatmap = "pos_sin_heatmap"
    sin_sim = "pos_sin_sim"
    sin_csv = "pos_sin_csv"
    sin_shift_table = "pos_sin_shift_table"
    # Learned tab
    learned_n = "pos_learned_n"
    learned_heatmap = "pos_learned_heatmap"
    learned_sim = "pos_learned_sim"
    learned_vs_sin = "pos_learned_vs_sin"
    learned_csv = "pos_learned_csv"
    # RoPE tab
    rope_d = "pos_rope_d"
    rope_n = "pos_rope_n"
    rope_m = "pos_rope_m"
    rope_k = "pos_rope_k"
    rope_pair = "pos_rope_pair"
    rope_pair_fig = "pos_rope_pair_fig"
    rope_table = "pos_rope_table"
    # ALiBi tab
    alibi_len = "pos_alibi_len"
    alibi_heads = "pos_alibi_heads"
    alibi_causal = "pos_alibi_causal"
    alibi_show = "pos_alibi_show"
    alibi_slopes = "pos_alibi_slopes"
    alibi_grid = "pos_alibi_grid"
    # Order blindness tab
    blind_text = "pos_blind_text"
    blind_seed = "pos_blind_seed"
    blind_layer = "pos_blind_layer"
    blind_head = "pos_blind_head"
    blind_setting = "pos_blind_setting"
    blind_orig = "pos_blind_orig"
    blind_shuf = "pos_blind_shuf"
    blind_perm = "pos_blind_perm"
    blind_errors = "pos_blind_errors"


class Step:
    """The Step by step page's keys (``app/views/step_by_step/page.py``, ``step_sections``, ``step_calculator``); ``query``
    and ``block`` are also its URL parameters (``app/url_params.py``)."""

    query, block, json = "step_query", "step_block", "step_json"
    # the six steps' tables and chart (``step_tables.show_vectors`` adds ``_short`` / ``_full``)
    q, k, v, z = "step_q", "step_k", "step_v", "step_z"
    raw, scaled, masked, weights, bar = "step_raw", "step_scaled", "step_masked", "step_weights", "step_bar"
    # the calculator: its size and mask, its result tables; ``calc`` prefixes each typed table
    # (``step_calc_q_3x2``: a new size starts from the example) and ``calc_scale`` the scale slider of each width
    calc_tokens, calc_width, calc_causal = "step_calc_tokens", "step_calc_width", "step_calc_causal"
    calc_raw, calc_scaled, calc_masked = "step_calc_raw", "step_calc_scaled", "step_calc_masked"
    calc_weights, calc_z = "step_calc_weights", "step_calc_z"
    calc, calc_scale = "step_calc_", "step_calc_scale_"


class Heads:
    """The Heads page's keys (``app/views/heads/page.py``, ``app/views/heads/sections.py``); ``tab`` and ``block``
    are also its URL parameters (``app/url_params.py``). Prefixes: ``display`` for the display and zoom
    controls (``long_view``), ``cmp_a`` / ``cmp_b`` for Compare's head pickers (``_layer``, ``_head``), ``cmp`` and
    ``sent`` for a chart per head or sentence (``A``, ``B``)."""

    tab, block, display = "heads_tab", "heads_block", "heads"
    model_view, large, grid_pills = (
        "heads_model_view",
        "heads_large",
        "heads_grid_pills",
    )  # pills: a phone's head buttons
    grid_box = "heads_grid_box"  # presenter mode: the container the grid of every head fills (the window's height)
    metric, metric_map, metrics_table = "heads_metric", "heads_metric_map", "heads_metrics_table"
    similarity, pairs = "heads_similarity", "heads_pairs"
    cmp_a, cmp_b, cmp, cmp_metrics = "heads_cmp_a", "heads_cmp_b", "heads_cmp_", "heads_cmp_metrics"
    text_a, text_b, sent, diff, sent_metrics = (
        "heads_text_a",
        "heads_text_b",
        "heads_sent_",
        "heads_diff",
        "heads_sent_metrics",
    )
    fusion, discard, discard_rule = "heads_fusion", "heads_discard", "heads_discard_rule"
    raw, rollout = "heads_raw", "heads_rollout"


class Pretraining:
    """The Pretraining objectives page's keys (``app/views/pretraining/page.py``); ``tab``, ``fill_text``,
    ``objectives_text``, ``objectives_layer``, ``cost_n``, ``cost_d``, ``finetune_steps`` and ``finetune_lr`` are
    also its URL parameters (``app/url_params.py``). Prefixes: ``fill_bars`` / ``fill_att`` per blank,
    ``finetune`` and ``nsp_inspect`` per moment (``before`` / ``after``)."""

    tab = "pretraining_tab"
    fill_text, fill_pick, fill_bars, fill_att = "fill_text", "fill_pick", "fill_bars_", "fill_att_"
    objectives_text, objectives_layer = "objectives_text", "objectives_layer"
    mask_mlm, mask_next, mask_span = "obj_mask_mlm", "obj_mask_next", "obj_mask_span"
    finetune_steps, finetune_lr, finetune_go = "finetune_steps", "finetune_lr", "finetune_go"
    finetune_result, finetune_change, finetune_colour, finetune = (
        "finetune_result",
        "finetune_change",
        "finetune_colour",
        "finetune_",
    )
    cost_n, cost_d, cost_table, cost_measure, cost_times = (
        "cost_n",
        "cost_d",
        "cost_table",
        "cost_measure",
        "cost_times",
    )
    cost_measured = "cost_measured"  # the (n, d) this session last asked to measure
    finetune_running = "finetune_running"  # the running fine-tune's held-out accuracy chart
    # next-sentence prediction and a classifier on [CLS] (app/views/pretraining/nsp.py; its job: services.NSP)
    nsp_steps, nsp_lr, nsp_go, nsp_result = "nsp_steps", "nsp_lr", "nsp_go", "nsp_result"
    nsp_examples, nsp_loss, nsp_curve_csv, nsp_shares = "nsp_examples", "nsp_loss", "nsp_curve_csv", "nsp_shares"
    nsp_change, nsp_cls_change, nsp_pair, nsp_inspect = "nsp_change", "nsp_cls_change", "nsp_pair", "nsp_inspect_"


class Explain:
    """The "Is attention the explanation?" page's keys (``app/views/explain/page.py``). Prefixes: ``text`` + the model's
    index in ``services.EXPLAIN_MODELS`` (each model keeps its own input), ``bars`` + a method id."""

    model, text, reference = "explain_model", "explain_text_", "explain_reference"
    steps, baseline, loo, special = "explain_steps", "explain_baseline", "explain_loo", "explain_special"
    layer, head, kind, runs = "explain_layer", "explain_head", "explain_kind", "explain_runs"
    heat, bars, rho, tau, swap, csv = (
        "explain_heat",
        "explain_bars_",
        "explain_rho",
        "explain_tau",
        "explain_swap",
        "explain_csv",
    )

    DEFAULTS: dict[str, Any] = {
        model: "tiny-gpt-stories",
        steps: 32,
        baseline: "zero",
        loo: "remove",
        special: False,
        kind: "permuted",
        runs: 20,
    }


class Scaling:
    """The Scaling page's keys (``app/views/scaling/page.py``)."""

    params_chart, compute_chart, table, download = (
        "scaling_params",
        "scaling_compute",
        "scaling_table",
        "scaling_download",
    )
    live_size, live_go, live_runs = "scaling_live_size", "scaling_live_go", "scaling_live_runs"  # live_runs: name → run


class Bertviz:
    """The bertviz views page's keys (``app/views/bertviz_views/page.py``); ``view`` and ``digit`` are also its URL
    parameters. ``download`` prefixes each view's download button."""

    view, digit, download = "bertviz_view", "bertviz_digit", "bertviz_download_"


class Lessons:
    """The Lessons page's keys (``app/views/lessons/page.py``, ``app/views/lessons/check.py``); ``lesson`` and
    ``step`` are also its URL parameters (``app/url_params.py``). Prefixes: ``prev`` / ``next`` per place (``top``,
    ``bottom``), ``goto`` per step, and per check ``row`` / ``again`` with the step's id."""

    lesson = "lesson"  # the saved lesson on screen, by id ("": the built-in one)
    builtin = "lesson_builtin"  # a saved lesson's "Back to the built-in lesson" button
    answers = "lesson_answers"  # {step id: the picked token position or option index} (knowledge_check.answers)
    step, steps_table, softmax_scale, softmax = (
        "lesson_step",
        "lesson_steps_table",
        "lesson_softmax_scale",
        "lesson_softmax",
    )
    prev, next, goto, row, again = "lesson_prev_", "lesson_next_", "lesson_goto_", "lesson_row_", "lesson_again_"
    region, look = "lesson_region_", "lesson_look_"  # the captioning check's region pick and its revealed map


class Draft:
    """A teacher's lesson (issue 21, 3): the draft in this session, "Add this view to my lesson" (the sidebar, every
    page: ``app/views/lessons/draft.py``), the editor and the Lessons page's tabs (``app/views/lessons/page.py``).
    Prefixes + a step's id: ``up``, ``down``, ``delete``, and the ``edit_*`` form of each step."""

    lesson, saved, owned, said = "draft_lesson", "draft_saved", "draft_owned", "draft_said"
    tab = "lessons_tab"  # the Lessons page's tabs: take a lesson / write a lesson
    add_open, add_form, add = "draft_add_open", "draft_add_form", "draft_add"
    add_title, add_note, add_question, add_options, add_right = (
        "draft_add_title",
        "draft_add_note",
        "draft_add_question",
        "draft_add_options",
        "draft_add_right",
    )
    # the add box's kind of question (multiple choice, or "which token does this head look at?" on a text page)
    # and that question's query word (a token position of the sentence on screen)
    add_kind, add_word = "draft_add_kind", "draft_add_word"
    title, save, download, upload, use_upload = (
        "draft_title",
        "draft_save",
        "draft_download",
        "draft_upload",
        "draft_use_upload",
    )
    builtin, clear, copy, edit_shared = "draft_builtin", "draft_clear", "draft_copy", "draft_edit_shared"
    up, down, delete = "draft_up_", "draft_down_", "draft_delete_"
    edit_form, edit_title, edit_note, edit_save = (
        "draft_edit_form_",
        "draft_edit_title_",
        "draft_edit_note_",
        "draft_edit_save_",
    )
    edit_question, edit_options, edit_right = "draft_edit_question_", "draft_edit_options_", "draft_edit_right_"
    # a step's knowledge check of any kind (``app/views/lessons/check_editor.py``): the kind, then the file's keys
    edit_kind, edit_explain, edit_model, edit_text = (
        "draft_edit_kind_",
        "draft_edit_explain_",
        "draft_edit_model_",
        "draft_edit_text_",
    )
    edit_word, edit_occurrence, edit_layer, edit_head = (
        "draft_edit_word_",
        "draft_edit_occurrence_",
        "draft_edit_layer_",
        "draft_edit_head_",
    )
    edit_causal, edit_expect, edit_captioner, edit_scene = (
        "draft_edit_causal_",
        "draft_edit_expect_",
        "draft_edit_captioner_",
        "draft_edit_scene_",
    )


class Train:
    """The Train live page's keys (``app/views/train/page.py``): ``prefix`` + a setting's name (``train_task``, ...)."""

    prefix = "train_"


class Explore:
    """The Explore page's keys (``app/views/explore/page.py``) and its panels' (``write_more``, ``next_token_panel``,
    ``ablation_panel``); ``tab``, ``block``, ``decode`` and ``write_request`` are also URL parameters
    (``app/url_params.py``)."""

    tab, block = "explore_tab", "explore_block"
    grid_pills = "explore_grid_pills"  # a button per head under the picture of the layer's heads
    map_box = "explore_map_box"  # presenter mode: the container the head map fills
    main_map, query_bars, mask = "main_heatmap", "query_row_bars", "mask_"  # charts; ``mask`` + the causal flag
    decode = "explore_decode"  # (model, text, token limit, decoding settings) of an encoder-decoder
    decode_form, decode_prefix = "decode_form", "decode"  # its "Decode again" form; prefix of that form's widgets
    write_request = "write_request"  # Write more: the settings asked, with the text and model they were for
    write_form, write_prefix, write_chart = "write_form", "write", "write_chart"
    long_example = "long_example"  # the "Try a long text" button
    temperature, next_chart = "next_token_temperature", "next_token_chart"  # the next-token panel
    ablation_block, ablation_heads = "ablation_block", "ablation_heads"
    ablation_layers, ablation_keep = "ablation_layers", "ablation_keep_only"
    ablation_chart, ablation_csv = "ablation_next_token", "ablation_csv"


class Look:
    """How every page looks in this browser (``app/ui/theme.py``), and the highlighted token
    (``app/ui/linked_tokens.py``); ``present``, ``hide`` and ``focus`` are also URL parameters."""

    present = "present"  # presenter mode
    hide = "hide"  # the controls a link hides (a frozenset of url_params.HIDEABLE names: url_state.hidden)
    compact = "compact"  # the phone layout
    download = "chart_download_format"  # PNG or SVG from every chart's camera button
    focus = "focus"  # the token highlighted on every text page
    source = "_chart_source"  # + a page's script hash: the model and sentence its charts show (charts.set_source)


class Share:
    """The sidebar's "Share this view" box (``app/ui/share_box.py``): the teacher's choices for the link
    (not part of the link itself) and the full-screen QR code."""

    lock = "share_lock"  # the teacher's "lock in the link" choice
    present_link = "share_present"  # the teacher's "open in presenter mode" choice for the shared link
    qr_button = "share_qr_big"
    qr_big = "share_qr_full"  # the dialog's image container (its CSS fits the code to the window)
    link = "share_link"  # the link the box showed last (what the full-screen QR code encodes)
    open = "share_open"  # the box is open (its expander's state)


class Url:
    """``app/url_state.py``'s own keys (no widget, no link): what it last wrote to the URL and read from it."""

    page = "_url_page"  # the page the last full run showed (a file stem of app/views/)
    written = "_url_written"  # {name: value} this session last wrote to the URL (None: nothing yet)
    before = "_url_written_before"  # the write before that (see restore: a rerun that crossed our write)
    applied = "_url_applied"  # the names this run's restore took from the link (url_state.from_link)
    slot = "_url_share_slot"  # the sidebar placeholder the share box is drawn into
    run = "_url_run"  # full runs of this session (the share box is drawn once per run and link)
    drawn = "_url_drawn"  # (run, link) of the share box on screen


class Examples:
    """The Examples picker's keys (``app/ui/examples.py``)."""

    applied = "example_applied"  # (set name, index) of the example last put in the text box


class Offline:
    """The offline lesson pack's buttons (``app/views/lessons/offline_pack.py``): ``build`` / ``download`` + a place
    (``walk``, ``draft``, ``view``); ``built``: {place: (what the pack is of, its HTML)} kept in this session."""

    build, download, built = "offline_build_", "offline_download_", "offline_built"


#: The sentence is not here: its text box gets ``value=DEFAULT_TEXT`` instead. A default put in session
#: state was lost in the browser when a page opened without ``?text=`` in its URL (the bound widget
#: fell back to its own empty default); see ``current_text``.
DEFAULTS: dict[str, Any] = {
    K.model: DEFAULT_MODEL,
    K.hub_id: "",
    K.layer: 0,
    K.head: 0,
    K.max_tokens: 128,
}


def landing_request() -> tuple[str, str, int]:
    """``(model_id, text, max_tokens)`` of the landing page's first chart with no link: what the launcher's child
    process traces while the server starts (:mod:`engine.prefetch`; the mask is the model's own)."""
    return DEFAULTS[K.model], DEFAULT_TEXT, DEFAULTS[K.max_tokens]


#: keyword arguments every shared widget gets
PERSIST: dict[str, Any] = {"persist_state": "session"}
SHARE: dict[str, Any] = PERSIST  # formerly bound to the URL too; app.url_state now writes every link


def init() -> None:
    """Run by the entry point on every rerun: defaults once per session, and shared values kept alive.

    Streamlit drops a widget's value when the page that drew it is left (measured in the browser:
    the token limit fell to the widget's minimum and the sentence came up empty on the next page).
    Writing each shared key back to itself on every run keeps the user's choice for the next page.
    The widgets' ``persist_state="session"`` alone does not replace this: without the write-back, Chromium
    lost the layer picked on Explore and Explore's in-app link to Positional stopped writing the tab it
    opened (measured with ``tests/e2e/test_page_switch_e2e.py`` and ``test_share_link_e2e.py``, issue 20).
    """
    defaults(DEFAULTS)
    for key in (*DEFAULTS, K.text, K.causal):
        keep(key)


def default(key: str, value: Any) -> Any:
    """Give ``key`` the value a session starts with: written only while the session has no value for it, so a
    user's choice, a link's value or a widget's own value is never overwritten. Returns the session's value.

    Use it for a constant (or cheap) value; :func:`default_from` when making the value costs something or must
    happen once (a lookup, a random id); :func:`clamp` or :func:`choose` when the value must also stay inside
    bounds or options (they take the start value too).
    """
    if key not in st.session_state:
        st.session_state[key] = value
    return st.session_state[key]


def defaults(values: Mapping[str, Any]) -> None:
    """:func:`default` for each key of ``values`` (a page's ``DEFAULTS`` table)."""
    for key, value in values.items():
        default(key, value)


def default_from(key: str, make: Callable[[], Any]) -> Any:
    """:func:`default` with a value made by ``make()``, called only while the session has no value for ``key``
    (reading the link or the browser's cookie, a random id, the first query token of a sentence)."""
    if key not in st.session_state:
        st.session_state[key] = make()
    return st.session_state[key]


_FIRST = object()


def choose(key: str, options: Collection[Any], fallback: Any = _FIRST) -> Any:
    """Keep a choice among ``options`` before its widget is drawn: a value that is none of them (a forged link,
    an old session, a model or block this one does not have, nothing yet) becomes ``fallback``, by default the
    first option. Returns the session's value.

    Use it for radios, select boxes and segmented controls with fixed options; :func:`clamp` for a number in
    a range.
    """
    if st.session_state.get(key) not in options:
        st.session_state[key] = [*options][0] if fallback is _FIRST else fallback
    return st.session_state[key]


def keep(key: str, convert: Callable[[Any], Any] | None = None) -> None:
    """Write ``key``'s value back to itself (through ``convert``: ``bool``), when the session has one.

    Streamlit dropped some widgets' values when the page that drew them was left, even with
    ``persist_state="session"`` (see :func:`init`); this write keeps them. Use it only for a key measured to
    need it: every write re-sends the value to the browser (see :func:`settle`).
    """
    if key in st.session_state:
        value = st.session_state[key]
        st.session_state[key] = convert(value) if convert is not None else value


def bounded(value: Any, low: int, high: int) -> int:
    """``value`` as an int inside ``[low, high]`` (server-side check; widget bounds are not trusted)."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return low
    return min(max(number, low), high)


def settle(key: str, value: Any) -> Any:
    """Put ``value`` in session state before its widget is drawn, but only when it differs.

    Any write re-sends the value to the browser, which undoes a key press made there while the run
    was going (measured: the calculator's scale slider lost arrow presses); an unchanged value is left alone.
    """
    if st.session_state.get(key) != value:
        st.session_state[key] = value
    return value


def clamp(key: str, low: int, high: int, start: Any = None) -> int:
    """Keep a setting inside ``[low, high]`` before its widget is drawn (e.g. a layer after a model switch).

    ``start``: the value a session starts with (``low`` when None); a preset or stale value outside the bounds
    (an old session, a forged link) is clamped here, server-side, instead of failing in the widget.
    """
    return settle(key, bounded(st.session_state.get(key, low if start is None else start), low, high))


def current_text() -> str:
    """The shared sentence: what the user typed, or the default before any text box was drawn."""
    return st.session_state.get(K.text, DEFAULT_TEXT) or ""
