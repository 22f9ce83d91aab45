r"""An image captioner with soft attention ("Show, Attend and Tell", Xu et al., 2015), step by step.

A small conv-net turns the image into an L×L grid of feature vectors ``a(i)`` (row-major cells
``i = 0 … L²−1``); an LSTM writes the caption one word per step and, before each step, looks at the grid::

    a(i)    = CNN(image ⊕ coordinates)[cell i]            feature of grid cell i           [d_feat]
    h(0), c(0) = tanh(W_h ā), tanh(W_c ā)                  ā = mean_i a(i)
    e(t, i) = vᵀ tanh(W h(t−1) + U a(i))                   additive (Bahdanau) energy
    α(t, i) = softmax_i e(t, i)                            where the model looks for word t
    β(t)    = σ(f_β(h(t−1)))                               gate: how much of the image word t uses
    z(t)    = β(t) Σ_i α(t, i) a(i)                        gated context                    [d_feat]
    h(t), c(t) = LSTM([E y(t−1); z(t)], (h(t−1), c(t−1)))
    p(y(t)) = softmax(W_o tanh(E y(t−1) + L_h h(t) + L_z z(t)))   the paper's "deep output"

Training adds the paper's doubly stochastic penalty ``λ Σ_i (1 − Σ_t α(t, i))²`` (every cell looked at
about once over the caption; :func:`attention_penalty`). Two coordinate channels (x, y in −1…1) are
appended to the image so a cell's feature knows where it is (the relations "above", "left of").

Hook points (module paths are the public names; the decoder's are called **once per written word**):

    encoder.hook_grid            [batch, L², d_feat]   a(i), cells row-major
    decoder.hook_state           [batch, d_dec]        h(t−1), the state the attention reads
    decoder.attn.hook_energies   [batch, L²]           e(t, ·)
    decoder.attn.hook_alpha      [batch, L²]           α(t, ·)
    decoder.hook_beta            [batch, 1]            β(t)
    decoder.hook_context         [batch, d_feat]       z(t), after the gate

:func:`greedy_decode` and :func:`beam_search` return, per written word, α over the grid and β;
:func:`trace_caption` makes a :class:`~engine.traces.caption.CaptionTrace`; :func:`load_model` loads a checkpoint
of kind ``"captioner"``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from engine.capture import HookPoint
from engine.families.own import JsonConfig, checkpoint_model
from engine.model import Model
from engine.records import EmptyInputError, EngineError, ModelSpec
from engine.traces.caption import CaptionTrace
from engine.vocab import BOS_ID, EOS_ID, Vocab

KIND = "captioner"


@dataclass(frozen=True)
class CaptionerConfig(JsonConfig):
    """Hyper-parameters of :class:`Captioner`; JSON round-trip via ``to_dict``/``from_dict``."""

    vocab_size: int = 32  # caption token ids (specials included)
    image_size: int = 64  # input side in pixels (RGB)
    grid: int = 8  # L: the encoder's output is L×L cells (image_size must be grid · 2^k)
    channels: int = 32  # conv width of the encoder's first stage (doubles once)
    d_feat: int = 64  # feature width of one grid cell, a(i)
    d_emb: int = 32  # word embedding width
    d_dec: int = 128  # LSTM state width
    d_attn: int = 64  # width of W h + U a inside the additive energy
    max_len: int = 14  # most words greedy decoding writes (<eos> included)

    def __post_init__(self) -> None:
        problems = self.positive_int_problems(f.name for f in fields(self))
        if not problems:
            ratio = self.image_size // self.grid
            if self.image_size % self.grid or ratio & (ratio - 1) or ratio < 2:
                problems.append(f"image_size / grid must be a power of two ≥ 2, got {self.image_size}/{self.grid}")
        self.raise_problems(problems)

    @property
    def cells(self) -> int:
        return self.grid * self.grid


class Encoder(nn.Module):
    """Conv-net: ``[B, 3, S, S]`` image (0–1, moved to −1…1, + 2 coordinate channels) → ``[B, L², d_feat]``
    grid, row-major; GroupNorm after every 3×3 conv."""

    def __init__(self, cfg: CaptionerConfig) -> None:
        super().__init__()
        c = cfg.channels
        layers: list[nn.Module] = [nn.Conv2d(5, c, 3, stride=2, padding=1), nn.GroupNorm(8, c), nn.ReLU()]  # S → S/2
        width, side = c, cfg.image_size // 2
        while side > cfg.grid:  # halve until the grid side: conv + GroupNorm + ReLU + 2×2 max-pool
            layers += [nn.Conv2d(width, 2 * c, 3, padding=1), nn.GroupNorm(8, 2 * c), nn.ReLU(), nn.MaxPool2d(2)]
            width, side = 2 * c, side // 2
        layers += [
            nn.Conv2d(width, cfg.d_feat, 3, padding=1),
            nn.GroupNorm(8, cfg.d_feat),
            nn.ReLU(),
            nn.Conv2d(cfg.d_feat, cfg.d_feat, 1),
        ]
        self.net = nn.Sequential(*layers)
        self.hook_grid = HookPoint()  # [batch, L², d_feat]

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        B, _, S, _ = images.shape
        ramp = torch.linspace(-1.0, 1.0, S, device=images.device, dtype=images.dtype)
        ys, xs = ramp[None, None, :, None].expand(B, 1, S, S), ramp[None, None, None, :].expand(B, 1, S, S)
        x = self.net(torch.cat([2 * images - 1, ys, xs], dim=1))  # pixels to −1…1; (B, d_feat, L, L)
        return self.hook_grid(x.flatten(2).transpose(1, 2))  # (B, L², d_feat)


class Attention(nn.Module):
    """Soft additive attention over the grid: energies → α (softmax over cells)."""

    def __init__(self, cfg: CaptionerConfig) -> None:
        super().__init__()
        self.w = nn.Linear(cfg.d_dec, cfg.d_attn)  # W: h(t−1) → d_attn
        self.u = nn.Linear(cfg.d_feat, cfg.d_attn, bias=False)  # U: a(i) → d_attn
        self.v = nn.Linear(cfg.d_attn, 1, bias=False)  # vᵀ
        self.hook_energies = HookPoint()  # [batch, L²]
        self.hook_alpha = HookPoint()  # [batch, L²]

    def forward(self, h_prev: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """``h_prev`` [B, d_dec], ``keys`` = U a [B, L², d_attn] → α [B, L²] (rows sum to 1)."""
        energies = self.v(torch.tanh(self.w(h_prev)[:, None, :] + keys)).squeeze(-1)  # (B, L²)
        return self.hook_alpha(torch.softmax(self.hook_energies(energies), dim=-1))


@dataclass(frozen=True)
class Step:
    """One decoding step's results (tensors, batch first)."""

    logits: torch.Tensor  # [B, V]
    h: torch.Tensor  # [B, d_dec]
    c: torch.Tensor  # [B, d_dec]
    alpha: torch.Tensor  # [B, L²]
    beta: torch.Tensor  # [B, 1]


