#!/usr/bin/env bash
# Idempotent install of the Debian packages (and, for the tests, a Python
# venv) dpstream needs, by level:
#
#   (none) | --build    what `scripts/build.sh` needs to build dpstream and
#                       its unit tests: the C toolchain, CMake and the -dev
#                       packages of librdkafka, avro-c, CUnit, libsodium,
#                       jansson, jemalloc, libmicrohttpd, libcurl.  The
#                       demo (`scripts/demo.sh`) needs nothing more: it runs
#                       on librdkafka's in-process mock cluster.
#   --recipes           the build, plus what the data recipes under
#                       connectors/ run: Python 3 (+ yaml), R with plm (the
#                       NLSY panel) and spatstat.data (clmfires), unzip.
#   --tests             the recipes, plus what the test suites need: a JRE
#                       and Maven (the real Kafka broker and schema registry
#                       from Maven Central), kcat, curl, openssl, clang and
#                       its sanitizer runtime (libFuzzer), chromium (the
#                       page test), and the Python venv of stock clients.
#                       `scripts/test.sh` (CI) uses this level.
#
# Safe to run repeatedly: it installs only what is missing and runs
# `apt-get update` only when something must be installed.
set -euo pipefail

level=${1:---build}
BUILD=(build-essential cmake pkg-config git
       librdkafka-dev libavro-dev libcunit1-dev libsodium-dev libjansson-dev libjemalloc-dev libmicrohttpd-dev
       libcurl4-openssl-dev)
RECIPES=(python3 python3-yaml python3-venv unzip r-base-core r-cran-plm r-cran-spatstat.data)
TESTS=(kcat curl openssl openjdk-17-jre-headless maven clang libclang-rt-14-dev chromium)
case "$level" in
  --build)   PACKAGES=("${BUILD[@]}") ;;
  --recipes) PACKAGES=("${BUILD[@]}" "${RECIPES[@]}") ;;
  --tests)   PACKAGES=("${BUILD[@]}" "${RECIPES[@]}" "${TESTS[@]}") ;;
  *) echo "usage: $0 [--build|--recipes|--tests]" >&2; exit 2 ;;
esac

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
  echo "install-deps: all ${#PACKAGES[@]} packages of level ${level#--} present"
else
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if [ "$level" = --tests ]; then
  pyenv
fi
