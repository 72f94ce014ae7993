#!/bin/sh
# The architecture check (docs/architecture.md): reads the #include lines
# of every .c and .h under src/, include/ and tools/ of the tree given
# (default: this checkout) and fails, naming the file, its line and the
# include, when one runs against the arrows
#
#   common <- trace <- runtime
#   common <- tracefile <- merge <- output <- tools
#
# (merge, output and tools include nothing of the runtime or the tracer;
# the tracer nothing of the runtime or the merge side), and when a .c
# file under src/ is longer than DW_ARCH_MAX_LINES (800) lines.
# dwork/events.h, the shared constants, may be included by every part.
#
# Usage: arch_check.sh [ROOT]   exit 0: the tree keeps the picture; 1: it
# does not (each violation on stderr); 2: ROOT is not a source tree.
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
max=${DW_ARCH_MAX_LINES:-800}

# Known exceptions, the only ones: "FILE" (over the line limit) or
# "FILE INCLUDE" (an include against the arrows).  Each names why and
# who removes it; an entry that no longer matches anything fails the
# check too, so the list can only shrink.
exceptions='
'

if [ ! -d "$root/src" ]; then
	echo "arch_check: $root: no src/ folder (not a dwork source tree)" >&2
	exit 2
fi
cd "$root" || exit 2

# The part a source file belongs to, by its folder.
part_of_file() {
	case $1 in
	src/common/*) echo common ;;
	src/trace/*) echo trace ;;
	src/runtime/*) echo runtime ;;
	src/tracefile/*) echo tracefile ;;
	src/merge/*) echo merge ;;
	src/output/*) echo output ;;
	tools/*) echo tools ;;
	include/dwork/error.h) echo common ;;
	include/dwork/events.h) echo events ;;
	include/dwork/trace.h | include/extrae*.h) echo trace ;;
	include/*) echo runtime ;;
	*) echo other ;;
	esac
}

# The part an include names ("dir/x.h" from src/ or the project root,
# <dwork/x.h> and <extrae*.h> from include/); "x.h" alone is the
# including file's own folder; empty for system headers.
part_of_include() { # include file
	case $1 in
	\"common/* | \"trace/* | \"runtime/* | \"tracefile/* | \"merge/* | \
	\"output/* | \"tools/*)
		d=${1#\"}
		echo "${d%%/*}"
		;;
	'<dwork/error.h>') echo common ;;
	'<dwork/events.h>') echo events ;;
	'<dwork/trace.h>' | '<extrae'*) echo trace ;;
	'<dwork/'*) echo runtime ;;
	\"*/*) echo other ;;
	\"*) part_of_file "$2" ;;
	*) echo "" ;;
	esac
}

# Whether part $1 may include part $2.
allowed() {
	[ "$1" = "$2" ] || [ "$2" = events ] && return 0
	case "$1:$2" in
	trace:common | runtime:common | runtime:trace) return 0 ;;
	tracefile:common) return 0 ;;
	merge:common | merge:tracefile) return 0 ;;
	output:common | output:tracefile | output:merge) return 0 ;;
	tools:common | tools:tracefile | tools:merge | tools:output) return 0 ;;
	# dwork top is a client of a running master's control socket: it
	# speaks the runtime's handshake (its files are compiled into it)
	tools:runtime) return 0 ;;
	events:*) return 1 ;;
	esac
	return 1
}

is_exception() { # entry
	printf '%s\n' "$exceptions" | grep -qxF -- "$1"
}

bad=0
used=''
files=$(find src include tools -type f \( -name '*.c' -o -name '*.h' \) \
	2>/dev/null | LC_ALL=C sort)
for f in $files; do
	from=$(part_of_file "$f")
	[ "$from" = other ] && continue
	# "LINE INCLUDE" for every #include line (with or without spaces)
	incs=$(grep -n '^[[:space:]]*#[[:space:]]*include' "$f" |
		sed 's/^\([0-9]*\):[^<"]*\([<"][^>"]*[>"]\).*/\1 \2/')
	old_ifs=$IFS
	IFS='
'
	for l in $incs; do
		n=${l%% *}
		inc=${l#* }
		to=$(part_of_include "$inc" "$f")
		[ -z "$to" ] && continue
		allowed "$from" "$to" && continue
		if is_exception "$f $inc"; then
			used="$used
$f $inc"
			continue
		fi
		echo "$f:$n: includes $inc: $from may not include $to" >&2
		bad=1
	done
	IFS=$old_ifs
	case $f in
	src/*.c)
		lines=$(wc -l <"$f")
		if [ "$lines" -gt "$max" ]; then
			if is_exception "$f"; then
				used="$used
$f"
			else
				echo "$f: $lines lines, over the limit of $max" >&2
				bad=1
			fi
		fi
		;;
	esac
done

# An exception that matched nothing is stale: remove it from the list.
old_ifs=$IFS
IFS='
'
for e in $exceptions; do
	printf '%s\n' "$used" | grep -qxF -- "$e" && continue
	echo "arch_check: exception no longer needed: $e (remove it)" >&2
	bad=1
done
IFS=$old_ifs

[ "$bad" = 0 ] && echo "arch_check: $(echo "$files" | wc -l) files keep the arrows"
exit "$bad"
