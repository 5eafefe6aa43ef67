#!/bin/sh
# calc.sh OP A B - integer arithmetic for the quickstart example.
op=$1 a=$2 b=$3
case $op in
add) echo $((a + b)) ;;
sub) echo $((a - b)) ;;
mul) echo $((a * b)) ;;
*) echo "calc.sh: unknown operation '$op'" >&2; exit 2 ;;
esac
