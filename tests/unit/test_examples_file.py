"""``assets/examples.toml`` read back as the picker's :class:`Example` sets, and a malformed copy refused by name."""

from __future__ import annotations

import pytest

from app.controls.examples import EXAMPLES, EXAMPLES_FILE, Example, read_examples


def test_the_file_reads_back_the_hand_checked_entries() -> None:
    assert read_examples() is EXAMPLES  # read once
    assert EXAMPLES["minilm"][0] == Example(
        "Coreference “it”",
        "The animal didn't cross the street because it was too tired.",
        "Query “it”: this head puts its largest weight on *animal*, not *street*.",
        3,
        1,
    )
    story = EXAMPLES["tiny-gpt-stories"][2]
    assert (story.text, story.layer, story.head) == (
        "Mia had a green kite. Ben had a pink drum. Mia had a green kite.",
        1,
        2,
    )
    assert (EXAMPLES["tiny-translator"][4].text, EXAMPLES["tiny-translator"][4].layer) == ("21 November 2026", None)
    assert list(EXAMPLES) == [
        "minilm",
        "tiny-gpt-stories",
        "tiny-translator",
        "induction-2l-attn-only",
        "encoder",
        "decoder",
        "encoder-decoder",
    ]
    assert EXAMPLES["encoder"] is EXAMPLES["decoder"] is EXAMPLES["encoder-decoder"]  # one shared English set
    assert EXAMPLES["encoder"][0].text == EXAMPLES["minilm"][0].text and EXAMPLES["encoder"][0].layer is None


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("layer = 0\nhead = 3\n", "layer = 0\n", r"\[\[tiny-gpt-stories\]\] entry 2: layer and head"),
        ('text = "Anna', 'txt = "Anna', r"\[\[tiny-gpt-stories\]\] entry 5: needs a non-empty text for text"),
        ("head = 9\n", 'head = "nine"\n', r"\[\[minilm\]\] entry 3: layer and head"),
        ('encoder = "english"', 'encoder = "englsh"', r"\[families\] names sets the file does not have"),
        ("[[minilm]]\n", "[[minilm]\n", "cannot read the example sets"),
    ],
)
def test_a_malformed_file_fails_naming_the_entry(tmp_path, old: str, new: str, message: str) -> None:
    text = EXAMPLES_FILE.read_text(encoding="utf-8")
    assert old in text
    broken = tmp_path / "examples.toml"
    broken.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_examples(broken)
