from spar.cli import entry

entry()
