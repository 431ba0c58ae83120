import sys

from pybudget.cli import main

sys.exit(main())
