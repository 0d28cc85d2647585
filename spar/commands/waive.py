"""See spar.cli; this command is not built yet."""
