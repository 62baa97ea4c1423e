#!/bin/sh
# Regenerate the build system: run once after a fresh checkout.
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf --force --install --warnings=all
