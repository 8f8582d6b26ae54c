#!/usr/bin/env bash
# Installs Debian's prometheus server for llmtap's Prometheus test
# (modules/llmtap TestPrometheusServerScrapesTTFT, which starts it on loopback itself) unless a
# prometheus binary is on PATH already; prints its version. The package's service is not
# started: in a container without systemd, invoke-rc.d declines, and the test needs none.
#
#   bench/prometheus.sh
set -euo pipefail

if ! command -v prometheus >/dev/null; then
  echo "prometheus.sh: installing Debian's prometheus (apt-get, once)" >&2
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends prometheus >&2
fi
prometheus --version 2>&1 | head -1
