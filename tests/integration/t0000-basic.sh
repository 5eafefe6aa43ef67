#!/bin/bash
# The CLI's skeleton: help, version, usage errors and exit codes.
. "$SRC_DIR/tests/lib.sh"

test_expect_success 'lev --version prints the version' '
	lev --version >out &&
	grep -q "^lev [0-9]" out
'

test_expect_success 'lev version matches lev --version' '
	lev version >a && lev --version >b && test_cmp a b
'

test_expect_success 'lev --help lists the commands' '
	lev --help >out &&
	grep -q "^  help " out &&
	grep -q "^  version " out
'

test_expect_success 'lev with no command is a usage error' '
	test_must_fail --code 2 lev 2>err &&
	grep -q "^usage: lev" err
'

test_expect_success 'an unknown command is a usage error naming it' '
	test_must_fail --code 2 lev frobnicate 2>err &&
	grep -q "frobnicate" err
'

test_expect_success 'an unknown global option is a usage error' '
	test_must_fail --code 2 lev --frob 2>err &&
	grep -q -- "--frob" err
'

test_expect_success 'lev help CMD prints that command usage' '
	lev help version >out &&
	grep -q "^usage: lev version" out
'

test_expect_success 'lev help with an unknown command fails with 2' '
	test_must_fail --code 2 lev help nope
'

test_expect_success 'every command answers --help with its usage and exit 0' '
	for c in $(lev --help | sed -n "s/^  \([a-z]*\) .*/\1/p"); do
		lev $c --help >out || { echo "$c --help failed"; exit 1; }
		grep -q "^usage: lev $c" out || { echo "$c: bad usage"; cat out; exit 1; }
	done
'

test_expect_success 'a full stdout is an error, not a success' '
	if [ -w /dev/full ]; then
		test_must_fail lev --help >/dev/full 2>err || exit 1
	fi
'

test_done
