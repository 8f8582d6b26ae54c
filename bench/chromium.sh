#!/usr/bin/env bash
# Installs Debian's chromium for llmtap's browser tests (e2e/browser) unless a Chromium or
# Chrome is on PATH already; prints the browser's version.
#
#   bench/chromium.sh
set -euo pipefail

for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null; then
    # The Debian wrapper prints a harmless shell warning on some setups; keep the version line.
    "$b" --version 2>/dev/null | head -1
    exit 0
  fi
done
echo "chromium.sh: installing Debian's chromium (apt-get, once)" >&2
sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >&2
chromium --version 2>/dev/null | head -1
