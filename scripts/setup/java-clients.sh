#!/usr/bin/env bash
# Builds the Java-client test programs (test/java: Kafka's Java client from Maven Central) into
# the gitignored .cache/java/build, with Maven's local repository in .cache/m2, and prints the
# classpath to run them with (`java -cp "$(scripts/setup/java-clients.sh)" tern.javaclient.X`).
# A no-op once built: the build is keyed by a checksum of the pom and the sources. Needs java
# (17+) and mvn; exits 2 naming what is missing. Used by test/integration/java-client.test.ts
# and kafka-streams.test.ts (kafka-streams, the same version as kafka-clients).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
project="$root/test/java"
build="$root/.cache/java/build"
for tool in java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "java-clients: $tool not found (Debian: apt-get install -y openjdk-17-jdk-headless maven)" >&2
    exit 2
  fi
done
mkdir -p "$build"
# One build at a time (two test processes may ask at once).
exec 9>"$root/.cache/java/.lock"
flock 9
sum="$(cd "$project" && find pom.xml src -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
classpath="$build/tern-java-clients.jar:$build/lib/*"
if [ -f "$build/stamp" ] && [ "$(cat "$build/stamp")" = "$sum" ] && [ -f "$build/tern-java-clients.jar" ]; then
  echo "$classpath"
  exit 0
fi
rm -rf "$build/stamp" "$build/lib" # no jar of an older pom left on the classpath
echo "java-clients: building test/java (first run downloads kafka-clients from Maven Central)" >&2
mvn -q -B -Dstyle.color=never -f "$project/pom.xml" -Dmaven.repo.local="$root/.cache/m2" -Dtern.java.build="$build" package >&2
echo "$sum" >"$build/stamp"
echo "$classpath"
