"""A shared server's model policy (``engine.policy``) against abuse, at the engine's level.

A student can type anything into a page's model field. With the server's policy
(``engine.load(..., policy=ServerPolicy.from_env())``, what the app passes):

- typed folders are refused unless they resolve inside ``AP_MODEL_DIRS``, with one message that does
  not depend on whether the path exists (a real model folder, a missing path, ``~/.ssh``, a symlink
  or ``..`` out of the allowed directory);
- Hub downloads are measured from the Hub's metadata and refused above ``AP_HUB_MAX_GB`` before any
  download starts, run one at a time, and stop entirely with ``AP_HUB=off``;
- no message repeats more than ~80 characters of input or names the server's folders.

The Hub is never reached: ``huggingface_hub.model_info`` and ``snapshot_download`` are replaced.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import huggingface_hub
import pytest
from huggingface_hub.hf_api import RepoSibling

import engine
from engine.checkpoint import load_checkpoint
from engine.families import hub
from engine.policy import FOLDER_REFUSED, FOLDERS_OFF, GB, HUB_OFF, ServerPolicy
from engine.records import CheckpointError, ModelUnavailableError
from engine.text import hide_paths, quote_input

pytestmark = pytest.mark.reliability

ROOT = str(Path(__file__).resolve().parents[2])
HOME = str(Path.home())
HUGE = 10_000


def refusal(model_id, policy: ServerPolicy | None = None) -> str:
    with pytest.raises(ModelUnavailableError) as info:
        engine.load(model_id, policy=ServerPolicy.from_env() if policy is None else policy)
    return str(info.value)


def assert_discreet(message: str, limit: int = 200) -> None:
    """Short, and naming neither the app's install folder nor the server user's home."""
    assert len(message) <= limit, (len(message), message[:300])
    assert ROOT not in message, message
    assert HOME not in message, message


# ---- settings -------------------------------------------------------------------------------------


def test_defaults_are_folders_off_hub_on_two_gb():
    policy = ServerPolicy.from_env({})
    assert policy == ServerPolicy() and policy.model_dirs == () and policy.hub is True
    assert policy.hub_max_bytes == 2 * GB


def test_settings_are_read_from_the_environment(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.setenv("AP_MODEL_DIRS", f"{tmp_path / 'a'}::relative/dir:{tmp_path / 'b'}/../b")
    monkeypatch.setenv("AP_HUB", "OFF")
    monkeypatch.setenv("AP_HUB_MAX_GB", "0.5")
    policy = ServerPolicy.from_env()
    assert policy.model_dirs == ((tmp_path / "a").resolve(), (tmp_path / "b").resolve())  # relative: left out
    assert policy.hub is False and policy.hub_max_bytes == GB // 2


@pytest.mark.parametrize(
    "value, hub", [("", True), ("on", True), ("1", True), ("off", False), ("no", False), ("maybe", False)]
)
def test_an_unreadable_hub_switch_fails_closed(value, hub):
    assert ServerPolicy.from_env({"AP_HUB": value}).hub is hub


@pytest.mark.parametrize("value", ["lots", "-1", "nan", "inf"])
def test_an_unreadable_size_cap_keeps_the_default(value):
    assert ServerPolicy.from_env({"AP_HUB_MAX_GB": value}).hub_max_bytes == 2 * GB


# ---- typed folders --------------------------------------------------------------------------------


def test_folders_are_refused_by_default_with_one_message(folders):
    typed = [str(folders.outside), str(folders.missing), "~/.ssh", "~", "/", "./", str(folders.inside)]
    messages = {refusal(path) for path in typed}
    assert messages == {FOLDERS_OFF}
    assert_discreet(FOLDERS_OFF)


def test_outside_the_allowed_dirs_every_path_gets_the_same_message(folders, monkeypatch):
    monkeypatch.setenv("AP_MODEL_DIRS", str(folders.allowed))
    typed = [
        str(folders.outside),  # a real model folder
        str(folders.missing),  # nothing there
        "~/.ssh",
        str(folders.link),  # a symlink inside the allowed dir, pointing out of it
        folders.dotdot,  # climbs out with ..
        f"{folders.allowed}/../{folders.allowed.name}-evil",  # a sibling whose name starts like the allowed one
        str(folders.allowed.parent),
        "/etc",
        "~no-such-user-xyz/models",
        "/tmp/\x00nul",
    ]
    messages = {refusal(path) for path in typed}
    assert messages == {FOLDER_REFUSED}
    assert_discreet(FOLDER_REFUSED)


def test_the_same_model_loads_inside_the_allowed_dir(folders, monkeypatch):
    monkeypatch.setenv("AP_MODEL_DIRS", str(folders.allowed))
    model = engine.load(str(folders.inside), policy=ServerPolicy.from_env())
    assert model.spec.id == str(folders.inside) and model.spec.family == "encoder"
    assert engine.trace(model, "the cat sat").n_layers == 1


def test_an_allowed_dir_given_through_a_symlink_or_dotdot_is_resolved(folders, tmp_path):
    alias = tmp_path / "alias"
    alias.symlink_to(folders.allowed, target_is_directory=True)
    policy = ServerPolicy.from_env({"AP_MODEL_DIRS": f"{tmp_path}/x/../alias"})
    assert policy.folder(str(folders.inside)) == folders.inside.resolve()
    assert policy.folder(f"{alias}/bert") == folders.inside.resolve()
    with pytest.raises(ModelUnavailableError, match="not inside"):
        policy.folder(str(alias / "link"))


def test_inside_the_allowed_dir_a_folder_that_is_no_model_says_so_without_its_path(folders, monkeypatch):
    monkeypatch.setenv("AP_MODEL_DIRS", str(folders.allowed))
    message = refusal(str(folders.allowed / "nothing-here"))
    assert "config.json" in message
    assert str(folders.allowed) not in hide_paths(message)


def test_a_word_that_names_a_folder_in_the_working_directory_is_a_hub_id(folders, monkeypatch):
    """Under a policy, ``bert`` is never looked up on disk: it is a Hub id (here: the Hub is off)."""
    monkeypatch.chdir(folders.outside.parent)
    monkeypatch.setenv("AP_HUB", "off")
    assert refusal("bert") == HUB_OFF


def test_without_a_policy_the_engine_still_loads_any_folder(folders):
    """Python on one's own machine: ``engine.load(path)`` is unrestricted."""
    assert engine.load(str(folders.outside)).spec.family == "encoder"


