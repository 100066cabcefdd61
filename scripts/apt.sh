# Sourced by scripts/setup: Debian packages, installed only when missing, waiting for another apt.
#
# A fresh machine's unattended upgrades hold apt's locks for minutes; apt-get gives up at once.
# DPkg::Lock::Timeout makes apt-get wait for dpkg's lock, but `apt-get update` fails on the
# lists lock without waiting (apt 2.6 here), so a failure that names a lock is retried, every
# APT_LOCK_POLL seconds for at most APT_LOCK_SECONDS in all; any other failure ends at once.
# A package counts as installed only when dpkg's status is "install ok installed": `dpkg -s`
# succeeds for one merely unpacked (an interrupted install), which is not usable.

APT_LOCK_SECONDS=${GRAPHBOARD_APT_LOCK_SECONDS:-300}
APT_LOCK_POLL=${GRAPHBOARD_APT_LOCK_POLL:-5}

# deb_installed PKG: dpkg has PKG fully installed and configured.
deb_installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

# apt_get ARGS...: apt-get ARGS (as root, or through sudo), waiting for another apt's locks
# up to APT_LOCK_SECONDS; its output is shown only when it fails.
apt_get() {
  local sudo="" started=$SECONDS out status announced=0
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  while :; do
    status=0
    # env inside sudo: sudo resets the environment, so a variable set before it is lost
    out=$($sudo env DEBIAN_FRONTEND=noninteractive apt-get \
      -o "DPkg::Lock::Timeout=$APT_LOCK_SECONDS" "$@" 2>&1) || status=$?
    [ "$status" -eq 0 ] && return 0
    if ! grep -q -e 'Could not get lock' -e 'Unable to lock' -e 'Unable to acquire the dpkg' <<<"$out" \
      || [ $((SECONDS - started)) -ge "$APT_LOCK_SECONDS" ]; then
      printf '%s\n' "$out" >&2
      [ "$announced" = 1 ] && echo "setup: apt's lock was still held after ${APT_LOCK_SECONDS}s" >&2
      return "$status"
    fi
    if [ "$announced" = 0 ]; then
      echo "setup: another apt holds its lock (a fresh machine's unattended upgrades?);" \
        "waiting up to ${APT_LOCK_SECONDS}s (GRAPHBOARD_APT_LOCK_SECONDS)"
      announced=1
    fi
    sleep "$APT_LOCK_POLL"
  done
}

# apt_install PKG...: install those of PKG not fully installed.
apt_install() {
  local missing=() pkg
  for pkg in "$@"; do deb_installed "$pkg" || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing Debian packages: ${missing[*]}"
  apt_get update -qq
  apt_get install -y -qq "${missing[@]}"
}
