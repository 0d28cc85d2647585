"""How the G11 programs with forbidden options read their arguments (pure).

`check_command` refuses a forbidden option wherever the program would see
one, so it has to know, word by word, what each program makes of its
arguments: which words are options, which are option values, where `--`
really ends the options, and which words are operands.  One table per program
says which options exist and which take a value, and one of three parsers
reads the words the way the program does:

- `getopt`: GNU getopt_long, permuting (options may follow operands).  A short
  letter that takes a value takes the rest of its cluster, else the next word
  whatever it is (`--` included); an optional value (`::`) is only attached.
  A long option takes `--name=value` or, when its value is required, the next
  word.  A unique prefix of a long name is that option; a prefix shared by
  several names is an error.  `--` in an option position ends the options.
  (sort, diff, file, uniq.)
- `clap`: rg.  Like getopt for clusters and values (a short value may follow
  `=`: `-e=x`), but long names only whole.  rg 13 (clap) refuses some values
  that start with `-`, rg 14 (lexopt) takes any next word: the model takes it.
- `tree`: tree's own loop.  Options anywhere; each value-taking letter of a
  cluster takes its *own* next word (`-PI x y`: `-P x -I y`, and `-PI x --`
  makes `--` the value of `-I`), nothing attached; long names whole, with
  `--name=value` or the next word.

The tables were read from the programs installed here (`--help`, and for each
letter and long name whether the program asks for a value: GNU coreutils 9.1
sort and uniq, diffutils 3.8 diff, file 5.44, tree 2.1.0, ripgrep 13.0.0) and
from ripgrep's option definitions for the names rg 14 added.  A value-taking
option of any of these versions counts as value-taking (so a `--` after it is
never trusted to end the options).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class OptionTable:
    """The options of one program and how it parses them."""

    parser: str  # "getopt", "clap" or "tree"
    flags: str = ""  # short letters without a value
    values: str = ""  # short letters with a required value
    optional: str = ""  # short letters whose value is only attached (GNU `::`)
    long_flags: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    long_optional: frozenset[str] = frozenset()  # value only after `=`

    def long_kind(self, name: str) -> str | None:
        """"flag", "value" or "optional" for a long option as written; None when
        the program does not know it or the abbreviation is ambiguous."""
        names = self.long_flags | self.long_values | self.long_optional
        if name not in names:
            if self.parser != "getopt" or not name:
                return None  # rg and tree take long names only whole
            hits = [n for n in names if n.startswith(name)]
            if len(hits) != 1:
                return None
            name = hits[0]
        if name in self.long_values:
            return "value"
        return "optional" if name in self.long_optional else "flag"


@dataclass
class Parsed:
    """What a program makes of its arguments (indices into the word list)."""

    end: int | None = None  # the `--` that ends the options
    unknown: set[int] = field(default_factory=set)  # words holding an option it does not know
    operands: list[int] = field(default_factory=list)


def parse_options(table: OptionTable, words: list[str]) -> Parsed:
    out = Parsed()
    k = 0
    while k < len(words):
        word, at = words[k], k
        k += 1
        if word == "--":
            out.end = at
            out.operands.extend(range(k, len(words)))
            break
        if word.startswith("--"):
            name, eq, _ = word[2:].partition("=")
            kind = table.long_kind(name)
            if kind is None:
                out.unknown.add(at)
            elif kind == "value" and not eq:
                k += 1  # the next word, whatever it is
            continue
        if not word.startswith("-") or word == "-":
            out.operands.append(at)
            continue
        cluster = word[1:]
        for pos, letter in enumerate(cluster):
            if letter in table.values:
                if table.parser == "tree":
                    k += 1  # every value letter takes its own next word
                    continue
                if pos + 1 == len(cluster):
                    k += 1
                break  # the rest of the cluster is the value
            if letter in table.optional:
                break
            if letter not in table.flags:
                out.unknown.add(at)
                if table.parser != "tree":
                    break
    return out


def _table(parser: str, flags: str, values: str, long_names: str) -> OptionTable:
    """One program's options: the short letters without and with a value, then its long
    names as getopt_long spells them: `name` a flag, `name=` with a value, `name[=]` with a
    value only after `=`."""
    words = long_names.split()
    return OptionTable(
        parser, flags=flags, values=values,
        long_flags=frozenset(w for w in words if "=" not in w),
        long_values=frozenset(w.removesuffix("=") for w in words if w.endswith("=") and not w.endswith("[=]")),
        long_optional=frozenset(w.removesuffix("[=]") for w in words if w.endswith("[=]")),
    )


TABLES: dict[str, OptionTable] = {
    # GNU coreutils 9.1 sort: "-bcCdfghik:mMno:rRsS:t:T:uVy:z"
    "sort": _table("getopt", "bcCdfghimMnrRsuVz", "koStTy", """
        debug dictionary-order general-numeric-sort help human-numeric-sort ignore-case ignore-leading-blanks
        ignore-nonprinting merge month-sort numeric-sort random-sort reverse stable unique version version-sort
        zero-terminated
        batch-size= buffer-size= compress-program= field-separator= files0-from= key= output= parallel=
        random-source= sort= temporary-directory=
        check[=]"""),
    # GNU coreutils 9.1 uniq: "-0123456789Dcdf:is:uw:z"
    "uniq": _table("getopt", "0123456789Dcdiuz", "fsw", """
        count help ignore-case repeated unique version zero-terminated
        check-chars= skip-chars= skip-fields=
        all-repeated[=] group[=]"""),
    # GNU diffutils 3.8 diff
    "diff": _table("getopt", "0123456789abcdefhilnpqrstuvwyBEHNPTZ", "CDFILSUWXx", """
        binary brief ed expand-tabs forward-ed help ignore-all-space ignore-blank-lines ignore-case
        ignore-file-name-case ignore-space-change ignore-tab-expansion ignore-trailing-space inhibit-hunk-merge
        initial-tab left-column minimal new-file no-dereference no-ignore-file-name-case normal paginate rcs
        recursive report-identical-files sdiff-merge-assist show-c-function side-by-side speed-large-files
        strip-trailing-cr suppress-blank-empty suppress-common-lines text unidirectional-new-file version
        changed-group-format= exclude-from= exclude= from-file= horizon-lines= ifdef= ignore-matching-lines=
        label= line-format= new-group-format= new-line-format= old-group-format= old-line-format= palette=
        show-function-line= starting-file= tabsize= to-file= unchanged-group-format= unchanged-line-format=
        width=
        color[=] context[=] unified[=]"""),
    # file 5.44
    "file": _table("getopt", "0bcdhiklnprsvzCELNSZ", "efFmP", """
        apple brief checking-printout compile debug dereference extension help keep-going list mime
        mime-encoding mime-type no-buffer no-dereference no-pad no-sandbox preserve-date print0 raw
        special-files uncompress uncompress-noreport version
        exclude-quiet= exclude= files-from= magic-file= parameter= separator="""),
    # tree 2.1.0
    "tree": _table("tree", "acdfghilnpqrstuvxACDFJNQRSUX", "HILPTo", """
        device dirsfirst du fflinks filesfirst fromfile gitignore help ignore-case info inodes matchdirs
        metafirst nolinks noreport prune si version
        charset= filelimit= gitfile= hintro= houtro= infofile= sort= timefmt="""),
    # ripgrep 13.0.0 (clap), plus the names and `-d` that rg 14 added
    "rg": _table("clap", ".0abcFhHiIlLnNoPpqsSuUvVwxz", "ABCdeEfgjmMrtT", """
        auto-hybrid-regex binary block-buffered byte-offset case-sensitive column count count-matches crlf debug
        files files-with-matches files-without-match fixed-strings follow glob-case-insensitive heading help
        hidden ignore ignore-case ignore-dot ignore-exclude ignore-file-case-insensitive ignore-files
        ignore-global ignore-messages ignore-nested-git ignore-parent ignore-vcs include-zero invert-match json
        line-buffered line-number line-regexp max-columns-preview messages mmap multiline multiline-dotall
        no-auto-hybrid-regex no-binary no-block-buffered no-byte-offset no-column no-config no-context-separator
        no-crlf no-encoding no-filename no-fixed-strings no-follow no-glob-case-insensitive no-heading no-hidden
        no-ignore no-ignore-dot no-ignore-exclude no-ignore-file-case-insensitive no-ignore-files
        no-ignore-global no-ignore-messages no-ignore-nested-git no-ignore-parent no-ignore-vcs no-include-zero
        no-invert-match no-json no-line-buffered no-line-number no-max-columns-preview no-messages no-mmap
        no-multiline no-multiline-dotall no-one-file-system no-pcre2 no-pcre2-unicode no-pre no-require-git
        no-search-zip no-sort-files no-stats no-text no-trim no-unicode null null-data one-file-system
        only-matching passthrough passthru pcre2 pcre2-unicode pcre2-version pretty quiet require-git search-zip
        smart-case sort-files stats stop-on-nonmatch text trace trim type-list unicode unrestricted version
        vimgrep with-filename word-regexp
        after-context= before-context= color= colors= context-separator= context= dfa-size-limit= encoding=
        engine= field-context-separator= field-match-separator= file= generate= glob= hostname-bin=
        hyperlink-format= iglob= ignore-file= max-columns= max-count= max-depth= max-filesize= maxdepth=
        path-separator= pre-glob= pre= regex-size-limit= regexp= replace= sort= sortr= threads= type-add=
        type-clear= type-not= type="""),
}


__all__ = ["TABLES", "OptionTable", "Parsed", "parse_options"]
