# Sourced by scripts/setup: whether .venv's editable install of graphboard is current.
#
# An editable install serves the .py files from backend/ as they are, so only what pip itself
# builds or declares can go stale: pyproject.toml and setup.py (dependencies, entry points,
# extensions), the C/C++ sources of the extensions, the packages built apart (packages/*: each
# installed whole, not editable), scripts/setup (what it installs, the pins) and the
# interpreter they were built for. A stamp, the hash of those, is written after each
# successful install; while it matches and the extensions are built, pip need not run.
# Remove .venv/.graphboard-install* to force a reinstall.

# The hash of the install's inputs, as they are now.
install_inputs_hash() {
  {
    .venv/bin/python -c 'import sys; print(sys.version)'
    {
      printf '%s\n' pyproject.toml setup.py scripts/setup
      {
        find backend -type f \( -name '*.c' -o -name '*.cpp' -o -name '*.h' \)
        # a package built apart is installed whole: its build files and sources, not its tests
        find packages -type f \( -name '*.c' -o -name '*.h' -o -name '*.py' -o -name '*.pyi' \
          -o -name '*.toml' \) -not -path 'packages/*/tests/*' -not -path 'packages/*/build/*'
      } | LC_ALL=C sort
    } | xargs -d '\n' sha256sum
  } | sha256sum | cut -d' ' -f1
}

# Every extension setup.py declares has its built module beside its sources (a clean of the
# build products must reinstall even when no input changed), and the compiled tb_nodes writer
# is installed in .venv.
extensions_built() {
  local module
  for module in $(grep -o '"graphboard\.[A-Za-z0-9_.]*"' setup.py | tr -d '"'); do
    compgen -G "backend/${module//.//}.*.so" >/dev/null || return 1
  done
  compgen -G ".venv/lib/python3*/site-packages/graphboard_btree/_btree.*.so" >/dev/null
}

# install_current STAMP HASH: the install recorded in STAMP was made from these inputs.
install_current() {
  [ -f "$1" ] && [ "$(cat "$1")" = "$2" ] && extensions_built
}

# write_install_stamp STAMP HASH, after a successful install (never half-written).
write_install_stamp() {
  printf '%s\n' "$2" >"$1.tmp"
  mv "$1.tmp" "$1"
}
