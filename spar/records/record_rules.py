"""What Spar itself writes, as rules over records already parsed (G32, design §3, §7, §8).

A record Spar could not have written is as unreadable as a torn one: every
reader refuses it (65) and `spar gate` blocks on it, naming the file and line.
Each check returns the problem as text (None when the record is possible);
`spar.records.readers` adds the file name. Only the keys Spar documents are
judged, and keys added later are optional (older rounds lack them), so a key
this module does not know is never a problem: engineers add documented
optional fields (finding `repeat_of`/`corroborated_by`/`group`, round `memory_sha256`)
without touching these rules. An attempt's `argv` and `usage`, when present,
are judged: cap-report and the summary add them up.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from spar.config.model import STAGES
from spar.records.model import NOT_RUN_STATUSES, RECORDED, UNFINISHED, VERDICTS, NotRun, ReviewerStatus
from spar.records.usage import TOKEN_KEYS, USAGE_KEYS, amount, count
from spar.whitespace import is_blank, trim

# ledger key -> command line flag, in the order messages list them
OPTION_FLAGS = {
    "commit": "--commit",
    "failed_before": "--failed-before",
    "passed_after": "--passed-after",
    "of": "--of",
    "evidence": "--evidence",
    "user_quote": "--user-quote",
}

# disposition -> (classes it applies to, or None for any; options it needs)
RULES: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...]]] = {
    "fixed": (("defect",), ("commit", "failed_before", "passed_after")),
    "duplicate": (None, ("of",)),
    "rejected": (None, ("evidence",)),
    "deferred": (("defect", "requirement-question"), ("user_quote",)),
    "answered": (("requirement-question",), ("user_quote",)),
}

CLASSES = ("defect", "requirement-question", "hardening", "note")
CAUSES = ("churn", "recurring", "unrelated", "hardening", "other")
# a could_not_review answer is recorded as `failed`, so a completed reviewer has one of these
COMPLETED_VERDICTS = ("no_blocking_findings", "blocking_findings")
_FINDING_ID = re.compile(r"(.+)-F([1-9][0-9]*)")
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def _str(value: Any) -> bool:
    return isinstance(value, str)


def _bool_if_present(record: Mapping[str, Any], key: str) -> bool:
    return key not in record or isinstance(record[key], bool)


def round_problem(round_json: Mapping[str, Any]) -> str | None:
    """round.json beyond its schema and the keys every reader relies on."""
    reviewers = round_json.get("reviewers")
    if not isinstance(reviewers, list) or not reviewers:
        return "reviewers is empty (a round has at least one required reviewer)"
    names: set[str] = set()
    for number, entry in enumerate(reviewers, start=1):
        problem = _reviewer_problem(number, entry, names)
        if problem:
            return problem
    for key in ("dry_run", "counted"):
        if not _bool_if_present(round_json, key):
            return f"{key} is not true or false"
    for key in ("started_at", "recorded_at", "finished_at"):
        if key in round_json and not _str(round_json[key]):
            return f"{key} is not a time"
    return _coverage_problem(round_json) or _end_problem(round_json, reviewers)


def _coverage_problem(round_json: Mapping[str, Any]) -> str | None:
    """`changed_files` and `unseen` (coverage): both or neither, a count and paths among it."""
    if ("changed_files" in round_json) != ("unseen" in round_json):
        return "changed_files and unseen come together"
    if "unseen" not in round_json:
        return None
    total, unseen = round_json["changed_files"], round_json["unseen"]
    if count(total) is None:
        return "changed_files is not an integer of 0 or more"
    if not isinstance(unseen, list) or not all(_str(p) for p in unseen) or len(unseen) > total:
        return "unseen is not a list of at most changed_files paths"
    if "inline_files" in round_json:
        return _file_lists_problem(round_json, total, unseen)
    return None


def _file_lists_problem(round_json: Mapping[str, Any], total: int, unseen: list[str]) -> str | None:
    """`inline_files` and each attempt's `opened_files` against the counts: the report's file table
    is drawn from them, so a list that disagrees with its count is refused rather than shown."""
    inline = round_json["inline_files"]
    if not _paths(inline):  # in unseen too when no reviewer completed
        return "inline_files is not a list of distinct paths"
    union = set(inline) | set(unseen)
    for entry in round_json["reviewers"]:
        for number, attempt in enumerate(entry.get("attempts", []), start=1):
            coverage = attempt.get("coverage")
            if coverage is None:
                continue
            where = f"reviewer {entry['name']}, attempt {number}"
            if "opened_files" not in coverage or coverage["inline"] != len(inline) \
                    or coverage["changed_files"] != total:
                return f"{where}: coverage does not match the round's inline_files and changed_files"
            if set(coverage["opened_files"]) & set(inline):
                return f"{where}: coverage opened_files holds an inline file"
            union.update(coverage["opened_files"])
    if len(union) != total:  # every changed file is inline, opened by someone or unseen
        return "inline_files, opened_files and unseen do not name changed_files paths"
    return None


def _paths(value: Any) -> bool:
    """A list of distinct strings."""
    return isinstance(value, list) and all(_str(p) for p in value) and len(set(value)) == len(value)


def _reviewer_problem(number: int, entry: Any, names: set[str]) -> str | None:
    """One entry of round.json's reviewers; `names` holds the names before it (this one is added)."""
    if not isinstance(entry, dict) or not _str(entry.get("name")) or not entry["name"]:
        return f"reviewer {number} has no name"
    name = entry["name"]
    if name in names:
        return f"reviewer {name} is listed twice"
    names.add(name)
    status = entry.get("status")
    if status not in RECORDED:
        return f"reviewer {name} has status {status!r}, not one Spar writes"
    if not _str(entry.get("preset")) or not entry["preset"]:
        return f"reviewer {name} has no preset"
    if status == ReviewerStatus.COMPLETED and entry.get("verdict") not in COMPLETED_VERDICTS:
        return f"reviewer {name} completed without a verdict Spar records ({entry.get('verdict')!r})"
    problem = not_run_problem(entry)
    if problem:
        return f"reviewer {name}: {problem}"
    if not isinstance(entry.get("attempts", []), list):
        return f"reviewer {name}: attempts is not a list"
    for attempt_number, attempt in enumerate(entry.get("attempts", []), start=1):
        problem = attempt_problem(attempt)
        if problem:
            return f"reviewer {name}, attempt {attempt_number}: {problem}"
    return None


