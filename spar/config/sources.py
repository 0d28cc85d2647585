"""Where configuration comes from (G16): which files exist and reading them.

User part, first found wins: `$SPAR_CONFIG`, `$XDG_CONFIG_HOME/jaekit/spar.toml`,
`~/.config/jaekit/spar.toml`, then clean-review's `config.json` in clean-review's
own configuration folder (`$XDG_CONFIG_HOME/clean-review/`, else
`~/.config/clean-review/`, like Go's os.UserConfigDir). Project part:
`<repo>/.jaekit/spar.toml` in the working tree.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from spar.errors import ConfigError

PROJECT_FILE = (".jaekit", "spar.toml")


class Source(NamedTuple):
    """A configuration file found (G16)."""

    path: str  # absolute, as found (a symbolic link is not resolved)
    kind: str  # "toml" | "json"
    role: str  # "user" | "project"


class Loaded(NamedTuple):
    """A configuration file as read: its text and digest."""

    source: Source
    text: str
    sha256: str

    def record(self) -> dict[str, Any]:
        return {"path": self.source.path, "sha256": self.sha256, "role": self.source.role}


def user_candidates(env: Mapping[str, str], home: Path) -> list[Source]:
    """The user sources in order; unset or empty variables contribute nothing."""
    out: list[Source] = []
    spar_config = env.get("SPAR_CONFIG", "")
    if spar_config:
        out.append(Source(os.path.abspath(spar_config), "toml", "user"))
    xdg = env.get("XDG_CONFIG_HOME", "")
    if xdg:
        out.append(Source(os.path.abspath(os.path.join(xdg, "jaekit", "spar.toml")), "toml", "user"))
    home_config = os.path.join(os.path.abspath(home), ".config")
    out.append(Source(os.path.join(home_config, "jaekit", "spar.toml"), "toml", "user"))
    clean_dir = os.path.abspath(xdg) if xdg else home_config
    out.append(Source(os.path.join(clean_dir, "clean-review", "config.json"), "json", "user"))
    return out


def project_source(repo_root: Path) -> Source:
    return Source(os.path.join(os.path.abspath(repo_root), *PROJECT_FILE), "toml", "project")


def missing_why(path: str) -> str | None:
    """Why `path` counts as absent (G16), or None when it is a regular file.

    Raises ConfigError when it exists but is not a regular file, or stat fails
    for another reason than "no such file" or a symbolic link loop."""
    try:
        st = os.stat(path)  # follows symbolic links: the target is what counts
    except FileNotFoundError:
        return "broken symbolic link" if os.path.islink(path) else "does not exist"
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "symbolic link loop"
        raise ConfigError(path, None, f"cannot read configuration: {err.strerror or err}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(path, None, f"configuration is not a regular file (it is {_kind(st.st_mode)})")
    return None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def find_user_source(env: Mapping[str, str], home: Path) -> tuple[Source | None, list[dict[str, Any]]]:
    """First user source that exists, and the missing ones looked at before it."""
    skipped: list[dict[str, Any]] = []
    for source in user_candidates(env, home):
        why = missing_why(source.path)
        if why is None:
            return source, skipped
        skipped.append({"path": source.path, "why": why})
    return None, skipped


def named_skipped(env: Mapping[str, str], skipped: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The skipped entry of the file `$SPAR_CONFIG` names, or None: G16 passes over a
    missing one to the next source, but a file the user named by hand was meant to be read."""
    named = env.get("SPAR_CONFIG", "")
    if not named:
        return None
    path = os.path.abspath(named)
    return next((entry for entry in skipped if entry["path"] == path), None)


CONFIG_LIMIT = 1024 * 1024  # bytes of a configuration file read (a sparse or endless one is refused)


def read_source(source: Source) -> Loaded:
    """Read and decode one file; the sha256 is of its bytes.

    The file opened is checked again: a path swapped for a FIFO after
    `missing_why` looked would otherwise block the open (O_NONBLOCK) or the read."""
    try:
        fd = os.open(source.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise ConfigError(source.path, None, f"cannot read configuration: {err.strerror or err}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ConfigError(source.path, None, f"configuration is not a regular file (it is {_kind(mode)})")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(CONFIG_LIMIT + 1)
        if len(raw) > CONFIG_LIMIT:
            raise ConfigError(source.path, None, f"configuration is over {CONFIG_LIMIT} bytes; a configuration "
                              "file is a few lines")
    except OSError as err:
        raise ConfigError(source.path, None, f"cannot read configuration: {err.strerror or err}") from None
    finally:
        os.close(fd)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[:err.start].count(b"\n") + 1
        raise ConfigError(source.path, line, "configuration is not valid UTF-8") from None
    return Loaded(source, text, hashlib.sha256(raw).hexdigest())
