"""The compiled parts: msprobe's display strings (graphboard/store/_render.c, with
_floats.cpp for Python's float formatting at the speed of libstdc++'s std::to_chars), and
tb_nodes written straight into SQLite's file format (graphboard/store/_btree.c), the hot
path of dump.json record parsing (graphboard/dump/_records.c), and the statistics-mode
metrics (graphboard/compare/_summary.c).

Everything else is in pyproject.toml; setuptools reads both.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "graphboard.store._render",
            ["backend/graphboard/store/_render.c", "backend/graphboard/store/_floats.cpp"],
            language="c++",  # links libstdc++
            extra_compile_args=["-O2", "-Wall"],  # no -Werror: a newer compiler must still install
        ),
        Extension(
            "graphboard.dump._records",
            ["backend/graphboard/dump/_records.c"],
            extra_compile_args=["-O2", "-Wall"],
        ),
        Extension(
            "graphboard.store._btree",
            ["backend/graphboard/store/_btree.c"],
            extra_compile_args=["-O2", "-Wall"],
        ),
        Extension(
            "graphboard.compare._summary",
            ["backend/graphboard/compare/_summary.c"],
            extra_compile_args=["-O2", "-Wall"],
        ),
    ]
)
