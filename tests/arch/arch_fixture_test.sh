#!/bin/sh
# The architecture check must fail where the picture breaks: a scratch
# tree with one violation of each kind, each of which must be named, and
# a clean tree, which must pass.
set -u
check=$(cd "$(dirname "$0")" && pwd)/arch_check.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dw_arch.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
expect() { # what output-file
	if ! grep -qF -- "$1" "$2"; then
		echo "FAILED: expected \"$1\" in:" >&2
		cat "$2" >&2
		fails=$((fails + 1))
	fi
}

# a clean tree: the allowed arrows only
mkdir -p "$tmp/ok/src/common" "$tmp/ok/src/merge" "$tmp/ok/src/output" \
	"$tmp/ok/src/trace" "$tmp/ok/src/runtime" "$tmp/ok/src/tracefile" \
	"$tmp/ok/tools" "$tmp/ok/include/dwork"
printf '#include <stdio.h>\n' >"$tmp/ok/src/common/a.c"
printf '#include "common/a.h"\n#include <dwork/error.h>\n' \
	>"$tmp/ok/src/trace/t.c"
printf '#include "trace/t.h"\n#include <dwork/dwork.h>\n' \
	>"$tmp/ok/src/runtime/r.c"
printf '#include "tracefile/reader.h"\n#include <dwork/events.h>\n' \
	>"$tmp/ok/src/merge/m.c"
printf '#include "merge/m.h"\n#include "x_int.h"\n' >"$tmp/ok/src/output/o.c"
printf '#include "output/o.h"\n' >"$tmp/ok/tools/cmd.c"
printf '#include <dwork/error.h>\n' >"$tmp/ok/include/dwork/trace.h"
# the exceptions of the real check are files this tree lacks
sed '/^exceptions=/,/^'"'"'$/c\
exceptions=""' "$check" >"$tmp/check_noexc.sh"
if ! sh "$tmp/check_noexc.sh" "$tmp/ok" >"$tmp/ok.out" 2>&1; then
	echo "FAILED: a clean tree was refused:" >&2
	cat "$tmp/ok.out" >&2
	fails=$((fails + 1))
fi

# a tree with a violation of each rule
cp -r "$tmp/ok" "$tmp/bad"
printf '#include <string.h>\n#include "runtime/rt.h"\n' \
	>"$tmp/bad/src/merge/bad1.c"
printf '#include <dwork/dwork.h>\n' >"$tmp/bad/src/output/bad2.c"
printf '#include "merge/merge.h"\n' >"$tmp/bad/src/trace/bad3.c"
printf '#  include "runtime/wire.h"\n' >"$tmp/bad/src/trace/bad4.h"
printf '#include "output/stats.h"\n' >"$tmp/bad/src/tracefile/bad5.c"
printf '#include "trace/buffer.h"\n' >"$tmp/bad/tools/bad6.c"
printf '#include "merge/merge.h"\n' >"$tmp/bad/include/dwork/bad7.h"
printf '#include "output/o.h"\n' >"$tmp/bad/src/merge/bad8.c"
i=0
while [ $i -lt 801 ]; do
	echo "int x$i;"
	i=$((i + 1))
done >"$tmp/bad/src/merge/long.c"
if sh "$tmp/check_noexc.sh" "$tmp/bad" >"$tmp/bad.out" 2>&1; then
	echo "FAILED: a tree against the arrows passed" >&2
	fails=$((fails + 1))
fi
expect 'src/merge/bad1.c:2: includes "runtime/rt.h": merge may not include runtime' "$tmp/bad.out"
expect 'src/output/bad2.c:1: includes <dwork/dwork.h>: output may not include runtime' "$tmp/bad.out"
expect 'src/trace/bad3.c:1: includes "merge/merge.h": trace may not include merge' "$tmp/bad.out"
expect 'src/trace/bad4.h:1: includes "runtime/wire.h": trace may not include runtime' "$tmp/bad.out"
expect 'src/tracefile/bad5.c:1: includes "output/stats.h": tracefile may not include output' "$tmp/bad.out"
expect 'tools/bad6.c:1: includes "trace/buffer.h": tools may not include trace' "$tmp/bad.out"
expect 'include/dwork/bad7.h:1: includes "merge/merge.h": runtime may not include merge' "$tmp/bad.out"
expect 'src/merge/bad8.c:1: includes "output/o.h": merge may not include output' "$tmp/bad.out"
expect 'src/merge/long.c: 801 lines, over the limit of 800' "$tmp/bad.out"
n=$(grep -c 'may not include\|over the limit' "$tmp/bad.out")
if [ "$n" != 9 ]; then
	echo "FAILED: $n violations reported, 9 planted:" >&2
	cat "$tmp/bad.out" >&2
	fails=$((fails + 1))
fi

# an exception that no longer matches anything fails the check
sed "s@^exceptions='\$@exceptions='\\nsrc/merge/gone.c@" "$check" >"$tmp/check_stale.sh"
mkdir -p "$tmp/stale"
cp -r "$tmp/ok/src" "$tmp/ok/tools" "$tmp/ok/include" "$tmp/stale/"
if sh "$tmp/check_stale.sh" "$tmp/stale" >"$tmp/stale.out" 2>&1; then
	echo "FAILED: stale exceptions passed" >&2
	fails=$((fails + 1))
fi
expect 'exception no longer needed: src/merge/gone.c' "$tmp/stale.out"

# not a source tree
if sh "$check" "$tmp/nowhere" >"$tmp/none.out" 2>&1; then
	echo "FAILED: a missing tree passed" >&2
	fails=$((fails + 1))
fi
expect 'no src/ folder' "$tmp/none.out"

[ $fails = 0 ] && echo "arch_fixture: every planted violation named"
exit $((fails > 0))
