"""The one Extension: graphboard_btree._btree, from _btree.c.

Not optional here, unlike graphboard's own compiled parts: this package is nothing without
it, so a machine without a C compiler fails to install it, and graphboard then writes tb_nodes
through SQLite (scripts/setup says so and goes on). Everything else is in pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "graphboard_btree._btree",
            ["src/graphboard_btree/_btree.c"],
            extra_compile_args=["-O2", "-Wall"],  # no -Werror: a newer compiler must still install
        )
    ]
)
