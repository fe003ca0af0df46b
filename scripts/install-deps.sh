#!/usr/bin/env bash
# Installs the Debian 12 packages lazyslot builds and tests with (listed in .ci/packages.txt). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
missing=$(for p in $(cat .ci/packages.txt); do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q $missing
fi
command -v node >/dev/null && command -v npm >/dev/null || {
  echo "install-deps: node and npm are needed for the OpenAI-client tests (Debian: apt-get install nodejs npm)" >&2
}
