"""`python -m litellm_reasoning`: the `litellm-reasoning` command."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
