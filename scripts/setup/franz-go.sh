#!/usr/bin/env bash
# Builds franz-go's pkg/kgo test binary (github.com/twmb/franz-go from the Go module proxy: its
# integration tests, pointed at a cluster with KGO_SEEDS) into the gitignored .cache/franz-go,
# with Go's module cache in .cache/go, and prints two lines: the test binary, then the package
# directory to run it in (some tests read their own sources). A no-op once built. Needs go (the
# module asks for Go 1.26: an older go fetches that toolchain from the proxy by itself); exits 2
# when go is missing. Used by scripts/kgo-suite.ts and test/integration/franz-go.test.ts.
set -euo pipefail
version="${FRANZ_GO_VERSION:-v1.22.3}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
cache="$root/.cache/franz-go/$version"
if ! command -v go >/dev/null 2>&1; then
  echo "franz-go: go not found (https://go.dev/dl, or Debian: apt-get install -y golang-go)" >&2
  exit 2
fi
export GOPATH="$root/.cache/go" GOMODCACHE="$root/.cache/go/mod" GOFLAGS=-mod=mod
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9 # one build at a time (two test processes may ask at once)
if [ -x "$cache/kgo.test" ] && [ -d "$cache/src/pkg/kgo" ]; then
  printf '%s\n%s\n' "$cache/kgo.test" "$cache/src/pkg/kgo"
  exit 0
fi
echo "franz-go: building pkg/kgo's tests of franz-go $version (first run downloads it)" >&2
dir="$(go mod download -json "github.com/twmb/franz-go@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -n "$dir" ] || { echo "franz-go: go mod download gave no directory" >&2; exit 1; }
rm -rf "$cache/src"
cp -r "$dir" "$cache/src"
chmod -R u+w "$cache/src" # the module cache is read-only; go test -c writes go.sum here
(cd "$cache/src" && go test -c -o "$cache/kgo.test.partial" ./pkg/kgo >&2)
mv "$cache/kgo.test.partial" "$cache/kgo.test"
printf '%s\n%s\n' "$cache/kgo.test" "$cache/src/pkg/kgo"
