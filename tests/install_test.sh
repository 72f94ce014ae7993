#!/bin/sh
# install test: installs a build into a scratch prefix, then builds and
# runs a small program against it twice, once with pkg-config and once
# with find_package(dwork).  Exit 77 means skipped.
#
# usage: install_test.sh BUILD_DIR SOURCE_DIR   (CMAKE and CC may be set)
set -eu
build=$1
: "${CMAKE:=cmake}" "${CC:=cc}"

if grep -q '^DW_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
	echo "SKIP: sanitizer build (a consumer would need -fsanitize too)"
	exit 77
fi
if ! command -v pkg-config >/dev/null; then
	echo "SKIP: pkg-config not installed"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dwork-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

echo "== install into $tmp/prefix"
"$CMAKE" --install "$build" --prefix "$tmp/prefix"
pc=$(find "$tmp/prefix" -name dwtrace.pc)
test -n "$pc" || { echo "FAIL: no dwtrace.pc installed"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
# Extrae's names for the library must be the very same file.
for n in libseqtrace.so libseqtrace-5.1.2.so; do
	test "$(readlink -f "$libdir/$n")" = \
		"$(readlink -f "$libdir/libdwtrace.so.0")" ||
		{ echo "FAIL: $n is not libdwtrace.so.0"; exit 1; }
done

mkdir "$tmp/src"
cat >"$tmp/src/consumer.c" <<'EOF'
#include <dwork/trace.h>
#include <stdio.h>

int
main(void)
{
	dwt_config cfg;
	char err[256];

	dwt_config_defaults(&cfg);
	if (dwt_config_from_env(&cfg, err, sizeof err) != DW_OK) {
		fprintf(stderr, "consumer: %s\n", err);
		return 1;
	}
	if (dwt_init(&cfg) != DW_OK)
		return 1;
	dwt_event(1000, 42);
	dwt_fini();
	return 0;
}
EOF
cat >"$tmp/src/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(consumer LANGUAGES C)
find_package(dwork REQUIRED)
add_executable(consumer consumer.c)
target_link_libraries(consumer PRIVATE dwork::dwtrace)
add_executable(consumer_static consumer.c)
target_link_libraries(consumer_static PRIVATE dwork::dwtrace_static)
EOF

# run NAME BINARY: runs a consumer and checks it made its trace directory.
run() {
	echo "== run $1"
	rm -rf "$tmp/tr"
	LD_LIBRARY_PATH="$libdir" DWT_DIR="$tmp/tr" "$2"
	test -d "$tmp/tr" || { echo "FAIL: $1 made no $tmp/tr"; exit 1; }
}

echo "== build with pkg-config ($pc)"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs dwtrace)
echo "pkg-config: $flags"
# shellcheck disable=SC2086
"$CC" -std=c11 -Wall -Wextra -pedantic -Werror -o "$tmp/consumer_pc" \
	"$tmp/src/consumer.c" $flags
run pkg-config "$tmp/consumer_pc"

echo "== build with find_package(dwork)"
"$CMAKE" -S "$tmp/src" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
	-DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="-Wall -Wextra -Werror"
"$CMAKE" --build "$tmp/cm"
run find_package "$tmp/cm/consumer"
run find_package-static "$tmp/cm/consumer_static"

# The merge at the end of a traced run finds the installed tool beside
# the installed libdwork (dladdr), with no DWORK_TOOL and no dwork in
# PATH; the program includes every public header with -pedantic.
dpc=$(find "$tmp/prefix" -name dwork.pc)
if [ -n "$dpc" ]; then
	echo "== merge at the end with the installed tool"
	cat >"$tmp/src/rt.c" <<'EOF'
#include <dwork/dwork.h>
#include <dwork/events.h>
#include <dwork/manager.h>
#include <dwork/trace.h>

int
main(int argc, char **argv)
{
	dw_options o = {.size = sizeof o};
	if (dw_init_opts(&argc, &argv, &o) != DW_OK)
		return 1;
	return dw_finalize() == DW_OK && DW_EEXITED < 0 ? 0 : 1;
}
EOF
	dflags=$(PKG_CONFIG_PATH=$(dirname "$dpc") pkg-config --cflags --libs dwork)
	# shellcheck disable=SC2086
	"$CC" -std=c11 -Wall -Wextra -pedantic -Werror -o "$tmp/rt" \
		"$tmp/src/rt.c" $dflags
	rm -rf "$tmp/rt.trace"
	(cd "$tmp" && env -u DWORK_TOOL PATH=/usr/bin:/bin \
		LD_LIBRARY_PATH="$libdir" DWORK_TRACE="$tmp/rt.trace" ./rt)
	test -f "$tmp/rt.trace/trace.prv" || {
		echo "FAIL: no merged trace: the installed tool was not found"
		exit 1
	}
fi

echo "PASS"