def _end_problem(round_json: Mapping[str, Any], reviewers: list[Any]) -> str | None:
    """finished_at and recorded_at against the reviewers' statuses and dry_run."""
    if "finished_at" in round_json:
        if round_json.get("dry_run") is True:
            return "a dry run with finished_at (a dry run is never recorded)"
        waiting = [e["name"] for e in reviewers if e["status"] in UNFINISHED]
        if waiting:
            return f"finished_at is set while reviewer {waiting[0]} is still {_status_of(reviewers, waiting[0])}"
    elif "recorded_at" in round_json and not any(e["status"] in UNFINISHED for e in reviewers):
        # recording sets finished_at unless a reviewer is still unfinished (finish_round_json)
        return "recorded_at is set without finished_at, but no reviewer awaits a record"
    return None


def not_run_problem(record: Mapping[str, Any]) -> str | None:
    """`not_run` of a reviewer entry or an attempt, when present (older rounds lack it): null,
    or a NotRun value beside a status that says the reviewer did not get to review; an
    `unavailable` one always says why (the stop hook tells the person from it)."""
    if "not_run" not in record:
        return None
    value, status = record["not_run"], record.get("status")
    if value is None:
        return "status unavailable with not_run null" if status == ReviewerStatus.UNAVAILABLE else None
    if not _str(value) or value not in set(NotRun):
        return f"not_run {value!r} is not one Spar writes"
    if status not in NOT_RUN_STATUSES:
        return f"not_run {value!r} with status {status!r}, which says it got to review or has yet to"
    return None


