#!/usr/bin/env bash
# Builds the real-YARN test peer (this Maven module: Hadoop 3.5.0's
# MiniYARNCluster and a small ApplicationMaster) into build/yarn at the
# repository top: target/peer.jar and lib/ (every dependency, from Maven
# Central). A stamp of pom.xml and src/ (the same hash test/yarnpeer.Stamp
# computes) skips the build when it is current. Needs Java 17 and Maven.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../.." && pwd)"
out="$top/build/yarn"
stamp="$(cd "$top" && go run ./test/yarnpeer/stamp)"
if [[ -f "$out/target/peer.jar" && -d "$out/lib" && "$(cat "$out/.stamp" 2>/dev/null)" == "$stamp" ]]; then
	echo "the real-YARN peer is current in $out"
	exit 0
fi
for tool in java mvn; do
	if ! command -v "$tool" >/dev/null; then
		echo "deps-yarn: $tool not found: the real-YARN tests need Java 17 and Maven (apt-get install openjdk-17-jdk-headless maven)" >&2
		exit 1
	fi
done
echo "building the real-YARN peer (Hadoop 3.5.0) into $out"
rm -rf "$out/lib"
mvn -B -q -f "$here/pom.xml" package
echo "$stamp" > "$out/.stamp"
