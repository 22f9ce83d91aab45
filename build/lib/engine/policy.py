"""A shared server's rules for the models its users may load, set by the admin in environment variables.

``engine.load(model_id)`` from Python loads any folder or Hugging Face Hub id: that is the caller's
own machine. A server passes ``policy=ServerPolicy.from_env()`` (the app does, for every model a
page loads), and then:

- a folder loads only when, after ``~``, symlinks and ``..`` are resolved, it lies inside one of the
  directories in ``AP_MODEL_DIRS`` (colon-separated; none by default, so typed folders are refused).
  A refused path gets the same message whether it exists or not, and the message does not repeat it;
- a Hub id loads only while ``AP_HUB`` is not ``off``; a download is refused before it starts when
  the files it would fetch add up to more than ``AP_HUB_MAX_GB`` (the Hub's own file sizes), and one
  download runs at a time in a process: a second one is refused at once with a try-again message
  (``engine.families.hub``).

Catalog ids (the bundled models, our checkpoints, a session's trained model) are not affected.

Example:
    >>> policy = ServerPolicy.from_env({"AP_MODEL_DIRS": "/srv/models", "AP_HUB_MAX_GB": "1"})
    >>> policy.hub_max_bytes
    1000000000
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from engine.records import ModelUnavailableError

log = logging.getLogger(__name__)

ENV_MODEL_DIRS = "AP_MODEL_DIRS"
ENV_HUB = "AP_HUB"
ENV_HUB_MAX_GB = "AP_HUB_MAX_GB"
DEFAULT_HUB_MAX_GB = 2.0
GB = 10**9  # the Hub shows sizes in decimal units

_ON = {"", "1", "on", "true", "yes"}
#: what an on/off setting may say to mean off (``AP_HUB``, ``AP_PREFETCH``)
OFF_WORDS = {"0", "off", "false", "no"}

#: refusals: fixed text, never the path, so they cannot tell whether a path exists
FOLDERS_OFF = "This server does not load models from folders typed here; pick a model from the list."
FOLDER_REFUSED = "That path is not inside a model folder this server allows; ask whoever runs it which folders do."
HUB_OFF = "Hugging Face Hub models are switched off on this server; pick a model from the list."


@dataclass(frozen=True)
class ServerPolicy:
    """What a model id typed into a shared server's form may load.

    The defaults are those of a server started with no ``AP_*`` settings.
    """

    model_dirs: tuple[Path, ...] = ()  # real (resolved) directories typed folders may lie in; () = no folders
    hub: bool = True  # Hugging Face Hub ids allowed at all (downloaded ones and new downloads)
    hub_max_bytes: int | None = int(DEFAULT_HUB_MAX_GB * GB)  # cap on one download; None = no cap

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServerPolicy:
        """The policy the ``AP_*`` variables set (``os.environ`` by default).

        A value that cannot be read is logged and replaced by the safe choice: an unreadable
        ``AP_HUB`` turns the Hub off, an unreadable ``AP_HUB_MAX_GB`` keeps the 2 GB default,
        a relative or unreadable directory in ``AP_MODEL_DIRS`` is left out.
        """
        env = os.environ if environ is None else environ
        return _parse(env.get(ENV_MODEL_DIRS, ""), env.get(ENV_HUB, ""), env.get(ENV_HUB_MAX_GB, ""))

    def folder(self, typed: str) -> Path:
        """The real folder ``typed`` names, when it lies inside one of :attr:`model_dirs`.

        Raises:
            ModelUnavailableError: folders are off, or the resolved path is outside every allowed
                directory (the same message whether it exists or not).
        """
        if not self.model_dirs:
            raise ModelUnavailableError(FOLDERS_OFF)
        try:
            real = Path(os.path.realpath(Path(typed).expanduser()))
        except (OSError, ValueError, RuntimeError):  # NUL bytes, an unknown ~user, a name too long
            raise ModelUnavailableError(FOLDER_REFUSED) from None
        if not any(real == root or real.is_relative_to(root) for root in self.model_dirs):
            raise ModelUnavailableError(FOLDER_REFUSED)
        return real

    def check_hub(self) -> None:
        """Raises ModelUnavailableError when Hub ids are switched off."""
        if not self.hub:
            raise ModelUnavailableError(HUB_OFF)


@lru_cache(maxsize=8)  # the environment rarely changes: parse (and warn) once per distinct setting
def _parse(dirs: str, hub: str, max_gb: str) -> ServerPolicy:
    return ServerPolicy(model_dirs=_model_dirs(dirs), hub=_hub_switch(hub), hub_max_bytes=_max_bytes(max_gb))


def _model_dirs(value: str) -> tuple[Path, ...]:
    roots = []
    for part in value.split(os.pathsep):
        part = part.strip()
        if not part:
            continue
        try:
            path = Path(part).expanduser()
            if not path.is_absolute():
                log.warning("%s: %r is not an absolute path; left out", ENV_MODEL_DIRS, part)
                continue
            real = Path(os.path.realpath(path))
        except (OSError, ValueError, RuntimeError):
            log.warning("%s: %r cannot be read as a path; left out", ENV_MODEL_DIRS, part)
            continue
        if not real.is_dir():
            log.warning("%s: %s is not a directory (yet)", ENV_MODEL_DIRS, real)
        roots.append(real)
    return tuple(dict.fromkeys(roots))


def _hub_switch(value: str) -> bool:
    word = value.strip().lower()
    if word in _ON:
        return True
    if word not in OFF_WORDS:
        log.warning("%s=%r is neither on nor off; the Hub is switched off", ENV_HUB, value)
    return False


def _max_bytes(value: str) -> int:
    default = int(DEFAULT_HUB_MAX_GB * GB)
    if not value.strip():
        return default
    try:
        gb = float(value)
    except ValueError:
        gb = -1.0
    if not (gb >= 0 and gb != float("inf")):  # NaN, negative, inf
        log.warning("%s=%r is not a size in GB; using %s", ENV_HUB_MAX_GB, value, DEFAULT_HUB_MAX_GB)
        return default
    return int(gb * GB)