def attempt_problem(attempt: Any) -> str | None:
    """An attempt's `argv` and `usage` (what ran, and what it cost) as spar.round writes them, when present
    (older rounds have neither), and its `not_run`. A usage value Spar could not have written
    would be left out of every total, so it is named instead."""
    if not isinstance(attempt, dict):
        return "not an object"
    problem = not_run_problem(attempt)
    if problem:
        return problem
    if "argv" in attempt:
        argv = attempt["argv"]
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            return "argv is not a list of strings"
    if "coverage" in attempt:
        problem = _attempt_coverage_problem(attempt["coverage"])
        if problem:
            return problem
    if "usage" not in attempt:
        return None
    usage = attempt["usage"]
    if not isinstance(usage, dict) or sorted(usage) != sorted(USAGE_KEYS):
        return f"usage does not have exactly the keys {', '.join(USAGE_KEYS)}"
    if amount(usage["duration_seconds"]) is None:
        return "usage duration_seconds is not a number of 0 or more"
    for key in TOKEN_KEYS:
        if usage[key] is not None and count(usage[key]) is None:
            return f"usage {key} is not null or an integer of 0 or more"
    if usage["cost_usd"] is not None and amount(usage["cost_usd"]) is None:
        return "usage cost_usd is not null or a number of 0 or more"
    return None


COVERAGE_KEYS = ("inline", "opened", "changed_files", "observed")
OPENED_FILES = "opened_files"  # written since the report's file table; absent in older rounds


def _attempt_coverage_problem(coverage: Any) -> str | None:
    if not isinstance(coverage, dict) or sorted(set(coverage) - {OPENED_FILES}) != sorted(COVERAGE_KEYS):
        return f"coverage does not have the keys {', '.join(COVERAGE_KEYS)} (and {OPENED_FILES}), and no other"
    numbers = [count(coverage[k]) for k in ("inline", "opened", "changed_files")]
    if any(n is None for n in numbers) or not isinstance(coverage["observed"], bool):
        return "coverage counts are not integers of 0 or more, or observed is not true or false"
    inline, opened, total = (n or 0 for n in numbers)
    if inline + opened > total or (opened and not coverage["observed"]):
        return "coverage counts more files than the change has, or opened files it could not observe"
    if OPENED_FILES in coverage and (not _paths(coverage[OPENED_FILES]) or len(coverage[OPENED_FILES]) != opened):
        return f"coverage {OPENED_FILES} is not a list of as many distinct paths as opened counts"
    return None


def _status_of(reviewers: list[Any], name: str) -> str:
    return str(next(e["status"] for e in reviewers if e["name"] == name))


def findings_problem(findings: list[Any], round_json: Mapping[str, Any] | None) -> str | None:
    """findings.json: ids `<reviewer>-F<n>`, each once, of a completed reviewer of the round."""
    completed = None
    if round_json is not None:
        completed = {e["name"] for e in round_json.get("reviewers", []) if e.get("status") == ReviewerStatus.COMPLETED}
    seen: set[str] = set()
    for number, finding in enumerate(findings, start=1):
        fid = finding["id"]
        match = _FINDING_ID.fullmatch(fid)
        if match is None or finding.get("reviewer") != match.group(1):
            return f"finding {number} ({fid}): the id is not <reviewer>-F<n> of its reviewer"
        if fid in seen:
            return f"finding {number} ({fid}): the id is used twice"
        seen.add(fid)
        if finding.get("class") not in CLASSES:
            return f"finding {number} ({fid}): class {finding.get('class')!r} is not one of {', '.join(CLASSES)}"
        for key in ("in_check_paths", "location_unreadable"):
            if not _bool_if_present(finding, key):
                return f"finding {number} ({fid}): {key} is not true or false"
        if completed is not None and finding["reviewer"] not in completed:
            return f"finding {number} ({fid}): its reviewer did not complete in round.json"
    return None


VERIFICATIONS_SCHEMA = "spar-verifications/v1"
UNVERIFIED_WHY = ("max_findings", "max_cost_usd", "no_other_vendor")
_CALL_ID = re.compile(r"V([1-9][0-9]*)")