# ---- the Hub --------------------------------------------------------------------------------------


class FakeHub:
    """Stands in for ``huggingface_hub``: nothing is cached, ``model_info`` lists ``files``, and a
    download records its call and returns ``folder`` (optionally waiting for ``release`` first)."""

    def __init__(self, files: dict[str, int | None], folder: Path, cached: Path | None = None):
        self.files, self.folder, self.cached = files, folder, cached
        self.downloads: list[dict] = []
        self.local_lookups = 0
        self.info_calls: list[dict] = []
        self.started = threading.Event()
        self.release: threading.Event | None = None

    def model_info(self, repo_id, **kwargs):
        self.info_calls.append(kwargs)
        siblings = [
            RepoSibling(rfilename=name, size=size if kwargs.get("files_metadata") else None)
            for name, size in self.files.items()
        ]
        return SimpleNamespace(id=repo_id, sha="0123abcd" * 5, siblings=siblings)

    def snapshot_download(self, repo_id, **kwargs):
        if kwargs.get("local_files_only"):
            self.local_lookups += 1
            if self.cached is not None:
                return str(self.cached)
            raise huggingface_hub.errors.LocalEntryNotFoundError("not in the cache")
        self.downloads.append({"repo_id": repo_id, **kwargs})
        self.started.set()
        if self.release is not None:
            assert self.release.wait(10)
        return str(self.folder)


