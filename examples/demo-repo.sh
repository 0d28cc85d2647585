#!/usr/bin/env bash
# Create a small throwaway git repository for trying Spar: two commits, a tiny
# Python module with tests, a rule document (AGENTS.md), a criteria document
# with AC-1 and AC-2, and a project configuration (.jaekit/spar.toml).
#
# usage: examples/demo-repo.sh DEST      (DEST must not exist)
set -euo pipefail

dest="${1:?usage: demo-repo.sh DEST}"
if [ -e "$dest" ]; then
    echo "demo-repo.sh: $dest already exists" >&2
    exit 1
fi
mkdir -p "$dest"
cd "$dest"

# a fixed identity and date: the same script makes the same commits
export GIT_AUTHOR_NAME="Spar Demo" GIT_AUTHOR_EMAIL="demo@example.invalid"
export GIT_COMMITTER_NAME="Spar Demo" GIT_COMMITTER_EMAIL="demo@example.invalid"
export GIT_AUTHOR_DATE="2024-01-01T00:00:00Z" GIT_COMMITTER_DATE="2024-01-01T00:00:00Z"
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1

git init -q --initial-branch=main .
git config user.name "Spar Demo"
git config user.email "demo@example.invalid"
git config commit.gpgsign false

mkdir -p tests docs .jaekit
cat > .gitignore <<'TXT'
# review records live here (Spar refuses a record folder git does not ignore)
reviews/
__pycache__/
TXT
cat > AGENTS.md <<'TXT'
# Rules for this repository

1. Every public function raises ValueError for input it cannot handle.
2. Every public function has a test in tests/.
TXT
cat > docs/criteria.md <<'TXT'
# Acceptance criteria: calculator

- AC-1: `add(a, b)` returns the sum of two numbers.
- AC-2: `divide(a, b)` returns a / b and raises ValueError when b is 0.
TXT
cat > .jaekit/spar.toml <<'TXT'
rules = ["AGENTS.md"]
check_paths = ["tests/**"]

[caps]
plan = 2
plan_delta = 2
code = 3
TXT
cat > calc.py <<'TXT'
"""A tiny calculator."""


def add(a, b):
    return a + b
TXT
cat > tests/test_calc.py <<'TXT'
from calc import add


def test_add():
    assert add(2, 3) == 5
TXT
git add -A
git commit -q -m "calculator: add"

cat > calc.py <<'TXT'
"""A tiny calculator."""


def add(a, b):
    return a + b


def divide(a, b):
    return a / b
TXT
cat > tests/test_calc.py <<'TXT'
from calc import add, divide


def test_add():
    assert add(2, 3) == 5


def test_divide():
    assert divide(6, 3) == 2
TXT
git add -A
git commit -q -m "calculator: divide"
