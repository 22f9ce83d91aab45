"""Curated example sentences per attention phenomenon, keyed by model id (with the head measured there) or family,
and the picker that puts one in the shared text box."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

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


COREF, PREV, INDUCTION, SINK, AGREEMENT = (
    "Coreference “it”",
    "Previous token",
    "Induction / repeated text",
    "Attention sink",
    "Long-range agreement",
)

_ENGLISH = (
    Example(
        COREF,
        "The animal didn't cross the street because it was too tired.",
        "Pick the query “it”: which noun does it look at, *animal* or *street*?",
    ),
    Example(
        PREV,
        "One two three four five six seven eight nine ten.",
        "A previous-token head draws a line just below the diagonal.",
    ),
    Example(
        INDUCTION,
        "Harry Potter went to London. Later, Harry Potter went to Paris.",
        "In the second copy, tokens look back at the first copy (or at the token after their earlier twin).",
    ),
    Example(
        SINK,
        "The cat sat on the mat.",
        "Many heads park most of their weight on one marker token ([CLS], [SEP] or the first token).",
    ),
    Example(
        AGREEMENT,
        "The keys to the old wooden cabinet in the hall are on the table.",
        "Query “are”: does any head reach back over the long phrase to *keys*?",
    ),
)

#: example sets: by model id (heads measured there) and by family (open tokenizers, no head named)
EXAMPLES: dict[str, tuple[Example, ...]] = {
    "minilm": (
        Example(
            COREF,
            "The animal didn't cross the street because it was too tired.",
            "Query “it”: this head puts its largest weight on *animal*, not *street*.",
            3,
            1,
        ),
        Example(
            PREV,
            "One two three four five six seven eight nine ten.",
            "A previous-token head: a line just below the diagonal.",
            0,
            2,
        ),
        Example(
            INDUCTION,
            "Harry Potter went to London. Later, Harry Potter went to Paris.",
            "Query the second “potter”: it looks back at the first one.",
            2,
            9,
        ),
        Example(
            SINK,
            "The cat sat on the mat.",
            "Almost every row puts its weight on [CLS]: the head's “nothing to do” place.",
            4,
            5,
        ),
        Example(
            AGREEMENT,
            "The keys to the old wooden cabinet in the hall are on the table.",
            "Query “are”: it reaches back over the long phrase to its subject, *keys*.",
            3,
            1,
        ),
    ),
    "tiny-gpt-stories": (
        Example(
            COREF,
            "Lily found a red ball in the park. She gave it to Tom.",
            "Query “she”: this head's largest weight is on *lily*, back at the start of the story.",
            2,
            2,
        ),
        Example(
            PREV,
            "Tom saw a big blue boat. He liked it very much.",
            "This small model's strongest previous-token head (Heads → Per-head metrics gives its share).",
            0,
            3,
        ),
        Example(
            INDUCTION,
            "Mia had a green kite. Ben had a pink drum. Mia had a green kite.",
            "Its most induction-like head: in the repeated sentence, words look a little at the word after "
            "their earlier twin.",
            1,
            2,
        ),
        Example(
            SINK,
            "One day, Sam went to the garden. Sam was happy.",
            "The head that rests most on <bos>, the first token, when nothing else is useful.",
            0,
            1,
        ),
        Example(
            AGREEMENT,
            "Anna and Leo played in the yard. They were tired.",
            "Query “they”: it looks back at the pair's names (*leo*) for its plural.",
            2,
            0,
        ),
    ),
    "tiny-translator": (
        Example(
            "Adjective after the noun",
            "the red car is fast .",
            "Block “cross”: *voiture* reads *car*, then *rouge* goes back to *red* (a crossing).",
        ),
        Example(
            "Gender agreement",
            "she sees the small black dog .",
            "Cross-attention: the article *le* reads the noun *dog* to pick its gender.",
        ),
        Example("Elision", "i have an umbrella .", "“j'ai”: two English words become one French token."),
        Example(
            "Plural agreement",
            "the girls are happy and tired .",
            "The adjectives take the plural feminine ending: they read *girls*.",
        ),
        Example("Dates", "21 November 2026", "Written date → ISO: each output digit reads its source digit."),
    ),
    "induction-2l-attn-only": (  # each letter is one token; heads measured in tests/app/test_train_induction.py
        Example(
            INDUCTION,
            "qfkzwbmr qfkzwbmr",
            "Each letter of the second copy looks at the letter that followed it in the first copy: a stripe "
            "7 keys left of the diagonal, and the model predicts that letter.",
            1,
            2,
        ),
        Example(
            PREV,
            "qfkzwbmr qfkzwbmr",
            "Each letter looks at the letter just before it: what lets layer 1 find the earlier copy.",
            0,
            1,
        ),
    ),
    "encoder": _ENGLISH,
    "decoder": _ENGLISH,
    "encoder-decoder": _ENGLISH,
}

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
                _hint(set_name, examples)
    if right is not None:
        with right:
            with st.expander(f"Words this model knows ({len(vocab)})", icon=":material/menu_book:"):
                st.caption("Any other word is read as <unk> (unknown). Punctuation counts as a word.")
                st.markdown(", ".join(f"`{w}`" for w in sorted(vocab)))


def example_hint(model_id: str, card) -> None:
    """Where to look, while the box still holds the example last picked."""
    if not st.session_state.get(Examples.applied):
        return
    set_name, examples, _ = _examples(model_id, card)
    _hint(set_name, examples)


def _hint(set_name: str, examples) -> None:
    applied = st.session_state.get(Examples.applied)
    if applied and applied[0] == set_name and applied[1] < len(examples):
        example = examples[applied[1]]
        if example.text == current_text():  # the head to open, and what to see there
            head = f"Look at **layer {example.layer} head {example.head}**. " if example.layer is not None else ""
            st.caption(head + example.look)
