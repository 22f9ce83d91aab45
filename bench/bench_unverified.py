"""How many of transformers' causal-LM families outside the table pass the load-time probe, on tiny configs.

For each ``model_type`` of ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` that the family table lacks: its config class with
every size field it has made small (:data:`SMALL`), a random model saved with the offline byte-level tokenizer, and
``engine.load`` of the folder (:mod:`engine.families.hf_text.unverified`: trace one probe, compare with eager
attention). Each family ends in one of: passes the probe, refused by it (the reason), or no tiny model built here
(a config that needs other sizes or fails its own forward pass, a composite one, over :data:`LIMIT_S` seconds).

    python -m bench.bench_unverified            # ~2-3 min on 2 cores; prints a table and the counts
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

LIMIT_S = 20
#: size fields of transformers' configs and the small value each gets (where the config has the field)
SMALL = {
    **dict.fromkeys(("hidden_size", "n_embd", "d_model", "dim", "embed_dim", "model_dim"), 32),
    **dict.fromkeys(("num_hidden_layers", "n_layer", "n_layers", "num_layers"), 2),
    **dict.fromkeys(("num_attention_heads", "n_head", "n_heads", "num_heads"), 4),
    **dict.fromkeys(("num_key_value_heads", "n_kv_heads", "num_kv_heads", "multi_query_group_num"), 2),
    **dict.fromkeys(
        ("intermediate_size", "ffn_dim", "n_inner", "d_ff", "ffn_hidden_size", "intermediate_size_mlp"), 64
    ),
    **dict.fromkeys(("moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size"), 16),
    **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"), 4),
    **dict.fromkeys(("num_experts_per_tok", "moe_topk", "top_k"), 2),
    **dict.fromkeys(("max_position_embeddings", "n_positions", "max_seq_len"), 128),
    "head_dim": 8,
    "is_decoder": True,  # BERT-likes: a causal LM checkpoint of theirs masks future tokens
}


class TooSlow(Exception):
    pass


def _alarm(*_):
    raise TooSlow


def one(kind: str, tokenizer, root: Path) -> tuple[str, str]:
    """``(outcome, detail)`` of one family: ``"pass"``, ``"refused"`` or ``"not built"``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    import engine
    from engine.records import ModelUnavailableError

    try:
        cls = type(AutoConfig.for_model(kind))
        fields = cls().to_dict()
        small = {k: v for k, v in SMALL.items() if k in fields}
        eos = tokenizer.eos_token_id
        config = cls(**small, vocab_size=len(tokenizer), bos_token_id=eos, eos_token_id=eos, pad_token_id=eos)
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config).eval()
        if sum(p.numel() for p in model.parameters()) > 5_000_000:
            return "not built", "the tiny config is still over 5 M parameters"
        with torch.no_grad():  # a tiny config whose sizes do not fit together fails here, before the engine
            model(input_ids=torch.tensor([tokenizer("The cat sat on the mat.")["input_ids"]]))
        model.save_pretrained(root / kind)
        tokenizer.save_pretrained(root / kind)
    except (Exception, TooSlow) as err:  # noqa: BLE001 — any failure to build is this family's outcome
        return "not built", f"{type(err).__name__}: {str(err)[:120]}"
    try:
        engine.load(str(root / kind))
        return "pass", ""
    except ModelUnavailableError as err:
        return "refused", str(err).split("cannot be read here: ")[-1].split(". ", 1)[-1][:140]
    except (Exception, TooSlow) as err:  # noqa: BLE001 — an error the loader did not name is a failure too
        return "refused", f"unnamed {type(err).__name__}: {str(err)[:120]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated model types (default: every one)")
    args = parser.parse_args(argv)
    import logging

    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    from engine.families import HUB_TYPES
    from engine.families.hf_text.tiny_gpt2 import build_tokenizer

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    logging.disable(logging.WARNING)
    kinds = [k for k in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES if k not in HUB_TYPES]
    kinds = [k for k in kinds if k in args.only.split(",")] if args.only else kinds
    tokenizer, outcomes, start = build_tokenizer(), {}, time.monotonic()
    signal.signal(signal.SIGALRM, _alarm)
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            signal.alarm(LIMIT_S)
            try:
                outcomes[kind] = one(kind, tokenizer, Path(tmp))
            except TooSlow:
                outcomes[kind] = ("not built", f"over {LIMIT_S} s")
            finally:
                signal.alarm(0)
            print(f"| {kind} | {outcomes[kind][0]} | {outcomes[kind][1]} |", flush=True)
    counts = Counter(o for o, _ in outcomes.values())
    print(
        f"\ntransformers {transformers.__version__}: {len(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)} causal-LM model types, "
        f"{sum(k in HUB_TYPES for k in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)} in the table; of the {len(kinds)} others "
        f"{counts['pass']} pass the probe, {counts['refused']} are refused, {counts['not built']} have no tiny model "
        f"built here ({time.monotonic() - start:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
