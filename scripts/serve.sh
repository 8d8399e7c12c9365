#!/usr/bin/env bash
# Installs what the host needs, builds it (release) and runs `tessera serve` on the default config.
# Extra arguments go to `tessera serve`, e.g. `scripts/serve.sh --config my.json`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
setup_build
cd "$TESSERA_ROOT"
swift build -c release --product tessera >&2
if [ $# -eq 0 ]; then set -- --config Config/tessera.json; fi
exec .build/release/tessera serve "$@"
