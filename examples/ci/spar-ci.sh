#!/usr/bin/env bash
# One Spar review round on a pull or merge request, for CI (GitHub Actions and
# GitLab CI call this; see the two recipes beside it).
#
# usage: spar-ci.sh BASE HEAD FORMAT REPORT
#   BASE, HEAD  the commits of the change (base..head)
#   FORMAT      sarif (GitHub code scanning) or codeclimate (GitLab Code Quality)
#   REPORT      the report file to write for the code host
#
# Steps: `spar init` (a user configuration for the reviewer CLIs on PATH, the
# series folder ignored), `spar run` on BASE..HEAD into reviews/ci-<time>,
# `spar gate` on that round, `spar export` of its findings to REPORT.
#
# Exit code: 0 when the gate passed; 1 exactly when the gate is blocked (the
# review found something that must be dealt with, or a listed round cannot be
# read: the message tells the two apart); anything else is a tool or
# set-up failure, said as such: 70 for Spar's internal or write failure, 65
# for a refused configuration or argument, 64 for a usage error. The report is
# written whenever the round was recorded, so it can be uploaded either way.
#
# SPAR overrides the spar program (default: spar on PATH). The series folder is
# SPAR_SERIES (default: reviews), the round's name SPAR_ROUND (default:
# ci-<UTC time>).
set -uo pipefail

if [ "$#" -ne 4 ]; then
    echo "usage: spar-ci.sh BASE HEAD sarif|codeclimate REPORT" >&2
    exit 64
fi
base="$1" head="$2" format="$3" report="$4"
SPAR="${SPAR:-spar}"
series="${SPAR_SERIES:-reviews}"
round="$series/${SPAR_ROUND:-ci-$(date -u +%Y%m%dT%H%M%SZ)}"

fail() {  # fail STEP CODE: say what kind of failure it is and exit with its code
    case "$2" in
        70) echo "spar-ci: TOOL FAILURE in $1 (exit 70): Spar failed or a write may be incomplete; this is not a review verdict" >&2 ;;
        65) echo "spar-ci: SET-UP REFUSED in $1 (exit 65): configuration or arguments refused; this is not a review verdict" >&2 ;;
        *)  echo "spar-ci: $1 failed (exit $2); this is not a review verdict" >&2 ;;
    esac
    exit "$2"
}

# review what the change adds: from where it left the target branch
merge_base="$(git merge-base "$base" "$head")" || fail "git merge-base $base $head" 65
"$SPAR" init --series "$series" || fail "spar init" "$?"
"$SPAR" doctor --series "$series" || echo "spar-ci: spar doctor reports problems (above); running the round anyway" >&2

"$SPAR" run --stage code --base "$merge_base" --head "$head" --expect-head "$head" --out "$round"
run_code=$?
# 1 = recorded but a reviewer did not complete: the gate below judges that round
if [ "$run_code" -ne 0 ] && [ "$run_code" -ne 1 ]; then
    fail "spar run" "$run_code"
fi

"$SPAR" export "$round" --format "$format" --out "$report"
export_code=$?
# 1 = written, but a reviewer did not complete (the report says so): the gate below judges it
if [ "$export_code" -ne 0 ] && [ "$export_code" -ne 1 ]; then
    fail "spar export" "$export_code"
fi

# every round of the series (a cached series may hold earlier ones: the gate wants them all),
# the list spar report and spar hook gate too: one verdict over one series
"$SPAR" gate --series "$series" --expect-head "$head" --out "$series/gate.json"
gate_code=$?
case "$gate_code" in
    0) echo "spar-ci: gate passed ($round)" >&2; exit 0 ;;
    1)
        # a listed round the gate cannot read (a missing, mistyped or damaged folder) blocks it
        # too, as the contract asks; say so, so that it never reads as the review's verdict
        if grep -q '"state": "unreadable"' "$series/gate.json" 2>/dev/null; then
            echo "spar-ci: GATE BLOCKED ON A ROUND IT CANNOT READ (a missing, mistyped or damaged round folder, not the review's findings); see the reasons above and $series/gate.json" >&2
        else
            echo "spar-ci: GATE BLOCKED: the review of $base..$head has findings or reviewers to deal with; see $round/summary.md and $series/gate.json" >&2
        fi
        exit 1 ;;
    *) fail "spar gate" "$gate_code" ;;
esac