def verifications_problem(record: Any, finding_ids: set[str] | None) -> str | None:
    """verifications.json as spar writes it: its schema, each call once with a verdict
    Spar records and the attempts of a reviewer, every finding named at most once (a
    call or an unverified entry) and, with `finding_ids`, a finding of the round."""
    if not isinstance(record, dict):
        return "not a JSON object"
    if record.get("schema") != VERIFICATIONS_SCHEMA:
        return f"not a {VERIFICATIONS_SCHEMA} record"
    calls, unverified = record.get("calls"), record.get("unverified")
    if not isinstance(calls, list) or not isinstance(unverified, list):
        return "calls or unverified is missing or not a list"
    named: set[str] = set()
    for number, call in enumerate(calls, start=1):
        problem = _call_problem(call, number) or _named_once(call.get("finding"), named, finding_ids)
        if problem:
            return f"call {number}: {problem}"
    for number, entry in enumerate(unverified, start=1):
        if not isinstance(entry, dict) or entry.get("why") not in UNVERIFIED_WHY:
            return f"unverified {number}: why is not one of {', '.join(UNVERIFIED_WHY)}"
        problem = _named_once(entry.get("finding"), named, finding_ids)
        if problem:
            return f"unverified {number}: {problem}"
    return None


def _call_problem(call: Any, number: int) -> str | None:
    if not isinstance(call, dict) or call.get("call") != f"V{number}":
        return f"not an object with call V{number}"
    if call.get("verdict") not in VERDICTS:
        return f"verdict {call.get('verdict')!r} is not one of {', '.join(VERDICTS)}"
    if call.get("status") not in RECORDED or call["status"] in UNFINISHED:
        return f"status {call.get('status')!r} is not one a finished call has"
    for key in ("verifier", "preset", "evidence", "reason"):
        if not _str(call.get(key)):
            return f"{key} is missing or not a string"
    if call["verdict"] != "unsure" and call["status"] != ReviewerStatus.COMPLETED:
        return "a verdict other than unsure from a call that did not complete"
    attempts = call.get("attempts")
    if not isinstance(attempts, list):
        return "attempts is not a list"
    for attempt_number, attempt in enumerate(attempts, start=1):
        problem = attempt_problem(attempt)
        if problem:
            return f"attempt {attempt_number}: {problem}"
    return None


def _named_once(finding: Any, named: set[str], finding_ids: set[str] | None) -> str | None:
    if not _str(finding):
        return "finding is missing or not a string"
    if finding in named:
        return f"finding {finding} is named twice"
    named.add(finding)
    if finding_ids is not None and finding not in finding_ids:
        return f"finding {finding} is not a finding of the round"
    return None


def auto_deferrable(finding: Mapping[str, Any]) -> bool:
    """Design §3: a hardening finding with a readable location is deferred automatically."""
    return finding.get("class") == "hardening" and finding.get("location_unreadable") is not True


def ledger_line_problem(line: Mapping[str, Any], findings: Mapping[str, Mapping[str, Any]] | None) -> str | None:
    """One ledger.jsonl line against design §7 (by hand) or the auto-deferral rule.
    `findings` by id; None judges the line alone (no class rules)."""
    fid = line.get("finding")
    disposition = line.get("disposition")
    if not isinstance(fid, str) or not fid:
        return "finding is missing or not a string"
    if not isinstance(disposition, str) or disposition not in RULES:  # a list would not even hash
        return f"disposition is not one of {', '.join(RULES)}"
    auto = line.get("auto")
    if not isinstance(auto, bool):
        return "auto is not true or false"
    if not isinstance(line.get("at"), str):
        return "at is missing or not a time"
    finding = None
    if findings is not None:
        finding = findings.get(fid)
        if finding is None:
            return f"finding {fid} is not in findings.json"
    if auto:
        return _auto_line_problem(line, fid, disposition, finding)
    return _triage_line_problem(line, disposition, finding)


_OPTION_KEYS = frozenset(OPTION_FLAGS)


def _options(line: Mapping[str, Any]) -> list[str]:
    """The option keys a line carries, in the order messages list them."""
    return [key for key in OPTION_FLAGS if key in line]


def _auto_line_problem(line: Mapping[str, Any], fid: str, disposition: str,
                       finding: Mapping[str, Any] | None) -> str | None:
    """A line written by automatic deferral: a bare deferral of a finding that allows it."""
    if disposition != "deferred" or not _OPTION_KEYS.isdisjoint(line):
        given = ", ".join(_options(line)) or "no options"
        return f"an automatic line must be a bare deferral, not {disposition} with {given}"
    if finding is not None and not auto_deferrable(finding):
        unreadable = ", location unreadable" if finding.get("location_unreadable") else ""
        return (f"{fid} is deferred automatically, but only hardening findings with a readable location are "
                f"(it is {finding.get('class')}{unreadable})")
    return None


