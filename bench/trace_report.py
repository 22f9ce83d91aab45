"""Report side of ``python -m bench.bench_trace``: the markdown tables and reading of one run,
and :func:`write_section`, which replaces (or adds) the benchmark's section of a markdown file.

Two sections: :data:`SECTION` (MiniLM and the GPT-2-small shape) and :data:`LLAMA_SECTION` (the
Llama-shaped model at 1k–8k tokens, where HF eager + ``output_attentions`` is skipped at the sizes
whose attentions would not fit; :func:`_tables` writes "skipped (would keep X GB)" there)."""

from __future__ import annotations

import re
from pathlib import Path

SECTION = "## Trace vs output_attentions"
LLAMA_SECTION = "## Long inputs on a Llama-shaped model"
MODEL_TITLES = {
    "minilm": "MiniLM (all-MiniLM-L6-v2: 6 layers × 12 heads, d_model 384)",
    "gpt2": "GPT-2-small shape, random weights (12 layers × 12 heads, d_model 768, vocab 50257)",
    "llama": "Llama shape, random weights (8 layers × 8 query heads, 2 key/value heads, d_model 512, RoPE, vocab 1024)",
}
LABELS = {"minilm": "MiniLM", "gpt2": "GPT-2-small shape", "llama": "Llama shape"}


def _skipped(kept_bytes: float) -> str:
    """The table cell for an HF eager + attentions run that was not made."""
    return f"skipped (would keep {kept_bytes / 1e9:.1f} GB)"


def _fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _ratio(a: float, b: float) -> str:
    return "–" if not b else f"{a / b:.1f}×"


