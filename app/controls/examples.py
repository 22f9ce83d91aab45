"""Curated example sentences per attention phenomenon, keyed by model id (with the head measured there) or family,
and the picker that puts one in the shared text box."""

from __future__ import annotations

import contextlib
import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from app.controls.pickers import open_head, use_text
from app.state import current_text
from app.views.lessons.data import model_vocabulary
from engine.vocab import tokenize


class Examples:
    applied = "example_applied"  # (set name, index) of the example last put in the text box


@dataclass(frozen=True)
class Example:
    """One curated sentence: what it shows, the text, what to look at, and the head where it shows (None: none)."""

    phenomenon: str
    text: str
    look: str
    layer: int | None = None
    head: int | None = None


PREV, INDUCTION = "Previous token", "Induction / repeated text"  # phenomena tests/app/test_train_induction.py reads
EXAMPLES_FILE = Path(__file__).resolve().parents[2] / "assets" / "examples.toml"
REQUIRED = ("phenomenon", "text", "look")


def _example(where: str, entry: object) -> Example:
    """One ``[[SET]]`` table as an :class:`Example`; a ValueError naming ``where`` if it is malformed."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: an example is a [[SET]] table, not {entry!r}")
    if missing := [k for k in REQUIRED if not isinstance(entry.get(k), str) or not entry[k]]:
        raise ValueError(f"{where}: needs a non-empty text for {', '.join(missing)}")
    if unknown := sorted(set(entry) - {*REQUIRED, "layer", "head"}):
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}")
    layer, head = entry.get("layer"), entry.get("head")
    ints = all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (layer, head))
    if (layer is None) != (head is None) or (layer is not None and not ints):
        raise ValueError(f"{where}: layer and head are both whole numbers >= 0, or both left out")
    return Example(entry["phenomenon"], entry["text"], entry["look"], layer, head)


@functools.cache
def read_examples(path: Path = EXAMPLES_FILE) -> dict[str, tuple[Example, ...]]:
    """The example sets of ``path``: ``[[SET]]`` tables per set, and ``[families]`` naming the set each family
    shares (that set then appears under its families only)."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the example sets: {exc}") from exc
    families = doc.pop("families", {})
    if not isinstance(families, dict) or not all(isinstance(s, str) for s in families.values()):
        raise ValueError(f"{path}: [families] maps each family to the name of a set")
    sets: dict[str, tuple[Example, ...]] = {}
    for name, entries in doc.items():
        if not isinstance(entries, list) or not entries:
            raise ValueError(f"{path}: {name!r} is not a list of [[{name}]] examples")
        sets[name] = tuple(_example(f"{path}: [[{name}]] entry {i}", e) for i, e in enumerate(entries, 1))
    if unknown := {f: s for f, s in families.items() if s not in sets}:
        raise ValueError(f"{path}: [families] names sets the file does not have: {unknown}")
    shared = set(families.values())
    return {name: s for name, s in sets.items() if name not in shared} | {f: sets[s] for f, s in families.items()}


#: example sets: by model id (heads measured there) and by family (open tokenizers, no head named)
EXAMPLES = read_examples()

#: sets written in a closed vocabulary: a model trained on the Train page gets those it reads in full
WORD_LEVEL_SETS = ("tiny-gpt-stories", "tiny-translator")


def examples_for(model_id: str, family: str, vocab: tuple[str, ...] | None) -> tuple[str, tuple[Example, ...]]:
    """``(set name, examples)``: the model's own set, else (closed vocabulary) the word-level examples it reads, else
    its family's."""
    if model_id in EXAMPLES:
        return model_id, EXAMPLES[model_id]
    if vocab is not None:
        known = set(vocab)
        readable = tuple(
            e for name in WORD_LEVEL_SETS for e in EXAMPLES[name] if all(w in known for w in tokenize(e.text))
        )
        return "own", tuple(Example(e.phenomenon, e.text, e.look) for e in readable)  # heads not measured there
    return family, EXAMPLES.get(family, ())


def _use(set_name: str, examples: tuple[Example, ...], key: str) -> None:
    """on_change of the picker: the sentence into the text box, a measured head opened."""
    index = st.session_state.get(key)
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(examples):
        return  # cleared, or a value the picker never offered (forged)
    example = examples[index]
    use_text(example.text)
    if example.layer is not None:
        open_head(example.layer, example.head)
    st.session_state[Examples.applied] = (set_name, index)
    st.session_state[key] = None  # the picker is ready for the next choice (the same one again, too)


def _examples(model_id: str, card):
    """``(set_name, examples, vocab)`` for the model (``vocab`` None for an open tokenizer)."""
    try:
        vocab = model_vocabulary(model_id)
    except Exception:  # noqa: BLE001 — the picker is a help; the page reports loading errors itself
        vocab = None
    set_name, examples = examples_for(model_id, card.family, vocab)
    return set_name, examples, vocab


def examples_picker(model_id: str, card, hint: bool = True) -> None:
    """The Examples picker for the model and, for a closed vocabulary, the words it knows; ``hint``: also where to
    look (False where the page draws :func:`example_hint` itself)."""
    set_name, examples, vocab = _examples(model_id, card)
    left, right = st.columns([3, 2]) if vocab is not None else (contextlib.nullcontext(), None)
    if examples:
        key = f"examples_{set_name}"
        with left:
            st.selectbox(
                "Examples",
                range(len(examples)),
                index=None,
                key=key,
                on_change=_use,
                args=(set_name, examples, key),
                format_func=lambda i: f"{examples[i].phenomenon}: {examples[i].text}",
                placeholder="Pick a sentence that shows a pattern",
                help="Fills the text box with a sentence chosen for one phenomenon"
                + (" that this model reads in full" if vocab is not None else "")
                + "; where a head was measured for it, that layer and head are opened.",
            )
            if hint:
                example_hint(model_id, card)
    if right is not None:
        with right:
            with st.expander(f"Words this model knows ({len(vocab)})", icon=":material/menu_book:"):
                st.caption("Any other word is read as <unk> (unknown). Punctuation counts as a word.")
                st.markdown(", ".join(f"`{w}`" for w in sorted(vocab)))


def example_hint(model_id: str, card) -> None:
    """Where to look (and the head to open), while the box still holds the example last picked."""
    if not (applied := st.session_state.get(Examples.applied)):
        return
    set_name, examples, _ = _examples(model_id, card)
    if applied[0] == set_name and applied[1] < len(examples) and examples[applied[1]].text == current_text():
        example = examples[applied[1]]
        head = f"Look at **layer {example.layer} head {example.head}**. " if example.layer is not None else ""
        st.caption(head + example.look)