class Decoder(nn.Module):
    """LSTM cell with gated soft attention; :meth:`step` writes one word."""

    def __init__(self, cfg: CaptionerConfig) -> None:
        super().__init__()
        self.init_h = nn.Linear(cfg.d_feat, cfg.d_dec)
        self.init_c = nn.Linear(cfg.d_feat, cfg.d_dec)
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_emb)
        self.hook_state = HookPoint()  # [batch, d_dec]
        self.attn = Attention(cfg)
        self.f_beta = nn.Linear(cfg.d_dec, 1)  # f_β: h(t−1) → gate logit
        self.hook_beta = HookPoint()  # [batch, 1]
        self.hook_context = HookPoint()  # [batch, d_feat]
        self.cell = nn.LSTMCell(cfg.d_emb + cfg.d_feat, cfg.d_dec)
        self.l_h = nn.Linear(cfg.d_dec, cfg.d_emb)  # L_h
        self.l_z = nn.Linear(cfg.d_feat, cfg.d_emb, bias=False)  # L_z
        self.out = nn.Linear(cfg.d_emb, cfg.vocab_size)  # W_o

    def start(self, grid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(h(0), c(0))`` from the mean feature of ``grid`` [B, L², d_feat]."""
        mean = grid.mean(dim=1)  # (B, d_feat)
        return torch.tanh(self.init_h(mean)), torch.tanh(self.init_c(mean))

    def step(
        self, y_prev: torch.Tensor, h: torch.Tensor, c: torch.Tensor, grid: torch.Tensor, keys: torch.Tensor
    ) -> Step:
        """``y_prev`` [B] ids, state ``(h, c)`` [B, d_dec] each, ``grid`` [B, L², d_feat], ``keys`` [B, L², d_attn]."""
        h = self.hook_state(h)
        alpha = self.attn(h, keys)  # (B, L²)
        beta = self.hook_beta(torch.sigmoid(self.f_beta(h)))  # (B, 1)
        z = self.hook_context(beta * torch.bmm(alpha[:, None, :], grid).squeeze(1))  # (B, d_feat)
        y = self.embed(y_prev)  # (B, d_emb)
        h, c = self.cell(torch.cat([y, z], dim=-1), (h, c))  # (B, d_dec) each
        logits = self.out(torch.tanh(y + self.l_h(h) + self.l_z(z)))  # (B, V)
        return Step(logits, h, c, alpha, beta)


class Captioner(nn.Module):
    """Conv encoder + LSTM decoder with soft attention (see the module docstring)."""

    def __init__(self, cfg: CaptionerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)

    def encode(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``images`` [B, 3, S, S] in 0–1 → ``(grid [B, L², d_feat], keys U a [B, L², d_attn])``."""
        grid = self.encoder(images)
        return grid, self.decoder.attn.u(grid)

    def forward(self, images: torch.Tensor, words_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher forcing: ``words_in`` [B, T] starts with ``<bos>`` → ``(logits [B, T, V], α [B, T, L²])``."""
        grid, keys = self.encode(images)
        h, c = self.decoder.start(grid)
        logits, alphas = [], []
        for t in range(words_in.shape[1]):
            s = self.decoder.step(words_in[:, t], h, c, grid, keys)
            h, c = s.h, s.c
            logits.append(s.logits)
            alphas.append(s.alpha)
        return torch.stack(logits, dim=1), torch.stack(alphas, dim=1)


def attention_penalty(alphas: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The doubly stochastic penalty ``Σ_i (1 − Σ_t α(t, i))²``, averaged over the batch.

    Args:
        alphas: ``[B, T, L²]`` attention of every step.
        mask: ``[B, T]`` True where the step writes a real word (or the closing ``<eos>``).
    """
    total = (alphas * mask[..., None]).sum(dim=1)  # (B, L²)
    return ((1.0 - total) ** 2).sum(dim=1).mean()


# ---- decoding ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Caption:
    """One decoded caption with what the model looked at for each word.

    Attributes:
        ids: written ids, ending with ``<eos>`` when the model wrote it.
        alphas: ``[len(ids), L²]`` α of the step that wrote each id.
        betas: ``[len(ids)]`` β of that step.
        log_prob: sum of the written ids' log-probabilities.
    """

    ids: list[int]
    alphas: np.ndarray
    betas: np.ndarray
    log_prob: float


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def _cut(rows: list[int]) -> int:
    return rows.index(EOS_ID) + 1 if EOS_ID in rows else len(rows)


@torch.no_grad()
def greedy_decode(model: Captioner, images: torch.Tensor, max_len: int | None = None) -> list[Caption]:
    """Greedy captions of ``images`` [B, 3, S, S]: at every step the most probable word (argmax of the logits)."""
    max_len = max_len or model.cfg.max_len
    grid, keys = model.encode(images.to(_device(model)))
    h, c = model.decoder.start(grid)
    B = images.shape[0]
    y = torch.full((B,), BOS_ID, dtype=torch.long, device=grid.device)
    done = torch.zeros(B, dtype=torch.bool, device=grid.device)
    ids, alphas, betas, logps = [], [], [], []
    for _ in range(max_len):
        s = model.decoder.step(y, h, c, grid, keys)
        h, c = s.h, s.c
        logp = torch.log_softmax(s.logits.float(), dim=-1)  # (B, V)
        y = s.logits.argmax(dim=-1)  # (B,)
        ids.append(y)
        alphas.append(s.alpha)
        betas.append(s.beta[:, 0])
        logps.append(logp.gather(1, y[:, None])[:, 0])
        done |= y == EOS_ID
        if bool(done.all()):
            break
    ids_t, alpha_t = torch.stack(ids, 1).cpu(), torch.stack(alphas, 1).float().cpu()  # (B, T), (B, T, L²)
    beta_t, logp_t = torch.stack(betas, 1).float().cpu(), torch.stack(logps, 1).cpu()  # (B, T) each
    out = []
    for b in range(B):
        row = ids_t[b].tolist()
        n = _cut(row)
        out.append(Caption(row[:n], alpha_t[b, :n].numpy(), beta_t[b, :n].numpy(), float(logp_t[b, :n].sum())))
    return out


@torch.no_grad()
def beam_search(model: Captioner, image: torch.Tensor, beam: int = 3, max_len: int | None = None) -> list[Caption]:
    """Beam search on one image ``[3, S, S]``: the ``beam`` best captions, most probable first.

    Scores are summed log-probabilities; a finished hypothesis (``<eos>`` written) leaves the beam and
    waits; search stops when no open hypothesis can still beat the worst kept finished one, or at
    ``max_len``. With ``beam=1`` this is :func:`greedy_decode`.
    """
    max_len = max_len or model.cfg.max_len
    grid, keys = model.encode(image[None].to(_device(model)))  # (1, L², d), (1, L², d_attn)
    h, c = model.decoder.start(grid)
    # open hypotheses: (ids, alphas, betas, score, h, c)
    open_: list[tuple[list[int], list[np.ndarray], list[float], float, torch.Tensor, torch.Tensor]] = [
        ([], [], [], 0.0, h, c)
    ]
    finished: list[Caption] = []
    for _ in range(max_len):
        n = len(open_)
        y = torch.tensor([hyp[0][-1] if hyp[0] else BOS_ID for hyp in open_], device=grid.device)
        s = model.decoder.step(
            y,
            torch.cat([hyp[4] for hyp in open_]),
            torch.cat([hyp[5] for hyp in open_]),
            grid.expand(n, -1, -1),
            keys.expand(n, -1, -1),
        )
        logp = torch.log_softmax(s.logits.float(), dim=-1).cpu()  # (n, V)
        scores = torch.tensor([hyp[3] for hyp in open_])[:, None] + logp  # (n, V)
        top = torch.topk(scores.flatten(), min(beam, scores.numel()))
        candidates = []
        for score, flat in zip(top.values.tolist(), top.indices.tolist()):
            k, word = divmod(flat, scores.shape[1])
            ids, alphas, betas = open_[k][0], open_[k][1], open_[k][2]
            alpha, beta = s.alpha[k].float().cpu().numpy(), float(s.beta[k, 0])
            candidates.append((ids + [word], alphas + [alpha], betas + [beta], score, s.h[k : k + 1], s.c[k : k + 1]))
        open_ = []
        for cand in candidates:
            if cand[0][-1] == EOS_ID:
                finished.append(Caption(cand[0], np.stack(cand[1]), np.asarray(cand[2], np.float32), cand[3]))
            else:
                open_.append(cand)
        finished.sort(key=lambda cap: -cap.log_prob)
        finished = finished[:beam]
        if not open_ or (len(finished) == beam and open_[0][3] <= finished[-1].log_prob):
            break
    for ids, alphas, betas, score, _h, _c in open_:  # never closed: kept if nothing better finished
        finished.append(Caption(ids, np.stack(alphas), np.asarray(betas, np.float32), score))
    finished.sort(key=lambda cap: -cap.log_prob)
    return finished[:beam]


# ---- tracing -----------------------------------------------------------------------------------------


def to_tensor(images: np.ndarray) -> torch.Tensor:
    """``[H, W, 3]`` or ``[N, H, W, 3]`` float images in 0–1 → ``(N, 3, H, W)`` float32."""
    array = np.asarray(images, dtype=np.float32)
    if array.ndim == 3:
        array = array[None]
    return torch.from_numpy(np.ascontiguousarray(array.transpose(0, 3, 1, 2)))


@torch.no_grad()
def trace_caption(model: Captioner, image: np.ndarray, vocab: Vocab, *, model_id: str, beam: int = 1) -> CaptionTrace:
    """Caption one ``[S, S, 3]`` image (greedy, or the best of a beam search) and keep, per written word,
    α over the grid and β."""
    cfg = model.cfg
    array = np.asarray(image, dtype=np.float32)
    if array.shape != (cfg.image_size, cfg.image_size, 3):
        raise ValueError(f"the captioner reads {cfg.image_size}×{cfg.image_size} RGB images, got shape {array.shape}")
    x = to_tensor(array)
    best = greedy_decode(model, x)[0] if beam == 1 else beam_search(model, x[0], beam=beam)[0]
    words = vocab.tokens_for_display(best.ids)
    text = " ".join(w for w, i in zip(words.strings, best.ids) if i != EOS_ID)
    L = cfg.grid
    return CaptionTrace(
        model_id=model_id,
        image=array,
        words=words,
        caption=text,
        alphas=np.ascontiguousarray(best.alphas.reshape(len(best.ids), L, L), dtype=np.float32),
        betas=np.asarray(best.betas, dtype=np.float32),
        log_prob=best.log_prob,
        beam=beam,
    )


def as_image(image: Any, size: int) -> np.ndarray:
    """An ``[size, size, 3]`` float32 image in 0–1 from a float (0–1) or ``uint8`` (0–255) array, RGB or gray.

    Raises:
        EmptyInputError: not an image of that size (the message says what was given).
    """
    array = np.asarray(image)
    if array.dtype == np.uint8:
        array = array.astype(np.float32) / 255.0
    if array.ndim == 2:
        array = np.repeat(array[..., None], 3, axis=2)
    if array.ndim != 3 or array.shape != (size, size, 3) or not np.issubdtype(array.dtype, np.number):
        raise EmptyInputError(f"the captioner reads {size}×{size} RGB images; got an array of shape {array.shape}")
    return np.clip(array.astype(np.float32), 0.0, 1.0)


@dataclass(frozen=True)
class CaptionAdapter:
    """Tracing for :class:`Captioner`; ``engine.trace(model, image)`` lands here.

    The image is ``[S, S, 3]`` (or ``[S, S]``), float in 0–1 or ``uint8``. ``causal`` and ``max_tokens``
    are accepted for the common signature and ignored (captions are at most ``cfg.max_len`` words).
    """

    def trace(
        self, model: Model, image: Any, *, causal: bool | None = None, max_tokens: int = 0, beam: int = 1
    ) -> CaptionTrace:
        """Caption ``image`` greedily (``beam=1``) or by beam search, recording α and β per word."""
        if not isinstance(beam, int) or not 1 <= beam <= 10:
            raise EngineError(f"beam must be a whole number from 1 to 10, got {beam!r}")
        array = as_image(image, model.module.cfg.image_size)
        trace, device, notice = model.run(
            lambda module, _dev: trace_caption(module, array, model.tokenizer, model_id=model.spec.id, beam=beam)
        )
        notices = (notice,) if notice else ()
        return dataclasses.replace(trace, notices=notices, device=device.type)


def build_model(config: Mapping[str, Any]) -> Captioner:
    """Checkpoint builder for kind ``"captioner"`` (``engine.families``): a fresh model from a config dict."""
    return Captioner(CaptionerConfig.from_dict(config))


def load_model(spec: ModelSpec, folder: Path, device: torch.device | None = None) -> Model:
    """Load checkpoint ``spec.id`` from ``folder`` as a read-only :class:`Model`.

    Raises:
        CheckpointError: a missing, corrupt or mismatched file, or a vocabulary that does not fit.
    """

    def validate(module: nn.Module, vocab: Any) -> str | None:
        if not isinstance(vocab, Vocab) or len(vocab) > module.cfg.vocab_size:
            return f"a captioner checkpoint needs one vocabulary of at most {module.cfg.vocab_size} tokens"
        return None

    return checkpoint_model(
        spec,
        folder,
        device,
        adapter=CaptionAdapter(),
        architecture="CNN + LSTM with soft attention",
        max_positions=lambda module: module.cfg.max_len,
        validate=validate,
    )
