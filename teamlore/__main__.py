"""``python -m teamlore`` runs the ``teamlore`` command."""

from teamlore.cli import main

main()
