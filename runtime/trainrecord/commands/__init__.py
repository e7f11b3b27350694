"""Subcommands of the ``trainrecord`` command line, one module each (see ``trainrecord.cli``)."""
