#!/usr/bin/env bash
# Builds the real-YARN test peer (this Maven module: Hadoop's MiniYARNCluster
# and a small ApplicationMaster) once per Hadoop version of the matrix
# (3.5.0 and 3.3.6; HADOOP_VERSIONS overrides) into build/yarn/<version> at
# the repository top: target/peer.jar and lib/ (every dependency, from Maven
# Central), mr-lib/ (MapReduce: mr/pom.xml) and spark-lib/ (Spark on YARN
# and the tests' job, spark-lib/spark-job.jar: spark/pom.xml). A stamp of
# the poms and sources (the same hash test/yarnpeer.Stamp computes) skips a
# version's build when it is current. Needs Java 17 and Maven.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../.." && pwd)"
stamp="$(cd "$top" && go run ./test/yarnpeer/stamp)"
for tool in java mvn; do
	if ! command -v "$tool" >/dev/null; then
		echo "deps-yarn: $tool not found: the real-YARN tests need Java 17 and Maven (apt-get install openjdk-17-jdk-headless maven)" >&2
		exit 1
	fi
done
# The single-version layout of earlier builds (build/yarn/target, lib).
rm -rf "$top/build/yarn/target" "$top/build/yarn/lib" "$top/build/yarn/.stamp"
for version in ${HADOOP_VERSIONS:-3.5.0 3.3.6}; do
	out="$top/build/yarn/$version"
	if [[ -f "$out/target/peer.jar" && -d "$out/lib" && -d "$out/mr-lib" && -f "$out/spark-lib/spark-job.jar" && "$(cat "$out/.stamp" 2>/dev/null)" == "$stamp" ]]; then
		echo "the real-YARN peer for Hadoop $version is current in $out"
		continue
	fi
	echo "building the real-YARN peer (Hadoop $version) into $out"
	rm -rf "$out/lib" "$out/mr-lib" "$out/spark-lib" "$out"/*.jsa "$out"/*.classlist # the class-data sharing archives name the jars they were made from (yarnpeer/cds.go)
	mvn -B -q -f "$here/pom.xml" -Dhadoop.version="$version" -Dpeer.build="$out" package
	mvn -B -q -f "$here/mr/pom.xml" -Dhadoop.version="$version" -Dpeer.build="$out" package
	# Spark brings its own Hadoop client (3.4.x); the same for each version.
	mvn -B -q -f "$here/spark/pom.xml" -Dpeer.build="$out" package
	cp "$out/spark-target/spark-job.jar" "$out/spark-lib/"
	echo "$stamp" > "$out/.stamp"
done
