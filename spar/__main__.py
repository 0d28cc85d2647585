import sys

from spar.cli import main

sys.exit(main())
