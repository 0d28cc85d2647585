"""Classification of one finding: design §3 (Review round §6) and contract §4.

Readable location, first match from the top:
  1 defect       in check paths and check_impact false_pass / meaning_inverted
  2 defect       in check paths, contract_violation and the link confirmed
  3 hardening    in check paths (everything else there)
  4 requirement-question   proposed requirement-question
  5 defect       introduced_by_change and regression both yes
  6 note         proposed defect without a confirmed link
  7 proposed_class
Unreadable location (§4): rules 3 and 6 are not used and 1, 2 drop the path
condition, so a misread location can only add defects, never hide one.
Rule numbers in class_reason are always those of the seven rules above.
"""

from __future__ import annotations

from typing import Any

_CHECK_IMPACT_DEFECTS = ("false_pass", "meaning_inverted")

# each rule in words, for people reading a class_reason ("rule 7: proposed defect")
RULE_WORDS = {
    1: "a check in the check paths that would pass falsely or mean the opposite is a defect",
    2: "a contract violation in the check paths, linked to a criterion or rule Spar confirmed, is a defect",
    3: "anything else in the check paths is hardening",
    4: "a requirement-question the reviewer proposed stays one",
    5: "a problem the change introduced that is also a regression is a defect",
    6: "a proposed defect with no confirmed link to a criterion or rule is kept as a note",
    7: "no earlier rule applied: the class the reviewer proposed stands",
}


def rule_words(class_reason: str) -> str:
    """What the rule a class_reason names says, in words; "" when it names none."""
    at = class_reason.find("rule ")
    number = class_reason[at + 5:at + 6] if at >= 0 else ""
    return RULE_WORDS.get(int(number), "") if number.isdigit() else ""


def classify(item: dict[str, Any], *, in_check_paths: bool, link_confirmed: bool,
             unreadable: bool, why: str = "") -> tuple[str, str]:
    """(class, class_reason) of a validated finding item."""
    cls, reason = _rules(item, in_check_paths=bool(in_check_paths) and not unreadable,
                         link_confirmed=link_confirmed, unreadable=unreadable)
    if not unreadable:
        return cls, reason
    return cls, f"unreadable location ({why}): {reason}" if why else f"unreadable location: {reason}"


def _rules(item: dict[str, Any], *, in_check_paths: bool, link_confirmed: bool, unreadable: bool) -> tuple[str, str]:
    """The seven rules, first match from the top; an unreadable location drops the path
    condition of rules 1 and 2 and does not use rules 3 and 6."""
    impact = item["check_impact"]
    proposed = item["proposed_class"]
    path_rule = in_check_paths or unreadable  # rules 1 and 2 apply
    where = "" if unreadable else " in check paths"
    if path_rule and impact in _CHECK_IMPACT_DEFECTS:
        return "defect", f"rule 1: {impact}{where}"
    if path_rule and impact == "contract_violation" and link_confirmed:
        return "defect", f"rule 2: contract_violation with a confirmed link{where}"
    if in_check_paths:
        return "hardening", "rule 3: in check paths"
    if proposed == "requirement-question":
        return "requirement-question", "rule 4: proposed requirement-question"
    if item["introduced_by_change"] == "yes" and item["regression"] == "yes":
        return "defect", "rule 5: introduced by the change and a regression"
    if proposed == "defect" and not link_confirmed:
        if unreadable:
            return "defect", "rule 7: proposed defect (rule 6 not used)"
        return "note", "rule 6: proposed defect without a confirmed link"
    return proposed, f"rule 7: proposed {proposed}"
