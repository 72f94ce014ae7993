#!/bin/sh
# The line counts of docs/julia.md, one way for every program: lines that
# are neither blank nor comment-only.  C: examples/NAME.c as committed
# (clang-formatted; a line is comment-only when nothing but blanks is
# left without its /* */ and // comments).  Julia: the ```julia blocks
# of docs/julia.md in order (comment-only = starting with #).
#
#   sh examples/linecount.sh            prints "NAME JULIA C RATIO"
#   sh examples/linecount.sh --check    also fails (exit 1) when a C port
#                                       is over 2.5x its Julia (issue 18's
#                                       bound, on the exact counts, not
#                                       the rounded ratio) or julia.md's
#                                       table disagrees with the counts
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
doc="$root/docs/julia.md"
names="pmap_uneven jobs_results spawnat distributed_sum add_rm_procs
machine_file"

# Lines with code left once comments are taken out (/* */ over lines,
# //; not inside "..." or '...'), so `*p = 0;` counts and a comment's
# continuation line does not.
c_lines() {
	awk '
	{
		out = ""; q = ""
		for (i = 1; i <= length($0); i++) {
			c = substr($0, i, 1); d = substr($0, i, 2)
			if (inc) { if (d == "*/") { inc = 0; i++ }; continue }
			if (q != "") {
				out = out c
				if (c == "\\") { out = out substr($0, ++i, 1) }
				else if (c == q) q = ""
				continue
			}
			if (d == "/*") { inc = 1; i++; continue }
			if (d == "//") break
			if (c == "\"" || c == "'\''") q = c
			out = out c
		}
		if (out ~ /[^[:space:]]/) n++
	}
	END { print n + 0 }' "$1"
}

# Lines of the k-th ```julia block (1-based).
julia_lines() {
	awk -v k="$1" '
		/^```julia/ { n++; inb = (n == k); next }
		/^```/ { inb = 0; next }
		inb && !/^[[:space:]]*$/ && !/^[[:space:]]*#/ { c++ }
		END { print c + 0 }' "$doc"
}

bad=0
k=0
for name in $names; do
	k=$((k + 1))
	j=$(julia_lines $k)
	c=$(c_lines "$root/examples/$name.c")
	ratio=$(awk -v c="$c" -v j="$j" 'BEGIN { printf "%.1f", c / j }')
	echo "$name $j $c $ratio"
	if [ "${1:-}" = "--check" ] && [ $((2 * c)) -gt $((5 * j)) ]; then
		echo "examples/$name.c: $c lines, over 2.5x its Julia's $j" \
		     "(at most $((5 * j / 2)))" >&2
		bad=1
	fi
	if [ "${1:-}" = "--check" ]; then
		# the table row naming NAME.c must hold | JULIA | … | C | RATIO× |
		row=$(grep "(\`$name\.c\`)" "$doc" | grep '^|' || true)
		case "$row" in
		*"| $j |"*"| $c | $ratio× |"*) ;;
		*)
			echo "docs/julia.md: the row of $name.c should read" \
			     "'| $j | … | $c | $ratio× |': $row" >&2
			bad=1
			;;
		esac
	fi
done
exit $bad
