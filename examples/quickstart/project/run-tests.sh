#!/bin/sh
# The project's tests: each line is "expected op a b".
fail=0 n=0
while read -r want op a b; do
	n=$((n + 1))
	got=$(sh ./calc.sh "$op" "$a" "$b")
	if [ "$got" = "$want" ]; then
		echo "ok $n - $op $a $b = $want"
	else
		echo "not ok $n - $op $a $b: got '$got', want '$want'"
		fail=1
	fi
done <<EOT
5 add 2 3
-1 sub 2 3
6 mul 2 3
EOT
exit $fail
