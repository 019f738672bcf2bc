import sys

from webeval.cli import main

sys.exit(main())
