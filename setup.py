"""graphboard's optional compiled part, in graphboard/accel/ (see its __init__.py): msprobe's
display strings (_render.c, with _floats.cpp for Python's float repr through libstdc++'s
std::to_chars).

It is ``optional``: without a working compiler (``CC=false CXX=false pip install .``) it is
skipped and graphboard runs its Python for that stage. tb_nodes written straight into SQLite's
file format (_btree.c) is a package of its own, packages/graphboard-btree, built and installed
apart (scripts/setup installs it). Everything else is in pyproject.toml.
"""

from setuptools import Extension, setup

ACCEL = "backend/graphboard/accel"
FLAGS = ["-O2", "-Wall"]  # no -Werror: a newer compiler must still install

setup(
    ext_modules=[
        Extension(
            "graphboard.accel._render",
            [f"{ACCEL}/_render.c", f"{ACCEL}/_floats.cpp"],
            language="c++",  # links libstdc++
            extra_compile_args=FLAGS,
            optional=True,
        ),
    ]
)
