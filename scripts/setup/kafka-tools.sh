#!/usr/bin/env bash
# Fetches Kafka's command-line tools (test/kafka-tools: the kafka-tools and kafka_2.13 jars of
# Apache Kafka from Maven Central, with their runtime dependencies) into the gitignored
# .cache/kafka-tools/lib, with Maven's local repository in .cache/m2, and prints the classpath
# to run them with, as bin/kafka-run-class.sh does
# (`java -cp "$(scripts/setup/kafka-tools.sh)" org.apache.kafka.tools.TopicCommand ...`).
# A no-op once fetched: keyed by a checksum of the pom. Needs java (17+) and mvn; exits 2 naming
# what is missing. Used by test/integration/kafka-tools.test.ts.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
project="$root/test/kafka-tools"
cache="$root/.cache/kafka-tools"
for tool in java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "kafka-tools: $tool not found (Debian: apt-get install -y openjdk-17-jdk-headless maven)" >&2
    exit 2
  fi
done
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9 # one fetch at a time (two test processes may ask at once)
sum="$(sha256sum "$project/pom.xml" | cut -d' ' -f1)"
classpath="$cache/lib/*"
if [ -f "$cache/stamp" ] && [ "$(cat "$cache/stamp")" = "$sum" ]; then
  echo "$classpath"
  exit 0
fi
rm -rf "$cache/stamp" "$cache/lib" # no jar of an older pom left on the classpath
echo "kafka-tools: fetching Kafka's tools and their dependencies from Maven Central" >&2
mvn -q -B -Dstyle.color=never -f "$project/pom.xml" -Dmaven.repo.local="$root/.cache/m2" -Dtern.kafka.tools.lib="$cache/lib" package >&2
echo "$sum" >"$cache/stamp"
echo "$classpath"
