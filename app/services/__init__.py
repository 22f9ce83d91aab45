"""The only app package that touches the engine's loading and tracing, behind Streamlit caches.

Pages and components call ``from app import services`` and then ``services.<name>``; every such name
is re-exported here from the module that holds it:

- ``core``: the shared model cache (``get_model``, the one ``st.cache_resource`` for models, used
  inside this package only; pages get ``get_card``'s plain ``ModelCard``),
  ``get_trace``, ``friendly_error``, ``warm_up``, ``session_id`` and the bound on concurrent jobs;
- ``long_work``: this session's jobs on the long-work lane (``engine.jobs``: fine-tuning, timing,
  writing), their status for a polling fragment, and cancelling them;
- ``explain``: the "Is attention the explanation?" page (importances, their agreement, Jain & Wallace's test);
- ``generate``: Explore's "Write more" (a decoder's continuation, written on the long-work lane, and
  its attention);
- ``lessons``: the Lessons page's knowledge checks (one head's query row) and closed vocabularies;
- ``pretraining``: the Pretraining objectives page (fill-in-the-blank, objectives, the cost of attention);
- ``rooms``: a class in one room (issue 21): this process's class store (``app.store``) and the "which token?"
  question built from a real head;
- ``maps``: the figure layer's cached maps (one head exact or pooled, one layer's thumbnails);
- ``offline_pack``: what a lesson link's view shows in an offline lesson pack (a head's map, an alignment map, or
  why there is none);
- one module per page: ``heads`` (ablation panel and whole-model views), ``bahdanau``, ``vit``,
  ``positional``, ``step``, ``bertviz``, ``train``, ``scaling`` (the Scaling page's curves and live run), ``captions`` (the Captions page and the lesson's
  "where will it look?" check).

Modules inside the package import shared helpers from ``app.services.core``, never from here.
"""

from app.services.bahdanau import (
    BAHDANAU_MAX_TOKENS,
    BAHDANAU_MODELS,
    TRANSFORMER_TRANSLATOR,
    bahdanau_agreement,
    bahdanau_disagreement,
    bahdanau_parameters,
    bahdanau_reference,
    bahdanau_step,
    bahdanau_trace,
    bahdanau_vocabulary,
)
from app.services.bertviz import bertviz_view, get_digit_trace
from app.services.captions import (
    CAPTION_IMAGE_SIZE,
    CAPTION_MAX_BEAM,
    CAPTION_MODEL,
    HELD_OUT_SCENES,
    PRETRAINED_UPLOAD_SIZE,
    CaptionRequest,
    DrawnObject,
    as_seen,
    caption_attention,
    caption_layers,
    caption_mistakes,
    caption_picture,
    caption_trace,
    is_pretrained_captioner,
    read_caption_upload,
    where_it_looks,
)
from app.services.core import (
    MAX_JOBS,
    device_label,
    friendly_error,
    get_card,
    get_model,
    get_trace,
    has_trace,
    list_models,
    model_loaded,
    policy,
    request_key,
    session_id,
    shared_figure,
    trace_is_quick,
    warm_up,
)
from app.services.explain import (
    EXPLAIN_EXAMPLES,
    EXPLAIN_MAX_TOKENS,
    EXPLAIN_MODELS,
    EXPLAIN_REFERENCE,
    Agreement,
    explain_agreement,
    explain_has_swap,
    explain_importance,
    explain_is_cached,
    explain_layout,
    explain_methods,
    explain_prediction,
    explain_swap,
)
from app.services.generate import get_generation, request_generation
from app.services.heads import (
    HEAD_BLOCKS,
    MODEL_VIEW_CELLS,
    SIMILARITY_MAX_HEADS,
    SIMILARITY_MAX_TOKENS,
    attention_block,
    block_is_square,
    block_loader,
    get_ablation,
    get_head_layout,
    get_next_token,
    head_metrics_table,
    head_similarity,
    heads_attention,
    model_view_tiles,
    rollout_maps,
)
from app.services.induction import (
    INDUCTION,
    INDUCTION_MODEL,
    induction_options,
    induction_shipped,
    induction_start,
    induction_status,
    run_document,
)
from app.services.lessons import (
    LESSON_MAX_TOKENS,
    QueryRow,
    alignment_row,
    find_token,
    lesson_row,
    model_vocabulary,
    unknown_words,
)
from app.services.long_work import FINETUNE, MEASURE, NSP, SCALE, WRITE, cancel_long, long_status
from app.services.maps import grid_cells, grid_is_quick, head_view, layer_grid
from app.services.offline_pack import PACK_CELLS, PACK_MAX_TOKENS, Alignment, HeadMap, NoChart, PackView, pack_view
from app.services.positional import (
    pos_alibi,
    pos_learned_table,
    pos_order_blindness,
    pos_rope,
    pos_shift_check,
    pos_sinusoidal,
)
from app.services.pretraining import (
    MLM_MODEL,
    NEXT_TOKEN_MODEL,
    SEQ2SEQ_MODEL,
    blank_attention,
    finetune_start,
    get_fill_mask,
    layer_costs,
    measure_start,
    measured_costs,
    mlm_vocabulary,
    nsp_examples,
    nsp_start,
    objective_examples,
)
from app.services.request import ExplainRequest, TraceRequest
from app.services.rooms import (
    BROWSER_COOKIE,
    BROWSER_COOKIE_S,
    HEAD_CHOICES,
    PREDICT_MAX_TOKENS,
    PredictQuestion,
    browser_cookie_missing,
    browser_id,
    class_store,
    head_question,
    lesson_store,
    predict_question,
)
from app.services.scaling import (
    live_estimate_s,
    live_run,
    live_sizes,
    refit,
    scaling_curves,
    scaling_json,
    scaling_start,
)
from app.services.step import calculator_example, calculator_matrix, calculator_steps, query_steps
from app.services.train import (
    session_models,
    train_answer,
    train_checkpoint,
    train_control,
    train_estimate,
    train_manager,
    train_options,
    train_progress,
    train_register,
    train_start,
    train_task_info,
)
from app.services.vit import (
    get_vision_trace,
    swin_window_row,
    vit_cls_maps,
    vit_digit_count,
    vit_digit_held_out,
    vit_digit_label,
    vit_last_layer_map,
    vit_occlusion,
    vit_patch_map,
    vit_read_upload,
    vit_rollout_map,
    vit_sample,
    vit_windowed,
)

