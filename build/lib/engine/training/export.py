"""What a finished live-training job offers: a read-only Model for the other pages, a zipped checkpoint,
and the model's answer to a typed input next to the correct one.

The answer is greedy decoding: after the prompt, take ``argmax`` of the last position's logits, append
it, repeat. For the question–answer tasks the correct answer is re-derived by the task itself
(``task.answer``), for translation by the rule-based grammar, so "right" is never the model's opinion.
"""

from __future__ import annotations

import copy
import io
import json
import re
import zipfile
from dataclasses import dataclass

import torch
from safetensors.torch import save as save_safetensors

from engine.checkpoint import FORMAT, model_card, unique_tensors
from engine.corpora.translation import tokenize as fr_tokenize
from engine.corpora.translation import translate
from engine.families.transformer.adapter import trace_input
from engine.model import Model, freeze
from engine.records import ModelSpec
from engine.traces.attention import AttentionTrace
from engine.training.job_settings import TASK_LABELS
from engine.vocab import BOS_ID, EOS_ID, SEP_ID, SPECIALS, decoder_input

#: a special token written out (``<sep>``), a French elision (``l'``), a word, or one other character
_WORD = re.compile(r"<[a-z]+>|\w+'|\w+|[^\w\s]")


def split_words(text: str) -> list[str]:
    """Lowercase tokens of ``text`` for the trained models: specials such as ``<sep>`` stay whole."""
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class TrainedTextAdapter:
    """Traces a freshly trained Transformer for ``engine.trace`` (the Explore page); ``<bos>`` leads."""

    causal: bool = True

    def trace(self, model: Model, text: str, *, causal: bool | None, max_tokens: int) -> AttentionTrace:
        inp = decoder_input(
            text,
            model.tokenizer,
            max_tokens,
            model.max_positions,
            split=lambda t: [w for w in split_words(t) if w != "<bos>"],
        )
        return trace_input(model, inp, self.causal if causal is None else causal)


def runtime_model(job, model_id: str) -> Model:
    """A read-only :class:`Model` holding a copy of a finished job's network (for ``register_runtime``)."""
    module = freeze(copy.deepcopy(job.model).eval())
    device = next(module.parameters()).device
    s = job.settings
    spec = ModelSpec(
        id=model_id,
        family="decoder" if s.causal else "encoder",
        label=f"Trained here: {s.task}, {s.n_layers} layer{'s' * (s.n_layers > 1)} × {s.n_heads} "
        f"head{'s' * (s.n_heads > 1)} (this session)",
        offline=True,
        description=f"Trained live on the {TASK_LABELS[s.task]} task in this session.",
    )
    return Model(
        spec=spec,
        module=module,
        tokenizer=job.task.vocab,
        adapter=TrainedTextAdapter(causal=s.causal),
        device=device,
        max_positions=module.cfg.max_len,
        info={"params": job.n_params},
        default_causal=bool(s.causal),
    )