@pytest.fixture
def online(monkeypatch):
    """The offline switches the test run sets, turned off (the fake Hub is all there is)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)


def install(monkeypatch, fake: FakeHub) -> FakeHub:
    monkeypatch.setattr(huggingface_hub, "model_info", fake.model_info)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake.snapshot_download)
    return fake


SMALL = {"config.json": 600, "model.safetensors": 80_000, "vocab.txt": 100, "tokenizer.json": 2_000}


def test_a_five_gb_model_is_refused_before_any_download(online, monkeypatch, folders):
    fake = install(monkeypatch, FakeHub({**SMALL, "model.safetensors": 5 * GB}, folders.outside))
    message = refusal("some-org/huge-model")
    assert fake.downloads == []  # nothing was downloaded: the size came from the metadata
    assert fake.info_calls and all(call.get("files_metadata") for call in fake.info_calls)
    assert "5.0 GB" in message and "2 GB" in message
    assert_discreet(message)


def test_the_cap_follows_the_setting(online, monkeypatch, folders):
    fake = install(monkeypatch, FakeHub({**SMALL, "model.safetensors": 600_000_000}, folders.outside))
    monkeypatch.setenv("AP_HUB_MAX_GB", "0.5")
    assert "0.5 GB" in refusal("some-org/medium-model")
    assert fake.downloads == []


def test_a_small_model_downloads_its_measured_revision_and_loads(online, monkeypatch, folders):
    # a 10 GB pickle beside the safetensors is never downloaded, so it does not count
    fake = install(monkeypatch, FakeHub({**SMALL, "pytorch_model.bin": 10 * GB, "big.onnx": 9 * GB}, folders.outside))
    model = engine.load("some-org/small-bert", policy=ServerPolicy.from_env())
    assert model.spec.id == "some-org/small-bert"
    [call] = fake.downloads
    assert call["revision"] == "0123abcd" * 5  # the commit whose sizes were checked
    assert hub.download_size([RepoSibling(rfilename=n, size=s) for n, s in fake.files.items()]) == sum(SMALL.values())


def test_a_model_of_unknown_size_is_not_downloaded(online, monkeypatch, folders):
    fake = install(monkeypatch, FakeHub({**SMALL, "model.safetensors": None}, folders.outside))
    assert "how large" in refusal("some-org/mystery")
    assert fake.downloads == []


def test_a_second_download_is_refused_while_one_runs(online, monkeypatch, folders):
    fake = install(monkeypatch, FakeHub(SMALL, folders.outside))
    fake.release = threading.Event()
    policy = ServerPolicy.from_env()
    first: dict = {}

    def download() -> None:
        try:
            first["path"] = hub.resolve("some-org/first", policy)
        except Exception as err:  # noqa: BLE001 — reported below
            first["error"] = err

    thread = threading.Thread(target=download)
    thread.start()
    try:
        assert fake.started.wait(10)
        message = refusal("some-org/second", policy)
    finally:
        fake.release.set()
        thread.join(10)
    assert message == hub.DOWNLOAD_BUSY and "try again in a minute" in message
    assert first == {"path": folders.outside}
    assert [d["repo_id"] for d in fake.downloads] == ["some-org/first"]
    assert hub.resolve("some-org/second", policy) == folders.outside  # the lock was let go


def test_without_a_policy_a_second_download_waits_its_turn(online, monkeypatch, folders):
    fake = install(monkeypatch, FakeHub(SMALL, folders.outside))
    fake.release = threading.Event()
    done: list[str] = []
    threads = [threading.Thread(target=lambda i=i: done.append(str(hub.resolve(f"some-org/m{i}")))) for i in range(2)]
    for thread in threads:
        thread.start()
    assert fake.started.wait(10)
    fake.release.set()
    for thread in threads:
        thread.join(10)
    assert len(done) == 2 and len(fake.downloads) == 2


def test_hub_off_refuses_hub_ids_even_when_cached(online, monkeypatch, folders):
    fake = install(monkeypatch, FakeHub(SMALL, folders.outside, cached=folders.outside))
    monkeypatch.setenv("AP_HUB", "off")
    for model_id in ("gpt2", "some-org/small-bert", "bert-base-uncased"):
        assert refusal(model_id) == HUB_OFF
    assert fake.local_lookups == 0 and fake.downloads == [] and fake.info_calls == []
    assert engine.load("tiny-random-gpt2", policy=ServerPolicy.from_env()).spec.id == "tiny-random-gpt2"  # catalog


def test_a_cached_hub_model_needs_no_size_check(online, monkeypatch, folders):
    files = {**SMALL, "model.safetensors": 50 * GB}
    fake = install(monkeypatch, FakeHub(files, folders.outside, cached=folders.outside))
    assert engine.load("some-org/cached", policy=ServerPolicy.from_env()).spec.family == "encoder"
    assert fake.info_calls == [] and fake.downloads == []


# ---- what messages repeat -------------------------------------------------------------------------


LONG_INPUTS = {
    "letters": "a" * HUGE,
    "absolute path": "/" + "a" * HUGE,
    "home path": "~/" + "b" * HUGE,
    "dot path": "./" + "c/" * (HUGE // 2),
    "hub-like": "org/" + "d" * HUGE,
    "spaces": "bad id " * (HUGE // 7),
    "newlines": "x\n" * (HUGE // 2),
    "markdown": "**" + "[a](http://e.x)" * (HUGE // 15),
}


@pytest.mark.parametrize("text", LONG_INPUTS.values(), ids=LONG_INPUTS.keys())
@pytest.mark.parametrize("setting", ["defaults", "dirs", "hub off"])
def test_no_message_for_a_huge_input_is_long_or_names_server_folders(text, setting, folders, monkeypatch):
    if setting == "dirs":
        monkeypatch.setenv("AP_MODEL_DIRS", str(folders.allowed))
    if setting == "hub off":
        monkeypatch.setenv("AP_HUB", "off")
    assert_discreet(refusal(text))


@pytest.mark.parametrize("text", LONG_INPUTS.values(), ids=LONG_INPUTS.keys())
def test_without_a_policy_messages_are_short_too(text):
    with pytest.raises(ModelUnavailableError) as info:
        engine.load(text)
    assert_discreet(str(info.value))


def test_a_folder_without_config_is_named_as_typed_not_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelUnavailableError) as info:
        engine.load("~/empty")
    assert "'~/empty'" in str(info.value) and str(tmp_path) not in str(info.value)


def test_checkpoint_errors_name_files_not_folders(tmp_path):
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(tmp_path, "nope")
    assert "nope.json" in str(info.value) and str(tmp_path) not in str(info.value)
    (tmp_path / "nope.json").write_text(
        '{"format": "attention-playground/1", "kind": "transformer", "model_config": {}, "vocab": {"tokens": []}}'
    )
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(tmp_path, "nope")
    assert str(tmp_path) not in str(info.value)


def test_unknown_words_are_cut_in_notices():
    from engine.corpora import dates
    from engine.corpora.translation import UnknownWordError
    from engine.text import unknown_words_notice

    notices = [unknown_words_notice(["w" * HUGE]), str(UnknownWordError(["q" * HUGE, "z" * HUGE]))]
    with pytest.raises(ValueError) as info:
        dates.normalise("12 " + "m" * HUGE + " 2024")
    notices.append(str(info.value))
    for notice in notices:
        assert_discreet(notice)


def test_quote_input_and_hide_paths():
    assert quote_input("gpt2") == "'gpt2'"
    assert quote_input("x" * HUGE) == "'" + "x" * 79 + "…'"
    assert quote_input("line\nbreak\x00") == "'line break '"
    missing = f"[Errno 2] No such file: '{ROOT}/assets/checkpoints/x.json'"
    assert hide_paths(missing) == "[Errno 2] No such file: '…/x.json'"
    assert hide_paths("see https://huggingface.co/gpt2 and 1/2") == "see https://huggingface.co/gpt2 and 1/2"
