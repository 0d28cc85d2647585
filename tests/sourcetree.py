"""Python files parsed once per test process.

The layout checks (`test_architecture`, `test_names`, `test_function_size`,
`test_guard_protocol`, `test_contract_doc`) each walk the syntax tree of every module of
spar/, and parsing spar/ takes about a second of CPU; a worker running several of them
parses each file once. Callers only read the trees they get (they are shared).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path


def parsed(path: Path) -> ast.Module:
    """The syntax tree of the Python file at `path`, read again if the file changed."""
    stat = path.stat()
    return _parse(str(path), stat.st_mtime_ns, stat.st_size)


@functools.cache
def _parse(path: str, _mtime_ns: int, _size: int) -> ast.Module:
    return ast.parse(Path(path).read_text(encoding="utf-8"))