def checkpoint_zip(job, name: str = "trained") -> bytes:
    """``name.safetensors`` + ``name.json`` + ``name.md``, zipped in memory (readable by ``load_checkpoint``)."""
    snaps = job.progress().snapshots
    last = snaps[-1] if snaps else None
    tensors = {k: v.detach().to("cpu").contiguous() for k, v in unique_tensors(job.model).items()}
    card = {
        "description": f"Trained live in Attention Playground on the {TASK_LABELS[job.settings.task]} task.",
        "data": job.settings.task,
        "steps": last.step if last else 0,
        "seed": job.settings.seed,
        "wall_time_s": round(last.elapsed_s, 2) if last else 0.0,
        "device": last.device if last else "cpu",
        "final_metrics": {"loss": last.eval_loss, last.metric_name: last.metric} if last else {},
        "settings": job.settings.to_dict(),
        "family": "decoder" if job.settings.causal else "encoder",
        "params": sum(t.numel() for t in tensors.values()),
    }
    document = {
        "format": FORMAT,
        "kind": "transformer",
        "model_config": job.model.cfg.to_dict(),
        "vocab": job.task.vocab.to_dict(),
        "metadata": card,
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(
            f"{name}.safetensors", save_safetensors(tensors, metadata={"format": FORMAT, "kind": "transformer"})
        )
        zf.writestr(f"{name}.json", json.dumps(document, indent=2, allow_nan=False, ensure_ascii=False) + "\n")
        zf.writestr(f"{name}.md", model_card(name, document))
    return buffer.getvalue()


@dataclass(frozen=True)
class Answer:
    """The model's answer to a typed input.

    Attributes:
        prompt: the tokens the model read.
        model: what it wrote (greedy).
        correct: the right answer (empty when there is no single right answer, e.g. a story).
        right: per answer position, whether the model matched ``correct``.
    """

    prompt: tuple[str, ...]
    model: tuple[str, ...]
    correct: tuple[str, ...]
    right: tuple[bool, ...]


def _symbols(task, text: str) -> list[str]:
    words = split_words(text.replace(",", " "))
    if len(words) == 1 and len(words[0]) > 1 and words[0].isalpha():
        words = list(words[0])  # "acb" → a c b
    alphabet = task.vocab.tokens[len(SPECIALS) : len(SPECIALS) + task.n_symbols]
    bad = [w for w in words if w not in alphabet]
    if bad:
        raise ValueError(f"use only the letters {alphabet[0]}–{alphabet[-1]}; not understood: {', '.join(bad[:5])}")
    return words


@torch.no_grad()
def _greedy(job, ids: list[int], n: int, stop_at_eos: bool = False) -> list[int]:
    model, causal = job.model, job.settings.causal
    device = next(model.parameters()).device
    out: list[int] = []
    for _ in range(n):
        window = (ids + out)[-model.cfg.max_len :]
        logits = model(torch.tensor([window], device=device), causal=causal, attn_impl="sdpa")  # (1, T, V)
        nxt = int(logits[0, -1].argmax())
        if stop_at_eos and nxt == EOS_ID:
            break
        out.append(nxt)
    return out


def answer(job, text: str) -> Answer:
    """Run a finished job's model on ``text`` and compare with the right answer.

    Raises:
        ValueError: the input does not fit the task (wrong letters, wrong length, empty), with a message.
    """
    task, vocab, name = job.task, job.task.vocab, job.settings.task
    if not isinstance(text, str) or not text.strip():
        raise ValueError("type something first")
    job.model.eval()
    if name in ("copy", "reverse", "sort"):
        words = _symbols(task, text)
        if len(words) != task.length:
            raise ValueError(
                f"type exactly {task.length} letters (the model was trained on {task.length}), got {len(words)}"
            )
        x = torch.tensor([vocab.encode(words)])  # (1, L)
        prompt = [BOS_ID, *x[0].tolist(), SEP_ID]
        got, want = _greedy(job, prompt, task.length), task.answer(x)[0].tolist()
    elif name == "previous-token":
        words = _symbols(task, text)
        if not 1 <= len(words) <= task.length:
            raise ValueError(f"type 1 to {task.length} letters, got {len(words)}")
        prompt = [BOS_ID, *vocab.encode(words)]
        with torch.no_grad():
            logits = job.model(
                torch.tensor([prompt]).to(next(job.model.parameters()).device),
                causal=job.settings.causal,
                attn_impl="sdpa",
            )  # (1, T, V)
        got, want = logits[0, 1:].argmax(-1).tolist(), prompt[:-1]
    elif name == "induction":
        words = _symbols(task, text)
        if not task.shortest <= len(words) <= task.length or len(set(words)) != len(words):
            raise ValueError(f"type {task.shortest} to {task.length} different letters (the run to repeat)")
        run = vocab.encode(words)
        prompt = [BOS_ID, *run, run[0]]  # the run, then the start of its repeat
        got, want = _greedy(job, prompt, len(run) - 1), run[1:]
    elif name == "translation":
        words = split_words(text)
        prompt = [BOS_ID, *vocab.encode(words), SEP_ID]
        got = _greedy(job, prompt, 24, stop_at_eos=True)
        try:
            want = vocab.encode(fr_tokenize(translate(text)))
        except ValueError:
            want = []  # not a sentence of the toy grammar: no reference answer
    else:  # stories: a continuation, no single right answer
        prompt = [BOS_ID, *vocab.encode(split_words(text))]
        got, want = _greedy(job, prompt, 30, stop_at_eos=True), []
    right = tuple(i < len(got) and got[i] == w for i, w in enumerate(want))
    return Answer(tuple(vocab.decode(prompt)), tuple(vocab.decode(got)), tuple(vocab.decode(want)), right)
