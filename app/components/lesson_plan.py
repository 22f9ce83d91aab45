"""The lesson: the topics of a transformers lecture in order, each a short text, a link and a knowledge check.

Plain data only (rendering lives in ``app/views/lessons.py`` and ``app/components/knowledge_check.py``),
so a teacher can reorder or rewrite a step here without touching widget code. Links name a page file
under ``app/views/`` and the URL parameters that open it in the right state (the widgets' session keys:
text, model, layer, head, causal, step_query, explore_tab, heads_tab, explore_block, pos_tab,
bahdanau_text, vit_source, pretraining_tab, fill_text).

Predict-then-reveal checks name only the model, sentence, layer, head and query word; the answer is
computed from the real trace when the student answers (never written here). The heads were chosen by
measuring (see tests/app/test_lessons.py, which checks that each one's top key is still the one the text
talks about, so a retrained checkpoint that changes it fails a test instead of misleading a class).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.state import DEFAULT_TEXT, Positional, Vit


@dataclass(frozen=True)
class Link:
    """A link that opens one page in a given state.

    Attributes:
        page: the page file under ``app/views/``.
        label: the link's text.
        params: URL query parameters (widget session keys → values, as strings).
    """

    page: str
    label: str
    params: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Predict:
    """"Click the token you think the query looks at", then the real head's row is revealed.

    Attributes:
        question: what the student is asked.
        model: model id (``"bahdanau-translator"`` reads the RNN's alignment instead of a head).
        text: the sentence.
        word: the query token (its ``occurrence``-th appearance); for the RNN, the French target word.
        layer, head: the head (ignored for the RNN).
        causal: the causal mask as Explore would trace it (None: the model's own setting).
        expect: the key token the explanation talks about (tests check it is the head's top key).
        explain: shown after the reveal.
    """

    question: str
    model: str
    text: str
    word: str
    expect: str
    explain: str
    layer: int = 0
    head: int = 0
    causal: bool | None = None
    occurrence: int = 0


@dataclass(frozen=True)
class Choice:
    """A multiple-choice question with an explained answer, revealed once the student has answered."""

    question: str
    options: tuple[str, ...]
    answer: int
    explain: str


@dataclass(frozen=True)
class Step:
    """One topic of the lesson.

    Attributes:
        id: a stable name (answers are kept under it).
        title: the step's heading.
        text: what to look at and why (markdown).
        links: pages that show it, opened in the right state.
        check: the knowledge check that ends the step.
        demo: the name of a small live chart drawn inline (see ``lessons.DEMOS``), or "".
    """

    id: str
    title: str
    text: str
    links: tuple[Link, ...]
    check: Predict | Choice
    demo: str = ""


IT_SENTENCE = DEFAULT_TEXT  # "The animal didn't cross the street because it was too tired."
STORY = "Lily found a red ball in the park. She gave it to Tom."
CROSSING = "the red car is fast"
FILL_SENTENCE = "lily found a red ball . she gave [MASK] to tom ."  # the Pretraining page's own example
QKV_HEAD = (3, 1)  # MiniLM: "it" → "animal" (measured: 0.68, the next key 0.10)
PREV_HEAD = (0, 2)  # MiniLM: a previous-token head (measured: 0.999 on the previous token)
STORY_HEAD = (2, 2)  # tiny-gpt-stories: "she" → "lily" (measured: 0.51, the next key 0.42)
CROSS_HEAD = (1, 1)  # tiny-translator cross-attention on CROSSING: writing voiture reads car, rouge reads red (1.00 each)
SOFTMAX_SCORES = (2.0, 1.0, 0.5, -1.0)  # the softmax step's live chart: four keys' scores
SOFTMAX_KEYS = ("animal", "street", "tired", "the")

STEPS: tuple[Step, ...] = (
    Step(
        "rnn", "Why RNNs struggle with long range",
        "A recurrent encoder reads a sentence one word at a time and hands the decoder **one vector**: "
        "everything about a long sentence must squeeze through it, and early words fade. Bahdanau, Cho and "
        "Bengio (2015) let the decoder look back at **every** encoder state before each word it writes, with "
        "weights it computes on the fly: attention. On the Bahdanau page, watch the alignment map: each French "
        "word is written while looking at a few English words.",
        (Link("bahdanau.py", "Open the Bahdanau page with a long sentence",
              {"bahdanau_text": "the old tree is under the bridge ."}),),
        Choice("A plain RNN encoder–decoder (no attention) gives its decoder…",
               ("one vector per English word", "one fixed-size vector for the whole sentence",
                "the English words themselves"), 1,
               "The encoder's last state is the decoder's only view of the sentence, whatever its length. "
               "Attention gives the decoder every encoder state (one per word) and a weight for each."),
    ),
    Step(
        "qkv", "Attention as soft retrieval: Q, K, V",
        "Each token asks a question (its **query** q), every token offers a label (its **key** k) and a "
        "content (its **value** v). The query is compared with every key (q·k), the scores become weights, "
        "and the token receives the weighted average of the values: a dictionary look-up where every entry "
        "matches a little. Guess where the pronoun *it* looks, then check with the real head.",
        (Link("step_by_step.py", f"Open “it” in Step by step (MiniLM, layer {QKV_HEAD[0]} head {QKV_HEAD[1]})",
              {"text": IT_SENTENCE, "model": "minilm", "layer": str(QKV_HEAD[0]), "head": str(QKV_HEAD[1]),
               "step_query": "10"}),),
        Predict(f"In MiniLM, layer {QKV_HEAD[0]} head {QKV_HEAD[1]}: which token does **it** look at most?",
                "minilm", IT_SENTENCE, "it",
                "animal", "This head resolves the pronoun: *it* puts more weight on *animal* than on *street*. "
                "Not every head does this; many look at neighbours or park their weight on [CLS].", *QKV_HEAD),
    ),
    Step(
        "dot", "Scaled dot-product attention, step by step",
        "z = softmax(q·Kᵀ / √d + mask) V. The Step by step page takes this apart for one query token with the "
        "model's real numbers: q, every k, the dot products, the scaling, the mask, the softmax and the weighted "
        "sum of values. Below: the same steps for *it*, its five strongest keys.",
        (Link("step_by_step.py", f"Open every step of “it” (MiniLM, layer {QKV_HEAD[0]} head {QKV_HEAD[1]})",
              {"text": IT_SENTENCE, "model": "minilm", "layer": str(QKV_HEAD[0]), "head": str(QKV_HEAD[1]),
               "step_query": "10"}),),
        Choice("MiniLM's heads have d = 32 numbers per query and key. By what are the dot products multiplied "
               "before the softmax?", ("32", "1/32", "1/√32 ≈ 0.177", "nothing (1)"), 2,
               "Scaled dot-product attention divides by √d: the table on Step by step shows the row "
               "“× scale” with 0.177 for MiniLM."),
        demo="steps",
    ),
    Step(
        "softmax", "Softmax and the √d scale",
        "Softmax turns any scores into positive weights that sum to 1; multiplying the scores by a larger "
        "factor makes it sharper (nearly all weight on the best key), a smaller one flatter. Dot products of "
        "d-dimensional vectors grow like √d, so without dividing by √d a wide head's softmax would be almost "
        "one-hot and learn slowly. Move the scale below, then try your own Q, K, V in Step by step's calculator.",
        (Link("step_by_step.py", "Open Step by step (the calculator is at the bottom)"),),
        Choice("The scale goes to 0 (every score multiplied by 0). What do the weights become?",
               ("all weight on the largest score", "all equal (1/n each)", "all zero"), 1,
               "softmax(0, 0, …, 0) gives every key the same weight 1/n: at infinite temperature the query "
               "cannot prefer anything. A very large scale does the opposite (one-hot)."),
        demo="softmax",
    ),
    Step(
        "heads", "Multi-head attention",
        "A layer runs several heads side by side, each with its own Q, K and V projections, and concatenates "
        "their outputs. Heads specialise: a **previous-token** head draws a line just below the diagonal, a "
        "**sink** head parks its weight on [CLS] or the first token, a few follow meaning. The Heads page shows "
        "every layer × head at once and measures each one.",
        (Link("heads.py", "Open every head of MiniLM with their metrics",
              {"text": IT_SENTENCE, "model": "minilm", "heads_tab": "Per-head metrics"}),),
        Predict(f"MiniLM, layer {PREV_HEAD[0]} head {PREV_HEAD[1]}: which token does **street** look at most?",
                "minilm", IT_SENTENCE, "street", "the",
                "A previous-token head: almost every token looks at the token just before it (*street* → *the*). "
                "Such heads let later layers see word pairs.", *PREV_HEAD),
    ),
    Step(
        "positions", "Positional encodings",
        "Attention compares tokens by content only: shuffle the words and each token gets the same scores with "
        "the same words. Models add (or rotate in) a position signal: sinusoids (the original transformer), "
        "learned tables (BERT, GPT-2), rotations (RoPE) or distance biases (ALiBi). The Positional page shows "
        "each, and a decoder with its positions removed.",
        (Link("positional.py", "Open the order-blindness demo", {Positional.tab: "Order blindness"}),
         Link("positional.py", "Open the sinusoidal encodings", {Positional.tab: "Sinusoidal"})),
        Choice("An encoder with no positional encoding (and no mask) reads a sentence, then the same words "
               "shuffled. Its attention weights…",
               ("are unchanged, position by position", "are the same weights, permuted with the words",
                "are completely different"), 1,
               "Without positions, a token's scores depend only on which words are there, not where: shuffling "
               "the words shuffles the rows and columns of the pattern the same way (the Order blindness tab)."),
    ),
    Step(
        "causal", "The causal mask: encoder vs decoder",
        "An encoder (BERT, MiniLM) lets every token look everywhere. A decoder (GPT) adds the **causal mask**: "
        "−∞ above the diagonal, so a token sees only itself and the past, as it must when it writes text one "
        "token at a time. On Explore, switch the mask on for MiniLM and compare, or open our stories GPT.",
        (Link("explore.py", "Open MiniLM with the mask on, side by side",
              {"text": IT_SENTENCE, "model": "minilm", "causal": "true", "explore_tab": "Causal mask off vs on"}),
         Link("explore.py", "Open the stories GPT (a decoder) on a story",
              {"text": STORY, "model": "tiny-gpt-stories", "layer": str(STORY_HEAD[0]),
               "head": str(STORY_HEAD[1])})),
        Predict(f"Our stories GPT (a decoder, causal), layer {STORY_HEAD[0]} head {STORY_HEAD[1]}: which token does "
                "**she** look at most?",
                "tiny-gpt-stories", STORY, "she", "lily",
                "The pronoun head reaches back to the girl's name. It can only look back: *tom*, after "
                "*she*, gets exactly 0 (the causal mask).", *STORY_HEAD),
    ),
    Step(
        "cross", "Cross-attention and Bahdanau alignment",
        "In an encoder–decoder each output token also attends to the **source** sentence: its queries come from "
        "the decoder, its keys and values from the encoder (cross-attention), as Bahdanau's RNN did. French "
        "puts the adjective after the noun (*the red car* → *la voiture rouge*), so the alignment map crosses.",
        (Link("bahdanau.py", "Open the alignment map of “the red car is fast”", {"bahdanau_text": CROSSING}),
         Link("explore.py", "Open the transformer translator's cross-attention",
              {"text": CROSSING, "model": "tiny-translator", "explore_block": "cross",
               "layer": str(CROSS_HEAD[0]), "head": str(CROSS_HEAD[1])})),
        Predict("The Bahdanau translator writes **rouge**. Which English word does it read most?",
                "bahdanau-translator", CROSSING, "rouge", "red",
                "It goes back to *red*, after reading *car* for *voiture*: the crossing in the map."),
    ),
    Step(
        "vit", "Vision Transformer: images as patches",
        "A ViT cuts an image into square patches, turns each into a vector (a token), adds positions and a "
        "[CLS] token whose final state is classified. Then it is the same attention: each patch looks at every "
        "other. Our tiny ViT reads scikit-learn's 8×8 digits in 2×2 patches.",
        (Link("vit.py", "Open the Vision Transformer on a digit", {Vit.source: "digit"}),),
        Choice("An 8×8 digit cut into 2×2 patches, plus [CLS]: how many tokens does the ViT read?",
               ("16", "17", "64", "65"), 1,
               "(8/2) × (8/2) = 16 patches, plus the [CLS] token: 17. The ViT page draws the 4×4 grid."),
    ),
    Step(
        "pretraining", "Pretraining objectives: masked words, next token, spans",
        "Before any task, a transformer learns from plain text, and the objective decides what each position "
        "may see. **BERT** hides words and guesses them back (masked LM): no mask, every word sees both sides. "
        "**GPT** predicts the next token: the causal mask, or it could just read the answer. **T5** replaces "
        "spans with sentinels and an encoder–decoder writes them back. Fill in a blank with our small "
        "masked-LM encoder, then compare the three objectives on one sentence.",
        (Link("pretraining.py", "Fill in the blank with our masked-LM encoder",
              {"pretraining_tab": "Fill in the blank", "fill_text": FILL_SENTENCE}),
         Link("pretraining.py", "Compare the three objectives side by side",
              {"pretraining_tab": "Objectives side by side"})),
        Choice("GPT is pretrained to predict the next token at every position at once. Which attention mask "
               "must it use while training?",
               ("none: every token sees the whole text", "the causal mask: each token sees itself and the past",
                "cross-attention to the input only"), 1,
               "All positions are trained in one pass; if token i could see token i + 1, predicting it would be "
               "copying. BERT's objective hides the answers in the input instead, so it needs no mask."),
    ),
)
