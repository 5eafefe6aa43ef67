#!/bin/bash
# The differential shell test (issue 13, class 1): thousands of lines - the
# red-team corpus in tests/shelldiff/corpus.txt, grammar-generated lines
# and mutations of both - through the shell-key parser and through real
# bash with argv-logging stubs, inside the namespace sandbox (network off).
# It fails on any line where bash runs a program or argument vector the
# keys and the parser's prediction did not name, and on any pre-approved
# line where a safe-listed program gets a forbidden flag or a path outside
# the workdir.  See tests/shelldiff/shelldiff.py.
. "$SRC_DIR/tests/lib.sh"

if ! command -v python3 >/dev/null 2>&1; then
	test_skip 'the parser reads lines as bash does' 'python3 is not installed'
	test_done
fi

test_expect_success 'the parser reads 3000+ lines as bash does (corpus, grammar, mutations)' '
	python3 "$SRC_DIR/tests/shelldiff/shelldiff.py" run \
		--test-tool "$BUILD_DIR/tests/helpers/test-tool" \
		--argv-log "$BUILD_DIR/tests/helpers/argv-log" \
		--lev "$LEV" --count 3000 --seed 13 >diff.out 2>&1;
	rc=$?; cat diff.out; [ "$rc" = 0 ] || cat diff.out >&2; test "$rc" = 0
'

test_expect_success 'and with another seed' '
	python3 "$SRC_DIR/tests/shelldiff/shelldiff.py" run \
		--test-tool "$BUILD_DIR/tests/helpers/test-tool" \
		--argv-log "$BUILD_DIR/tests/helpers/argv-log" \
		--lev "$LEV" --count 1000 --seed 4242 >diff.out 2>&1;
	rc=$?; cat diff.out; [ "$rc" = 0 ] || cat diff.out >&2; test "$rc" = 0
'

test_done
