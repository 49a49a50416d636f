#!/usr/bin/env bash
# Idempotent install of every Debian package dpstream's build, tests and
# benchmarks need (`--tests`: also what only the tests need) (R and plm: the NLSY recipe and its test, which must run
# in CI rather than be skipped). Safe to run repeatedly: it only installs what is missing
# and runs `apt-get update` only when something must be installed.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  librdkafka-dev libavro-dev libcunit1-dev libsodium-dev libjansson-dev libjemalloc-dev libmicrohttpd-dev
  libcurl4-openssl-dev curl unzip openssl
  kcat python3 python3-yaml python3-venv
  openjdk-17-jre-headless maven
  r-base-core r-cran-plm r-cran-spatstat.data
  clang libclang-rt-14-dev
)
# Only the tests need a browser (tests/integration/http_page_browser.sh):
# `--tests` (scripts/test.sh) adds it, the demo does without.
if [ "${1:-}" = "--tests" ]; then
  PACKAGES+=(chromium)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# The Python consumer example (connectors/examples/consume_releases.py)
# and its test use stock clients from PyPI, in a venv of their own; the
# operability tests parse /metrics with prometheus_client's own parser and
# drive headless Chromium over the DevTools protocol with websocket-client;
# the schema registry test uses confluent-kafka's registry client, Avro
# serializer and deserializer, which need requests.
pyenv() {
  local cache=${DPSTREAM_CACHE:-${HOME:-/tmp}/.cache/dpstream}
  local venv=${DPSTREAM_PYENV:-$cache/pyenv}
  if "$venv/bin/python3" -c 'import confluent_kafka, fastavro, prometheus_client, websocket, requests' 2>/dev/null; then
    return 0
  fi
  echo "install-deps: preparing the Python venv $venv (confluent-kafka, fastavro, prometheus_client, websocket-client, requests)"
  mkdir -p "$(dirname "$venv")"
  [ -x "$venv/bin/python3" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check confluent-kafka==2.3.0 fastavro==1.9.7 \
    prometheus_client==0.21.1 websocket-client==1.8.0 requests==2.32.3
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  pyenv
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
pyenv
