"""Standard exports of recorded findings: SARIF 2.1.0, GitLab Code Quality, reviewdog rdjsonl.

`collect` turns rounds already read into one flat list of findings with
everything every format needs (location kind, lines, standing disposition,
fingerprint); `sarif`, `codeclimate` and `rdjsonl` only reshape that list.
All of it is pure: `spar.commands.export` reads the records and writes the file.
"""
