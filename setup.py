"""The optional native accelerator (`litellm_reasoning/_accel.c`); everything else is in
pyproject.toml. Without a C compiler the build goes on without it (pure Python, the same
results); `LITELLM_REASONING_PURE_BUILD=1` leaves it out on purpose (the pure wheel)."""

import os

from setuptools import Extension, setup

pure = os.environ.get("LITELLM_REASONING_PURE_BUILD", "").lower() in {"1", "true", "yes"}
setup(
    ext_modules=[]
    if pure
    else [
        Extension(
            "litellm_reasoning._accel",
            ["litellm_reasoning/_accel.c"],
            optional=True,  # no compiler: built without it
            extra_compile_args=["-O3"] if os.name != "nt" else [],
        )
    ]
)
