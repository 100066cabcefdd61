"""The optional compiled parts, all in graphboard/accel/ (see its __init__.py): msprobe's
display strings (_render.c, with _floats.cpp for Python's float repr through libstdc++'s
std::to_chars) and tb_nodes written straight into SQLite's file format (_btree.c).

Each is ``optional``: without a working compiler (``CC=false CXX=false pip install .``) it is
skipped and graphboard runs its Python for that stage. Everything else is in pyproject.toml.
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
        Extension(
            "graphboard.accel._btree",
            [f"{ACCEL}/_btree.c"],
            extra_compile_args=FLAGS,
            optional=True,
        ),
    ]
)
