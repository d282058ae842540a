"""`python -m dsr`: train, evaluate and run models on your own recordings from the command
line (`python -m dsr --help`)."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