def _triage_line_problem(line: Mapping[str, Any], disposition: str,
                         finding: Mapping[str, Any] | None) -> str | None:
    """A line written by `spar triage`: the disposition's classes, and exactly the options it needs."""
    classes, needs = RULES[disposition]
    if finding is not None and classes is not None and finding.get("class") not in classes:
        return f"{disposition} is only for {' or '.join(classes)} findings; {line['finding']} is {finding.get('class')}"
    for key in needs:
        value = line.get(key)
        if not isinstance(value, str) or is_blank(value):
            return f"{disposition} without {key} (triage needs {OPTION_FLAGS[key]})"
    # every option it needs is there: any other is one too many
    if len(_OPTION_KEYS.intersection(line)) > len(needs):
        extra = [key for key in _options(line) if key not in needs]
        return f"{disposition} with {', '.join(extra)}, which triage never records for it"
    if "commit" in needs and not _COMMIT.fullmatch(line["commit"]):
        return "commit is not a full commit ID"
    if "of" in needs:
        target, _, target_id = line["of"].partition("/")
        if not target or not target_id or "/" in target_id:
            return "of is not ROUND/ID"
    return None


Position = Callable[[str], Any]


def link_problem(here: str, target: str, position: Position) -> str | None:
    """Triage's rule for a duplicate link, which every reader applies too: a finding of
    round `here` is a duplicate of a finding of the same round or of an earlier round of
    the series, never of a later one (a decision cannot rest on a round recorded after
    it). None when the link may stand, or when either round's place is not known (a
    round that is not there is another rule's matter)."""
    if target == here:
        return None
    target_at, here_at = position(target), position(here)
    if target_at is None or here_at is None or target_at < here_at:
        return None
    return f"round {target} is not an earlier round of the series than {here}"



def ledger_link_problem(lines: Sequence[Mapping[str, Any]], here: str, position: Position) -> tuple[int, str] | None:
    """(line number, problem) of the first duplicate line of round `here` whose link
    `link_problem` refuses (a link into a later round), or None."""
    for number, line in enumerate(lines, start=1):
        of = line.get("disposition") == "duplicate" and line.get("of")
        if not isinstance(of, str) or "/" not in of:
            continue  # not a duplicate, or a finding of the same round
        problem = link_problem(here, of.partition("/")[0], position)
        if problem:
            return number, f"duplicate of {of}, which triage refuses: {problem}"
    return None


# the keys of a ledger line as `spar triage` (by disposition) and automatic deferral write it
def ledger_problem(lines: Sequence[Mapping[str, Any]],
                   findings: Mapping[str, Mapping[str, Any]] | None) -> tuple[int, str] | None:
    """(line number, problem) of the first line `ledger_line_problem` refuses, or None."""
    for number, line in enumerate(lines, start=1):
        problem = ledger_line_problem(line, findings)
        if problem:
            return number, problem
    return None


def extension_problem(line: Mapping[str, Any]) -> str | None:
    """One extensions.jsonl line against G31 (what `spar extend` appends); lines from
    before causes were recorded have neither cause nor reason."""
    stage = line.get("stage")
    if stage not in STAGES:
        return f"stage is not one of {', '.join(STAGES)}"
    by = line.get("by")
    if not isinstance(by, int) or isinstance(by, bool) or by < 1:
        return "by is not an integer of 1 or more"
    cause, reason = line.get("cause"), line.get("reason")
    if "at" in line and not _str(line["at"]):
        return "at is not a time"
    if stage != "code":
        if "cause" in line or "reason" in line:
            return f"a {stage} extension with a cause or reason (spar extend takes neither for {stage})"
        return None
    if "cause" not in line:
        if "reason" in line:
            return "a reason without a cause"
        return None  # written before causes were recorded: no recorded cause
    if cause not in CAUSES:
        return f"cause {cause!r} is not one of {', '.join(CAUSES)}"
    if "reason" in line and (not isinstance(reason, str) or is_blank(reason) or trim(reason) != reason):
        return "reason is not a trimmed, non-blank text"
    if "reason" not in line and (by >= 2 or cause == "other"):
        return f"a code extension with {'--cause other' if cause == 'other' else f'--by {by}'} needs a reason"
    return None