def _tables(
    model_name: str, rows: dict[tuple[int, str], dict], sizes: tuple[int, ...], skipped: dict[int, float] | None = None
) -> list[str]:
    """Time and memory tables of one model. ``skipped``: token count → bytes HF eager's attentions would
    have kept, for the sizes where that case was not run (no ``(n, "hf_eager_attn")`` row)."""
    skipped = skipped or {}
    out = [f"### {MODEL_TITLES[model_name]}", ""]
    out += [
        "Time (median seconds per call):",
        "",
        "| tokens | engine trace + 1 head (s) | HF eager + attentions (s) | time ratio HF/engine "
        "| HF plain forward, sdpa (s) | engine / plain | of which 1 head pattern (ms) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in sizes:
        e, h, p = rows[(n, "engine")], rows.get((n, "hf_eager_attn")), rows[(n, "hf_plain")]
        eager = (_fmt(h["median_s"]), _ratio(h["median_s"], e["median_s"])) if h else (_skipped(skipped[n]), "–")
        out.append(
            f"| {n} | {_fmt(e['median_s'])} | {eager[0]} | {eager[1]} "
            f"| {_fmt(p['median_s'])} | {e['median_s'] / p['median_s']:.2f} | {_fmt(e['head_median_s'] * 1e3, 1)} |"
        )
    out += [
        "",
        "Memory (MB = 10⁶ bytes; peak = resident-set high-water mark during the call minus RSS before it; "
        "kept = what the result holds afterwards: the engine's Q/K/V arrays, HF's attention tensors):",
        "",
        "| tokens | engine peak (MB) | HF eager + attentions peak (MB) | memory ratio HF/engine "
        "| HF plain peak (MB) | kept: engine Q/K/V (MB) | kept: HF attentions (MB) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in sizes:
        e, h, p = rows[(n, "engine")], rows.get((n, "hf_eager_attn")), rows[(n, "hf_plain")]
        if h:
            eager = (f"{h['peak_mb']:.0f}", _ratio(h["peak_mb"], e["peak_mb"]), f"{h['kept_mb']:.1f}")
        else:
            eager = (_skipped(skipped[n]), "–", f"– ({skipped[n] / 1e6:.0f} computed)")
        out.append(
            f"| {n} | {e['peak_mb']:.0f} | {eager[0]} | {eager[1]} "
            f"| {p['peak_mb']:.0f} | {e['kept_mb']:.1f} | {eager[2]} |"
        )
    out.append("")
    return out


def _reading(results: dict[str, dict], sizes: dict[str, tuple[int, ...]]) -> list[str]:
    """A few sentences computed from the numbers (so a re-run never contradicts its own text)."""
    lines = []
    for model_name, rows in results.items():
        n = max(sizes[model_name])
        e, h, p = rows[(n, "engine")], rows[(n, "hf_eager_attn")], rows[(n, "hf_plain")]
        label = LABELS[model_name]
        lines.append(
            f"- {label} at {n} tokens: the engine's trace + one head took {e['median_s']:.3f} s, HF eager with "
            f"`output_attentions=True` {h['median_s']:.3f} s (ratio {h['median_s'] / e['median_s']:.2f}) and the "
            f"plain SDPA forward {p['median_s']:.3f} s, so seeing attention cost the engine "
            f"{100 * (e['median_s'] / p['median_s'] - 1):+.0f}% over a plain forward (one head's pattern: "
            f"{e['head_median_s'] * 1e3:.1f} ms) and HF {100 * (h['median_s'] / p['median_s'] - 1):+.0f}%. "
            f"HF keeps {h['kept_mb']:.0f} MB of attention tensors (L·H·n² floats), the engine "
            f"{e['kept_mb']:.0f} MB of Q/K/V (L·3·n·d); peaks {e['peak_mb']:.0f} MB vs {h['peak_mb']:.0f} MB "
            f"(ratio {h['peak_mb'] / e['peak_mb']:.1f}), i.e. plain forward + {e['peak_mb'] - p['peak_mb']:.0f} MB "
            f"for the engine and + {h['peak_mb'] - p['peak_mb']:.0f} MB for HF."
        )
    lines.append(
        "- Where the two keep about the same: below n ≈ 3·d_model/H tokens (96 for MiniLM, 192 for GPT-2 "
        "small) Q/K/V are bigger than the attention maps, so at short inputs the engine may keep and peak "
        "slightly more than HF; above it HF's n² term takes over."
    )
    return lines


def _llama_reading(rows: dict[tuple[int, str], dict], sizes: tuple[int, ...], skipped: dict[int, float]) -> list[str]:
    """The Llama section's reading, computed from its numbers: the largest size where HF eager ran, the
    largest size overall, and what the skipped sizes would have kept."""
    lines = []
    ran = [n for n in sizes if (n, "hf_eager_attn") in rows]
    if ran:
        n = max(ran)
        e, h, p = rows[(n, "engine")], rows[(n, "hf_eager_attn")], rows[(n, "hf_plain")]
        lines.append(
            f"- At {n} tokens, the longest input HF eager with `output_attentions=True` was run on: the engine's "
            f"trace + one head took {e['median_s']:.2f} s, HF eager {h['median_s']:.2f} s (ratio "
            f"{h['median_s'] / e['median_s']:.2f}) and the plain SDPA forward {p['median_s']:.2f} s; peaks "
            f"{e['peak_mb']:.0f} MB vs {h['peak_mb']:.0f} MB (ratio {h['peak_mb'] / e['peak_mb']:.1f}). HF keeps "
            f"{h['kept_mb']:.0f} MB of attention tensors (L·H·n² floats), the engine {e['kept_mb']:.0f} MB of Q/K/V "
            "(L·3·n·d, keys and values repeated to one per query head)."
        )
    n = max(sizes)
    e, p = rows[(n, "engine")], rows[(n, "hf_plain")]
    lines.append(
        f"- At the longest input, {n} tokens, the engine's trace + one head took {e['median_s']:.2f} s against {p['median_s']:.2f} s for "
        f"a plain forward ({100 * (e['median_s'] / p['median_s'] - 1):+.0f}%; one head's {n}×{n} pattern "
        f"{e['head_median_s'] * 1e3:.0f} ms of it) and peaked at {e['peak_mb']:.0f} MB against {p['peak_mb']:.0f} MB "
        f"(+{e['peak_mb'] - p['peak_mb']:.0f} MB for {e['kept_mb']:.0f} MB of kept Q/K/V)."
    )
    if skipped:
        listed = ", ".join(f"{k} tokens: {v / 1e9:.1f} GB" for k, v in sorted(skipped.items()))
        lines.append(
            f"- Not run: HF eager + `output_attentions=True` where its attentions would not fit safely ({listed} "
            "kept, plus the scores of the layer being computed), so there is no HF/engine ratio at those sizes; "
            "the engine's memory grows with n, not n²."
        )
    return lines


#: a line that starts notes written by hand under a benchmark's section: they stay when the benchmark rewrites it
NOTES_MARK = "<!-- notes written by hand: kept when the benchmark rewrites this section -->"


def _kept_notes(old: str, new: str) -> str:
    """The notes written by hand in ``old`` (a section or subsection being replaced by ``new``): from a
    :data:`NOTES_MARK` line to the next ``### `` header or the end; "" when there are none or ``new`` has its own."""
    notes = re.search(rf"^{re.escape(NOTES_MARK)}\n.*?(?=^### |\Z)", old, re.S | re.M)
    return notes.group(0).rstrip("\n") + "\n\n" if notes and NOTES_MARK not in new else ""


def write_subsection(out_path: Path, section: str, parent: str) -> None:
    """Replace the ``### `` subsection headed by ``section``'s first line inside the ``## `` section ``parent``
    (up to the next ``### `` or ``## `` header), or add it at the end of that section; a missing parent is
    added with it, at the end of the file. Nothing else changes (``bench_class --same-link``: its class sits
    under "A class on one server" without replacing the plain class above it); notes written by hand under
    the subsection (:func:`_kept_notes`) stay."""
    doc = out_path.read_text() if out_path.exists() else "# Benchmarks\n"
    header = section.split("\n", 1)[0]
    text = section.strip("\n") + "\n\n"
    found = re.compile(rf"^{re.escape(parent)}\n.*?(?=^## |\Z)", re.S | re.M).search(doc)
    if found is None:
        doc = doc.rstrip("\n") + "\n\n" + parent + "\n\n" + text
    else:
        body = found.group(0)
        sub = re.compile(rf"^{re.escape(header)}\n.*?(?=^### |^## |\Z)", re.S | re.M).search(body)
        if sub:
            body = body[: sub.start()] + text + _kept_notes(sub.group(0), section) + body[sub.end() :]
        else:
            body = body.rstrip("\n") + "\n\n" + text
        doc = doc[: found.start()] + body + doc[found.end() :]
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(doc.rstrip("\n") + "\n")


def publish(out: str | Path, text: str) -> None:
    """``text`` as its section of the document ``out`` (:func:`write_section`), and on the terminal."""
    write_section(Path(out), text)
    print(text)


def write_section(out_path: Path, section: str, header: str | None = None, after: str | None = None) -> None:
    """Replace the part of ``out_path`` under ``header`` (default: ``section``'s first line, a ``## ``
    header) up to the next ``## `` header, or add it: right after the section headed ``after`` when
    that is given and present, else at the end (other sections are left as they are). A ``### ``
    subsection of the old part whose header the new text does not write stays, after it (another run of
    the same benchmark wrote it: ``bench_class --profile``, ``--same-link``), and so do notes written by
    hand from a :data:`NOTES_MARK` line to the next ``### `` header or the section's end."""
    if out_path.exists():
        doc = out_path.read_text()
    else:
        doc = (
            "# Benchmarks\n\n"
            "Speed and memory are measured here, by scripts under `bench/`, not by timed tests: each "
            "section compares the engine with the alternative it replaces, measured in the same run, "
            "and reports ratios. Numbers are medians on the machine named in each section; re-run "
            "the command on a quiet machine to compare.\n"
        )
    header = header or section.split("\n", 1)[0]
    pattern = re.compile(rf"^{re.escape(header)}\n.*?(?=^## |\Z)", re.S | re.M)
    if found := pattern.search(doc):
        kept = [
            sub.rstrip("\n") + "\n\n"
            for sub in re.findall(r"^### .*?(?=^### |\Z)", found.group(0), re.S | re.M)
            if not re.search(rf"^{re.escape(sub.split(chr(10), 1)[0])}$", section, re.M)
        ]
        notes = _kept_notes(found.group(0), section)
        doc = doc[: found.start()] + section.rstrip("\n") + "\n\n" + notes + "".join(kept) + doc[found.end() :]
    elif after and (found := re.compile(rf"^{re.escape(after)}\n.*?(?=^## |\Z)", re.S | re.M).search(doc)):
        doc = doc[: found.end()].rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n\n" + doc[found.end() :]
    else:
        doc = doc.rstrip("\n") + "\n\n" + section
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(doc.rstrip("\n") + "\n")
