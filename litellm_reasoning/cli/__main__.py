"""`python -m litellm_reasoning.cli`: the `litellm-reasoning` command."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
