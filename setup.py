"""The one compiled piece, optional: rocsample._fastcall (a Sampler's plain repeated call with
torch tensors in C, rocsample/_fastcall.c). Where no C compiler or Python headers exist the build
goes on without it and the same calls run in Python. Everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("rocsample._fastcall", ["rocsample/_fastcall.c"], optional=True,
                             extra_compile_args=["-O2"])])
