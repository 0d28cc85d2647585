#!/usr/bin/env bash
# Spar quickstart: one review round end to end, with no AI CLI installed.
#
# Creates a throwaway demo repository (examples/demo-repo.sh), a user
# configuration whose one reviewer is examples/example_reviewer.py (the
# `command` preset: a deterministic stand-in for an AI reviewer), then runs
#   spar config -> spar run --stage code -> spar gate (blocked) -> spar triage
#   -> spar gate (passed) -> spar cap-report
#
# usage: examples/quickstart.sh [WORKDIR]
#   WORKDIR (must not exist) keeps everything; default: a new temporary folder.
#   SPAR=/path/to/spar and PYTHON=/path/to/python3 override the programs used.
#
# The round's workspace copies are read-only; remove WORKDIR with
#   chmod -R u+w WORKDIR && rm -rf WORKDIR
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SPAR="${SPAR:-spar}"
PYTHON="${PYTHON:-python3}"

work="${1:-}"
if [ -z "$work" ]; then
    work="$(mktemp -d "${TMPDIR:-/tmp}/spar-quickstart.XXXXXX")"
    rmdir "$work"
fi
if [ -e "$work" ]; then
    echo "quickstart: $work already exists" >&2
    exit 2
fi
mkdir -p "$work"
work="$(cd "$work" && pwd)"

step() { printf '\n==> %s\n' "$*" >&2; }

step "demo repository: $work/demo"
"$here/demo-repo.sh" "$work/demo"

step "user configuration: $work/spar.toml (SPAR_CONFIG)"
# TOML literal strings ('...'): paths are taken as they are
cat > "$work/spar.toml" <<TOML
timeout_seconds = 120

[[reviewers]]
name = "example"
preset = "command"
argv = ['$PYTHON', '$here/example_reviewer.py', '{prompt}']
TOML
cat "$work/spar.toml" >&2
export SPAR_CONFIG="$work/spar.toml"

cd "$work/demo"

step "spar config"
"$SPAR" config

step "spar run --stage code --out reviews/code-1 --criteria docs/criteria.md"
"$SPAR" run --stage code --out reviews/code-1 --criteria docs/criteria.md

step "reviews/code-1/summary.md"
cat reviews/code-1/summary.md

step "spar gate reviews/code-1 --out reviews/gate.json"
gate_status=0
"$SPAR" gate reviews/code-1 --out reviews/gate.json || gate_status=$?
case "$gate_status" in
    0) echo "gate: passed" >&2 ;;
    1) echo "gate: blocked (expected here: the defect has no disposition yet)" >&2 ;;
    *) echo "gate: failed with exit code $gate_status" >&2; exit "$gate_status" ;;
esac
cat reviews/gate.json

step "spar triage reviews/code-1 example-F1 --to deferred --user-quote ..."
# the user accepts shipping without the fix; their words are recorded in the ledger
"$SPAR" triage reviews/code-1 example-F1 --to deferred --user-quote "ok to ship the demo without it"

step "spar gate reviews/code-1 --out reviews/gate.json (again)"
"$SPAR" gate reviews/code-1 --out reviews/gate.json
echo "gate: passed" >&2

step "spar cap-report reviews"
"$SPAR" cap-report reviews

step "done"
cat >&2 <<TXT
Everything is in $work/demo/reviews: round.json, findings.json, ledger.jsonl,
summary.md, packet.md and the reviewer's folder under code-1/, the gate file
gate.json. Remove it all with: chmod -R u+w $work && rm -rf $work
TXT
