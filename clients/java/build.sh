#!/usr/bin/env bash
# Builds the Java client with the JDK alone (no Maven): build/seqd-client.jar.
#
#   ./build.sh        compile and package
#   ./build.sh test   also compile and run the tests with JUnit 5's console
#                     launcher (Debian's junit5 package, or JUNIT_DIR naming
#                     the folder of junit-platform-console-standalone.jar).
#   ./build.sh fence-test
#                     the same for the fences' tests (package dev.seqd.fence),
#                     with the JDBC drivers of /usr/share/java (JDBC_DIR).
#   ./build.sh conformance
#                     also compile the tests and run the conformance runner
#                     (dev.seqd.client.Conformance) against the hostile daemon
#                     that clients/conformance_test.go starts.
#
# The tests ending in IT talk to the daemons that clients/java_test.go starts
# (go test ./clients/ -run TestJavaClient); run alone, they fail for want of
# SEQD_ADDR and SEQD_TEST_CONTROL.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf build/classes build/test-classes
mkdir -p build
javac --release 17 -Xlint:all -Werror -d build/classes $(find src/main/java -name '*.java')
# The Redis fence's script is one file in seqd's repository, copied in as a
# resource of the jar, never kept here.
cp ../../fence/redisfence/fence.lua build/classes/dev/seqd/fence/fence.lua
printf 'Automatic-Module-Name: dev.seqd.client\n' > build/MANIFEST.MF
jar --create --file build/seqd-client.jar --manifest build/MANIFEST.MF -C build/classes .
echo "built build/seqd-client.jar"
case "${1:-}" in test | fence-test | conformance) ;; *) exit 0 ;; esac

junit=${JUNIT_DIR:-/usr/share/java}/junit-platform-console-standalone.jar
if ! [ -f "$junit" ]; then
  echo "build.sh test needs JUnit 5: apt-get install junit5 (scripts/deps.sh does), or set JUNIT_DIR" >&2
  exit 1
fi
if [ "$1" = fence-test ]; then
  # Only the fences' tests (and the JSON reader they borrow from the client's).
  javac --release 17 -Xlint:all -d build/test-classes -cp "build/classes:$junit" \
    $(find src/test/java/dev/seqd/fence -name '*.java') src/test/java/dev/seqd/client/TestJson.java
  # The fences' tests run the JDBC drivers an application would bring:
  # Debian's libpostgresql-jdbc-java and libmariadb-java.
  drivers=${JDBC_DIR:-/usr/share/java}
  for j in postgresql.jar mariadb-java-client.jar; do
    if ! [ -f "$drivers/$j" ]; then
      echo "build.sh fence-test needs $drivers/$j: apt-get install libpostgresql-jdbc-java libmariadb-java (scripts/deps.sh does), or set JDBC_DIR" >&2
      exit 1
    fi
  done
  exec java -jar "$junit" --disable-banner --details=tree --fail-if-no-tests \
    -cp "build/classes:build/test-classes:$drivers/postgresql.jar:$drivers/mariadb-java-client.jar" \
    --select-package dev.seqd.fence --include-classname '.*(Test|IT)$' "${@:2}"
fi
javac --release 17 -Xlint:all -d build/test-classes -cp "build/classes:$junit" $(find src/test/java -name '*.java')
if [ "$1" = conformance ]; then
  exec java -cp build/classes:build/test-classes dev.seqd.client.Conformance
fi
exec java -jar "$junit" --disable-banner --details=tree --fail-if-no-tests \
  -cp build/classes:build/test-classes --select-package dev.seqd.client \
  --include-classname '.*(Test|IT)$' "${@:2}"
