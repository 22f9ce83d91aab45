"""Edges of the engine: bad input, bad model ids, odd text, layering, text helpers, threads."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import engine
from engine.text import MAX_CHARS, byte_level_display, clean_input, clean_token

MODELS = ("minilm", "tiny_gpt2")  # session fixtures from conftest


@pytest.fixture(params=MODELS)
def model(request):
    return request.getfixturevalue(request.param)


# ---- empty and invalid input -----------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    ["", "   ", "\n\t \r\n", "\u200b\u200c\u200d\ufeff\u2060", " \u200b \u00ad\n", "\x00\x07\x1b"],
    ids=["empty", "spaces", "whitespace", "zero-width", "mixed-invisible", "control-only"],
)
def test_empty_text_is_rejected_readably(model, text: str) -> None:
    with pytest.raises(engine.EmptyInputError) as info:
        engine.trace(model, text)
    message = str(info.value)
    assert message and "empty" in message.lower()
    assert "Traceback" not in message


@pytest.mark.parametrize("value", [None, 42, b"The cat", ["The", "cat"]], ids=["none", "int", "bytes", "list"])
def test_non_text_is_rejected(model, value) -> None:
    with pytest.raises(engine.EmptyInputError) as info:
        engine.trace(model, value)
    assert "text" in str(info.value).lower()


def test_empty_input_error_is_an_engine_error_and_value_error() -> None:
    assert issubclass(engine.EmptyInputError, engine.EngineError)
    assert issubclass(engine.EmptyInputError, ValueError)
    assert issubclass(engine.ModelUnavailableError, engine.EngineError)


@pytest.mark.parametrize("max_tokens", [0, -1, -512, 2.5, "24", None, True], ids=repr)
def test_bad_max_tokens_raise_engine_error(model, max_tokens) -> None:
    with pytest.raises(engine.EngineError) as info:
        engine.trace(model, "The cat sat on the mat.", max_tokens=max_tokens)
    assert not isinstance(info.value, engine.EmptyInputError)
    assert "max_tokens" in str(info.value)


def test_max_tokens_below_the_special_tokens_is_rejected(minilm) -> None:
    # [CLS] ... [SEP]: at least one real token needs 3
    with pytest.raises(engine.EngineError, match="at least 3"):
        engine.trace(minilm, "The cat sat.", max_tokens=2)
    tr = engine.trace(minilm, "The cat sat.", max_tokens=3)
    assert tr.tokens.strings == ("[CLS]", "the", "[SEP]")
    assert tr.truncated and tr.n_input_tokens == 6


def test_numpy_integer_max_tokens_is_accepted(tiny_gpt2) -> None:
    tr = engine.trace(tiny_gpt2, "The cat sat on the mat.", max_tokens=np.int64(3))
    assert len(tr.tokens) == 3 and tr.truncated


def test_max_tokens_over_the_model_limit_is_clamped_with_a_notice(minilm, tiny_gpt2) -> None:
    tr = engine.trace(minilm, "The cat sat on the mat.", max_tokens=100_000)
    assert not tr.truncated and len(tr.tokens) == 9
    assert tr.notices == (), "a short text needs no word about the limit"

    long_text = "the cat sat on the mat. " * 150  # well over 512 tokens
    tr = engine.trace(minilm, long_text, max_tokens=5000)
    assert minilm.max_positions == 512
    assert tr.truncated and len(tr.tokens) == 512 and tr.n_input_tokens > 512
    assert tr.pattern(0, 0).shape == (512, 512)
    assert any("512" in note for note in tr.notices) and len(tr.notices) == 2, tr.notices
    assert tiny_gpt2.max_positions == 16384  # the offline long-input model (test_overview.py)


def test_text_over_max_chars_is_cut_with_a_notice(tiny_gpt2) -> None:
    tr = engine.trace(tiny_gpt2, "ab" * MAX_CHARS, max_tokens=16)
    assert tr.truncated and len(tr.tokens) == 16
    assert tr.notices


# ---- odd text ----------------------------------------------------------------------------------
ODD_TEXTS = {
    "html": "<script>alert(1)</script> <b onclick='x()'>bold</b> &amp; &lt;",
    "emoji": "I ❤️ attention 🙂👍🏽 👨‍👩‍👧 !",
    "rtl": "שלום עולם and مرحبا بالعالم \u202eevil\u202c",
    "combining": "Ame\u0301lie, Zalgo: Z\u0351\u0352a\u0353l\u0354g\u0355o, n\u0303",
    "cjk": "東京は日本の首都です。我爱注意力机制。한국어 텍스트",
    "mixed": "tab\there\nnew line\r\n«quotes» “smart” — dash… ½ ² x\u00a0y",
    "lone-surrogate": "abc\ud800def",
}


@pytest.mark.parametrize("name", sorted(ODD_TEXTS))
def test_odd_text_traces(model, name: str) -> None:
    tr = engine.trace(model, ODD_TEXTS[name])
    n = len(tr.tokens)
    assert n == len(tr.tokens.ids) == len(tr.tokens.special) > 0
    assert tr.key_tokens is tr.tokens
    for layer in (0, tr.n_layers - 1):
        p = tr.pattern(layer)
        assert p.shape == (tr.n_heads, n, n)
        assert np.all(np.isfinite(p))
        np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-5)
    assert all(isinstance(s, str) and s for s in tr.tokens.strings)
    assert len(set(tr.tokens.labels())) == n


def test_html_tokens_are_plain_text(tiny_gpt2) -> None:
    tr = engine.trace(tiny_gpt2, ODD_TEXTS["html"])
    # display strings keep the characters; escaping is the page's job, but nothing is lost
    assert "<" in "".join(tr.tokens.strings) and "script" in "".join(tr.tokens.strings)


# ---- model ids and folders ----------------------------------------------------------------------
# How long a refusal takes is measured by bench/bench_responsiveness.py; these tests pin why it is quick:
# which refusals never reach the network, and that the one network probe carries a timeout.
@pytest.fixture()
def hub_calls(monkeypatch):
    """Every call the engine makes to the Hub's ``model_info`` / ``snapshot_download``, passed through."""
    import huggingface_hub

    calls = []
    for name in ("model_info", "snapshot_download"):
        real = getattr(huggingface_hub, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            calls.append((_name, kwargs))
            return _real(*args, **kwargs)

        monkeypatch.setattr(huggingface_hub, name, spy)
    return calls


def _refused(model_id):
    with pytest.raises(engine.ModelUnavailableError) as info:
        engine.load(model_id)
    return info.value


def test_unknown_hub_id_offline_fails_without_the_network(monkeypatch, hub_calls) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    err = _refused("this-model-does-not-exist-xyz")
    assert "offline" in str(err).lower()
    assert "this-model-does-not-exist-xyz" in str(err)
    assert [name for name, _ in hub_calls] == ["snapshot_download"]  # the local cache only
    assert hub_calls[0][1].get("local_files_only") is True


def test_unknown_hub_id_online_without_network_fails_after_one_bounded_probe(monkeypatch, hub_calls) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    import huggingface_hub.constants

    from engine.families.hub import PROBE_TIMEOUT_S

    # huggingface_hub reads the variable at import time: switch its copy off as well, so the
    # network path really runs (no network on the test machines; a 404 where there is one)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    err = _refused("this-model-does-not-exist-xyz")
    assert "this-model-does-not-exist-xyz" in str(err) and "Hub" in str(err)
    assert "HF_HUB_OFFLINE" not in str(err)  # it took the network path, not the offline shortcut
    probes = [kwargs for name, kwargs in hub_calls if name == "model_info"]
    assert len(probes) == 1 and 0 < probes[0]["timeout"] == PROBE_TIMEOUT_S <= 5  # one probe, bounded
    assert not [
        kwargs for name, kwargs in hub_calls if name == "snapshot_download" and not kwargs.get("local_files_only")
    ]


@pytest.mark.parametrize(
    "model_id",
    ["", "   ", None, 123, "../etc", "gpt2/../../etc", "x y", "a" * 300, "bad\x00id", "~nobody-home-xyz/model"],
    ids=["empty", "blank", "none", "int", "parent", "traversal", "space", "too-long", "nul", "tilde"],
)
def test_invalid_ids_are_rejected_readably(model_id, monkeypatch, tmp_path, hub_calls) -> None:
    monkeypatch.chdir(tmp_path)
    err = _refused(model_id)
    assert str(err) and "Traceback" not in str(err)
    assert not [name for name, _ in hub_calls if name == "model_info"], "an invalid id reached the network"


def test_folder_without_config(tmp_path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"")
    err = _refused(str(tmp_path))
    assert "config.json" in str(err)


@pytest.mark.parametrize(
    "content, words",
    [
        ('{"model_type": "xlnet"}', ["xlnet", "bert", "gpt2", "t5", "llama"]),
        ('{"model_type": "bert", "position_embedding_type": "relative_key"}', ["relative_key"]),
        ("{not json", ["config.json"]),
        ("[1, 2, 3]", ["config.json"]),
        ('"bert"', ["config.json"]),
        ("", ["config.json"]),
    ],
    ids=["unsupported", "relative-positions", "corrupt", "list", "string", "empty-file"],
)
def test_bad_config_is_rejected_readably(tmp_path, content: str, words: list[str]) -> None:
    (tmp_path / "config.json").write_text(content)
    err = _refused(str(tmp_path))
    for word in words:
        assert word in str(err)


def test_binary_config_is_rejected(tmp_path) -> None:
    (tmp_path / "config.json").write_bytes(b"\xff\xfe\x00garbage")
    _refused(str(tmp_path))


def test_supported_config_without_weights_is_rejected(tmp_path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    err = _refused(str(tmp_path))
    assert str(tmp_path) in str(err)


# ---- catalog and import cost ---------------------------------------------------------------------
def test_list_models_puts_offline_models_first() -> None:
    models = engine.list_models()
    ids = [m.id for m in models]
    assert ids[0] == "minilm" and "tiny-random-gpt2" in ids
    offline = [m.offline for m in models]
    assert offline == sorted(offline, reverse=True), "offline models must come first"
    assert models[0].family == "encoder" and models[ids.index("tiny-random-gpt2")].family == "decoder"
    assert len(set(ids)) == len(ids)
    assert all(
        m.label and m.family in {"encoder", "decoder", "encoder-decoder", "vit", "rnn-attention", "captioner"}
        for m in models
    )


def test_listing_models_does_not_import_heavy_modules(repo_root: Path) -> None:
    code = (
        "import json, sys, engine\n"
        "ids = [m.id for m in engine.list_models()]\n"
        "print(json.dumps({'ids': ids, 'mods': {m: m in sys.modules for m in "
        "('streamlit', 'torch', 'transformers')}}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(repo_root)},
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["ids"][0] == "minilm" and "tiny-random-gpt2" in result["ids"]
    assert not result["mods"]["streamlit"]
    # registry.py promises "Listing never imports torch or transformers"
    assert not result["mods"]["torch"], "engine.list_models() imported torch"
    assert not result["mods"]["transformers"], "engine.list_models() imported transformers"


# ---- layering ---------------------------------------------------------------------------------------
def _imported_roots(path: Path) -> set[str]:
    """Top-level package names a file imports: import statements, importlib.import_module, __import__."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in {"import_module", "__import__"} and isinstance(node.args[0].value, str):
                roots.add(node.args[0].value.split(".")[0])
    return roots


def test_import_scanner_sees_every_import_form(tmp_path) -> None:
    src = tmp_path / "x.py"
    src.write_text(
        "import os.path\nfrom a.b import c\nfrom . import rel\n"
        "def f():\n    import streamlit as st\n"
        "import importlib\nimportlib.import_module('torch.nn')\n__import__('transformers')\n"
    )
    assert _imported_roots(src) == {"os", "a", "streamlit", "importlib", "torch", "transformers"}


def test_engine_never_imports_streamlit(repo_root: Path) -> None:
    files = sorted((repo_root / "engine").rglob("*.py"))
    assert files
    offenders = [str(f.relative_to(repo_root)) for f in files if "streamlit" in _imported_roots(f)]
    assert not offenders, offenders


def test_app_never_imports_torch_or_transformers(repo_root: Path) -> None:
    app = repo_root / "app"
    files = sorted(app.rglob("*.py"))
    assert len(files) > 10  # the app's files were found: an empty scan would pass anything
    offenders = {
        str(f.relative_to(repo_root)): sorted(_imported_roots(f) & {"torch", "transformers"})
        for f in files
        if _imported_roots(f) & {"torch", "transformers"}
    }
    assert not offenders, offenders


# ---- text helpers ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "piece, shown",
    [
        ("##ing", "ing"),
        ("▁the", "the"),
        ("Ġcat", "cat"),
        ("Ġ", "␣"),
        ("Ċ", "↵"),
        ("cat", "cat"),
        ("##", "##"),
        ("▁", "␣"),
        ("ĊĊ", "↵"),
        ("[CLS]", "[CLS]"),
    ],
)
def test_clean_token(piece: str, shown: str) -> None:
    assert clean_token(piece) == shown


def test_clean_token_byte_level_text() -> None:
    assert clean_token(" cat", byte_level=True) == "cat"
    assert clean_token(" ", byte_level=True) == "␣"
    assert clean_token("\n", byte_level=True) == "↵"
    assert clean_token("\t", byte_level=True) == "⇥"
    assert clean_token("##ing", byte_level=True) == "##ing"  # decoded text is not WordPiece


def _byte_level(text: str) -> str:
    """Independent reference: the tokenizers library's own byte→character mapping."""
    from tokenizers import pre_tokenizers

    pieces = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False).pre_tokenize_str(text)
    return "".join(p for p, _ in pieces)


@pytest.mark.parametrize(
    "text", [" cat", "café", " 東京", "🙂", "a\u0301", "!~¡¬®ÿ", " \t", "x" + bytes(range(1, 32)).decode()]
)
def test_byte_level_display_round_trips(text: str) -> None:
    piece = _byte_level(text)
    assert len(piece) == len(text.encode("utf-8"))
    assert byte_level_display(piece) == clean_token(text, byte_level=True)


@pytest.mark.parametrize("char, n_bytes", [("é", 1), ("🙂", 2), ("🙂", 3), ("東", 2)])
def test_byte_level_display_partial_character_is_hex(char: str, n_bytes: int) -> None:
    raw = char.encode("utf-8")[:n_bytes]
    piece = _byte_level(char)[:n_bytes]
    assert byte_level_display(piece) == "⟨" + " ".join(f"{b:02x}" for b in raw) + "⟩"


def test_byte_level_display_of_gpt2_tokens(tiny_gpt2) -> None:
    tr = engine.trace(tiny_gpt2, "The café 🙂")
    shown = "".join(tr.tokens.strings)
    assert shown.startswith("Thecaf")
    assert "⟨f0⟩" in tr.tokens.strings or "⟨f0 9f⟩" in shown  # the emoji is split into bytes


def test_clean_input() -> None:
    assert clean_input("a\x00b\x1bc\nd\te\x7f") == ("abc\nd\te", False)
    assert clean_input("line one\nline two") == ("line one\nline two", False)
    assert clean_input("e\u0301") == ("é", False)  # NFC
    assert clean_input("abc\ud800") == ("abc", False)  # a lone surrogate cannot be encoded
    text, cut = clean_input("x" * (MAX_CHARS + 10))
    assert cut and len(text) == MAX_CHARS
    for bad in ("", " \n ", "\u200b\ufeff", 3, None):
        with pytest.raises(engine.EmptyInputError):
            clean_input(bad)


# ---- threads ---------------------------------------------------------------------------------------
def test_concurrent_traces_on_one_model_do_not_mix(tiny_gpt2) -> None:
    sentences = ["The cat sat on the mat because it was tired.", "Queries ask, keys answer!"]
    expected = {}
    for s in sentences:
        tr = engine.trace(tiny_gpt2, s)
        expected[s] = [tr.pattern(layer) for layer in range(tr.n_layers)]
    assert len({e[0].shape for e in expected.values()}) == 2  # different lengths: a mix-up shows

    failures: list[str] = []
    start = threading.Barrier(len(sentences))

    def work(sentence: str) -> None:
        try:
            start.wait()
            for i in range(10):
                tr = engine.trace(tiny_gpt2, sentence)
                for layer, want in enumerate(expected[sentence]):
                    got = tr.pattern(layer)
                    if got.shape != want.shape or not np.allclose(got, want, atol=1e-6):
                        failures.append(f"{sentence!r} iteration {i} layer {layer} differs")
        except Exception as err:  # noqa: BLE001 - reported below
            failures.append(f"{sentence!r}: {type(err).__name__}: {err}")

    threads = [threading.Thread(target=work, args=(s,)) for s in sentences]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert not failures, failures[:5]
    assert all(not m._forward_hooks for m in tiny_gpt2.module.modules())
    assert not tiny_gpt2.lock.locked()