__all__ = [
    # core
    "MAX_JOBS",
    "TraceRequest",
    "device_label",
    "friendly_error",
    "get_card",
    "get_model",
    "get_trace",
    "has_trace",
    "list_models",
    "model_loaded",
    "policy",
    "request_key",
    "session_id",
    "shared_figure",
    "trace_is_quick",
    "warm_up",
    # long work
    "FINETUNE",
    "MEASURE",
    "NSP",
    "SCALE",
    "WRITE",
    "cancel_long",
    "long_status",
    # explain
    "Agreement",
    "EXPLAIN_EXAMPLES",
    "EXPLAIN_MAX_TOKENS",
    "EXPLAIN_MODELS",
    "EXPLAIN_REFERENCE",
    "ExplainRequest",
    "explain_agreement",
    "explain_has_swap",
    "explain_importance",
    "explain_is_cached",
    "explain_layout",
    "explain_methods",
    "explain_prediction",
    "explain_swap",
    # generate
    "get_generation",
    "request_generation",
    # scaling
    "live_estimate_s",
    "live_run",
    "live_sizes",
    "refit",
    "scaling_curves",
    "scaling_json",
    "scaling_start",
    # pretraining
    "MLM_MODEL",
    "NEXT_TOKEN_MODEL",
    "SEQ2SEQ_MODEL",
    "blank_attention",
    "finetune_start",
    "get_fill_mask",
    "layer_costs",
    "measure_start",
    "measured_costs",
    "mlm_vocabulary",
    "nsp_examples",
    "nsp_start",
    "objective_examples",
    # heads
    "HEAD_BLOCKS",
    "MODEL_VIEW_CELLS",
    "SIMILARITY_MAX_HEADS",
    "SIMILARITY_MAX_TOKENS",
    "attention_block",
    "block_loader",
    "block_is_square",
    "get_ablation",
    "get_head_layout",
    "get_next_token",
    "head_metrics_table",
    "head_similarity",
    "heads_attention",
    "model_view_tiles",
    "rollout_maps",
    # lessons
    "LESSON_MAX_TOKENS",
    "QueryRow",
    "alignment_row",
    "find_token",
    "lesson_row",
    "model_vocabulary",
    "unknown_words",
    # rooms
    "BROWSER_COOKIE",
    "BROWSER_COOKIE_S",
    "HEAD_CHOICES",
    "PREDICT_MAX_TOKENS",
    "PredictQuestion",
    "browser_cookie_missing",
    "browser_id",
    "class_store",
    "lesson_store",
    "head_question",
    "predict_question",
    # maps
    "grid_cells",
    "grid_is_quick",
    "head_view",
    "layer_grid",
    # offline pack
    "PACK_CELLS",
    "PACK_MAX_TOKENS",
    "Alignment",
    "HeadMap",
    "NoChart",
    "PackView",
    "pack_view",
    # bahdanau
    "BAHDANAU_MAX_TOKENS",
    "BAHDANAU_MODELS",
    "TRANSFORMER_TRANSLATOR",
    "bahdanau_agreement",
    "bahdanau_disagreement",
    "bahdanau_parameters",
    "bahdanau_reference",
    "bahdanau_step",
    "bahdanau_trace",
    "bahdanau_vocabulary",
    # vit
    "get_vision_trace",
    "vit_cls_maps",
    "vit_digit_count",
    "vit_digit_held_out",
    "vit_digit_label",
    "vit_last_layer_map",
    "vit_occlusion",
    "vit_patch_map",
    "vit_read_upload",
    "vit_rollout_map",
    "vit_sample",
    "vit_windowed",
    "swin_window_row",
    # captions
    "CAPTION_IMAGE_SIZE",
    "CAPTION_MAX_BEAM",
    "CAPTION_MODEL",
    "HELD_OUT_SCENES",
    "PRETRAINED_UPLOAD_SIZE",
    "CaptionRequest",
    "DrawnObject",
    "as_seen",
    "caption_attention",
    "caption_layers",
    "caption_mistakes",
    "caption_picture",
    "caption_trace",
    "is_pretrained_captioner",
    "read_caption_upload",
    "where_it_looks",
    # positional
    "pos_alibi",
    "pos_learned_table",
    "pos_order_blindness",
    "pos_rope",
    "pos_shift_check",
    "pos_sinusoidal",
    # step
    "calculator_example",
    "calculator_matrix",
    "calculator_steps",
    "query_steps",
    # bertviz
    "bertviz_view",
    "get_digit_trace",
    # train
    "session_models",
    "train_answer",
    "train_checkpoint",
    "train_control",
    "train_estimate",
    "train_manager",
    "train_options",
    "train_progress",
    "train_register",
    "train_start",
    "train_task_info",
    # induction heads (Train live's tab)
    "INDUCTION",
    "INDUCTION_MODEL",
    "induction_options",
    "induction_shipped",
    "induction_start",
    "induction_status",
    "run_document",
]
