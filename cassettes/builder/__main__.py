"""`python -m builder` from cassettes/: the same as `python cassettes/build_cassettes.py`."""

from .write import main

main()
