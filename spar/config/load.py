"""`load_config`: find, read and check the user and project configuration."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spar.config.checks import ProjectPart, check_project, check_user, default_reviewers
from spar.config.clean_review import check_clean_review
from spar.config.model import (
    ANGLES,
    DEFAULT_CAPS,
    DEFAULT_MAX_COPY_BYTES,
    DEFAULT_MAX_FINDINGS,
    DEFAULT_TIMEOUT,
    AppliedConfig,
)
from spar.config.sources import Loaded, find_user_source, missing_why, project_source, read_source
from spar.config.toml_positions import LocatedDoc, TomlSyntaxError, locate_toml
from spar.errors import ConfigError, quote


def load_config(repo_root: Path | None, env: Mapping[str, str] | None = None,
                home: Path | None = None) -> AppliedConfig:
    """The applied configuration before run arguments (G16–G24).

    `repo_root` None means no repository: no project configuration. `env`
    defaults to os.environ, `home` to $HOME."""
    if env is None:
        env = os.environ
    if home is None:
        home = Path(env["HOME"]) if env.get("HOME") else Path.home()

    files: list[dict[str, Any]] = []
    timeout, reviewers = DEFAULT_TIMEOUT, default_reviewers(DEFAULT_TIMEOUT)
    passthrough: list[str] | None = None
    max_findings, max_copy_bytes = DEFAULT_MAX_FINDINGS, DEFAULT_MAX_COPY_BYTES
    verify = None
    sandbox = "auto"
    user, skipped = find_user_source(env, home)
    if user is not None:
        loaded = read_source(user)
        files.append(loaded.record())
        if user.kind == "json":
            reviewers = check_clean_review(user.path, loaded.text)
        else:
            part = check_user(_locate(loaded))
            timeout, reviewers, passthrough = part.timeout_seconds, part.reviewers, part.env_passthrough
            max_findings, verify, max_copy_bytes = part.max_findings, part.verify, part.max_copy_bytes
            sandbox = part.sandbox

    project = ProjectPart(rules=[], check_paths=[], angles=list(ANGLES), caps=dict(DEFAULT_CAPS))
    if repo_root is not None:
        source = project_source(repo_root)
        if missing_why(source.path) is None:
            loaded = read_source(source)
            files.append(loaded.record())
            doc = _locate(loaded)
            project = check_project(doc)
            for n, rule in enumerate(project.rules, 1):
                problem = rule_file_problem(Path(repo_root), rule)
                if problem:
                    raise ConfigError(doc.file, doc.line(("rules",)), f"rules item {n} {quote(rule)} {problem}")

    return AppliedConfig(
        reviewers=reviewers,
        timeout_seconds=timeout,
        max_findings=max_findings,
        max_copy_bytes=max_copy_bytes,
        rules=project.rules,
        check_paths=project.check_paths,
        angles=project.angles,
        caps=project.caps,
        packet=project.packet,
        env_passthrough=passthrough,
        verify=verify,
        sandbox=sandbox,
        files=files,
        skipped=skipped,
    )


def _locate(loaded: Loaded) -> LocatedDoc:
    try:
        return locate_toml(loaded.source.path, loaded.text)
    except TomlSyntaxError as err:
        raise ConfigError(loaded.source.path, err.line, err.message) from None


def rule_file_problem(repo_root: Path, rule: str) -> str | None:
    """G23 on disk: `rule` (relative, already normalized) must be a readable
    regular file whose resolved target stays inside the repository."""
    full = os.path.join(repo_root, rule)
    root = os.path.realpath(repo_root)
    real = os.path.realpath(full)
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        return "leaves the repository through a symbolic link"
    try:
        st = os.stat(full)
    except FileNotFoundError:
        return "does not exist"
    except OSError as err:
        return f"cannot be read: {err.strerror or err}"
    if stat.S_ISDIR(st.st_mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    try:
        with open(full, "rb") as fh:
            fh.read(1)
    except OSError as err:
        return f"cannot be read: {err.strerror or err}"
    return None
