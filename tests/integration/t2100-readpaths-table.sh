#!/bin/bash
# [read_paths] matching from a table (git t3070-wildmatch style), and the
# file tools against a real tree: the check and the tool agree, in both the
# openat2 and the forced-walk modes.
. "$SRC_DIR/tests/lib.sh"

TT="$BUILD_DIR/tests/helpers/test-tool"

if ! [ -x "$TT" ]; then
	test_skip 'read_paths tables' "test-tool not built at $TT"
	test_done
	exit
fi

# match EXPECT ENTRY PATH [WORKDIR [HOME]]: EXPECT is 1 (matches) or 0.
match() {
	local want=$1 entry=$2 path=$3 wd=${4:-/w/x} home=${5:-/home/me}
	local desc="match $want '$entry' '$path'"
	[ "$wd" != /w/x ] && desc="$desc (workdir $wd)"
	[ "$home" != /home/me ] && desc="$desc (home $home)"
	test_expect_success "$desc" '
		"$TT" readpath-match --workdir "$wd" --home "$home" -- "$entry" "$path"
		rc=$?
		[ $rc -ne 2 ] || exit 1
		[ $rc -eq $((1 - want)) ]
	'
}

# syntax EXPECT ENTRY: EXPECT is ok or the start of the error
syntax() {
	local want=$1 entry=$2
	test_expect_success "syntax '$entry' -> $want" '
		"$TT" readpath-syntax "$entry" >out
		grep -qF -- "$want" out
	'
}

# globs: '*' and '?' stay in one component, '**' crosses, '*' matches dotfiles
match 1 'glob:/a/*/c' /a/b/c
match 0 'glob:/a/*/c' /a/b/x/c
match 0 'glob:/a/*/c' /a/c
match 1 'glob:/a/**/c' /a/c
match 1 'glob:/a/**/c' /a/b/x/y/c
match 1 'glob:/a/**' /a
match 0 'glob:/a/**' /ab
match 1 'glob:/a/*' /a/.ssh
match 1 'glob:/a/?' /a/b
match 0 'glob:/a/?' /a/bc
match 0 'glob:/a?b' /a/b
match 1 'glob:/a/[bc]d' /a/cd
match 0 'glob:/a/[!bc]d' /a/cd
match 1 'glob:/a/[a-c]' /a/b
match 1 'glob:/a/[*]' '/a/*'
match 0 'glob:/a/[*]' /a/x
match 1 'glob:*.md' /w/x/README.md
match 0 'glob:*.md' /w/x/docs/README.md
match 1 'glob:../shared/**' /w/shared/a/b
match 1 'glob:../' /w
match 0 'glob:../' /w/x
match 1 'glob:etc/*' /etc/passwd /
match 1 'glob:f' '/w/[ab]*/f' '/w/[ab]*'
match 0 'glob:f' '/w/a/f' '/w/[ab]*'
match 1 'glob:~/docs/**' /home/me/docs/a
match 0 'glob:~/docs/**' /home/meX/docs/a
match 1 'glob:~/f' '/h/*/f' /w/x '/h/*'
match 0 'glob:~/f' /h/x/f /w/x '/h/*'
match 1 'glob:\a\*' /a/b
# regexes: anchored to the whole path
match 1 'regex:/etc/runs' /etc/runs
match 0 'regex:/etc/runs' /etc/runs-anything
match 0 'regex:/etc/runs' /prefix/etc/runs
match 1 'regex:/data/.*' /data/a/b
match 0 'regex:/data/.*' /database
match 1 'regex:/a|/b' /b
match 0 'regex:/a|/b' /x/b
match 0 'regex:/a(*ACCEPT)' /ab
match 1 'regex:~/.*' '/h.x+(y)/a' /w/x '/h.x+(y)'
match 0 'regex:~/.*' '/hAx+(y)/a' /w/x '/h.x+(y)'
# exact entries: a root and its subtree, by whole components
match 1 / /etc/passwd
# only real paths are matched
match 0 'glob:/**' /a/../b
match 0 'glob:/**' relative

syntax ok '~/.leviath/runs'
syntax ok 'glob:~/design-docs/**'
syntax ok 'regex:/data/archives/.*'
syntax ok 'regex:C:/data/.*'
syntax "read_paths entry is empty" ''
syntax "use 'glob:' for workdir-relative patterns" 'regex:.*'
syntax "only '~/' home expansion" '~root/x'
syntax "cannot contain '.' or '..'" 'glob:/a/../b'
syntax "'**' must be a whole path component" 'glob:/a/b**'
syntax "invalid regex" 'regex:/nothing)|(.*'

test_expect_success 'broad entries are flagged, narrow ones are not' '
	for e in / "~" "glob:/**" "regex:/.*" "glob:~/**" "regex:/(a|.*)"; do
		"$TT" readpath-broad "$e" >/dev/null || { echo "$e not broad"; exit 1; }
	done
	for e in "~/docs" "glob:~/design-docs/**" "regex:/data/archive/.*"; do
		! "$TT" readpath-broad "$e" >/dev/null || { echo "$e broad"; exit 1; }
	done
'

test_expect_success 'the grant report labels each declaration' '
	"$TT" readpath-report --workdir /w/x --home /home/me \
		--grant "~/.leviath/runs" --grant /data \
		"~/.leviath/runs" "glob:~/design-docs/**" "regex:/data/.*" "glob:/x/[ab]" >out &&
	printf "%s\t%s\n" "granted" "~/.leviath/runs" \
		"NOT granted" "glob:~/design-docs/**" \
		"granted" "regex:/data/.*" \
		"cannot be checked from the pattern alone" "glob:/x/[ab]" >expect &&
	test_cmp expect out
'

# ---- the tools against a real tree ---------------------------------------------------------

mkdir -p wd/sub home/.ssh docs outside
echo "key-$$-SECRET" >home/.ssh/id_rsa
echo "doc" >docs/a.md
echo "outside-$$-MARKER" >outside/x.txt
echo hi >wd/f.txt
ln -s "$TRASH/home/.ssh/id_rsa" docs/evil
ln -s ../docs wd/docs
ln -s ../outside/x.txt wd/out
W="$TRASH/wd"

# auto: openat2; walk: the fallback forced; no-openat2: auto on a process
# tree where openat2 fails with ENOSYS (tests/helpers/no-feature), which must
# find the fallback by itself.
NOFEAT="$BUILD_DIR/tests/helpers/no-feature"
modes="auto walk"
if [ -x "$NOFEAT" ] && "$NOFEAT" --no-openat2 -- true 2>/dev/null; then
	modes="$modes no-openat2"
	test_expect_success 'without openat2, the auto mode finds the fallback walk' '
		"$NOFEAT" --no-openat2 -- "$TT" have-openat2 >out &&
		echo no >expect && test_cmp expect out
	'
else
	test_skip 'the tools without openat2' "no-feature helper not available"
fi

for mode in $modes; do
	M=
	[ $mode = walk ] && M=--walk
	O="$M --workdir $W --home $TRASH/home --agent cto --config $TRASH/config.toml"
	if [ $mode = no-openat2 ]; then
		TT_MODE() { "$NOFEAT" --no-openat2 -- "$TT" "$@"; }
	else
		TT_MODE() { "$TT" "$@"; }
	fi

	test_expect_success "$mode: a read inside the workdir is allowed by the workdir gate" '
		TT_MODE fs-check $O read_file f.txt >out &&
		grep -q "\"gate\":\"workdir\"" out &&
		grep -q "\"path\":\"$W/f.txt\"" out &&
		TT_MODE fs-tool $O read_file "{\"path\":\"f.txt\"}" >out &&
		echo hi >expect && test_cmp expect out
	'

	test_expect_success "$mode: a symlink out of the workdir is refused without [read_paths]" '
		test_must_fail --code 1 TT_MODE fs-check $O read_file out >out &&
		grep -q "through a symlink" out &&
		test_must_fail --code 1 TT_MODE fs-tool $O read_file "{\"path\":\"out\"}" >out &&
		! grep -q MARKER out
	'

	test_expect_success "$mode: a declared but ungranted path says which stanza to add" '
		test_must_fail --code 1 TT_MODE fs-tool $O --declare ../docs read_file \
			"{\"path\":\"docs/a.md\"}" >out &&
		grep -qF "add allow = [\"../docs\"] under [agent_read_paths.cto] in $TRASH/config.toml" out
	'

	test_expect_success "$mode: declared and granted: readable, and the check agrees" '
		TT_MODE fs-check $O --declare ../docs --grant "$TRASH/docs" read_file docs/a.md >out &&
		grep -q "\"gate\":\"read_paths\"" out &&
		grep -q "\"path\":\"$TRASH/docs/a.md\"" out &&
		TT_MODE fs-tool $O --declare ../docs --grant "$TRASH/docs" read_file \
			"{\"path\":\"docs/a.md\"}" >out &&
		echo doc >expect && test_cmp expect out
	'

	test_expect_success "$mode: a symlink in a granted directory pointing at ~/.ssh is refused" '
		test_must_fail --code 1 TT_MODE fs-check $O --declare ../docs --grant / read_file \
			docs/evil >out &&
		grep -q "resolves to .$TRASH/home/.ssh/id_rsa" out &&
		test_must_fail --code 1 TT_MODE fs-tool $O --declare ../docs --grant / read_file \
			"{\"path\":\"docs/evil\"}" >out &&
		! grep -q SECRET out
	'

	test_expect_success "$mode: write_file never leaves the workdir, whatever is granted" '
		test_must_fail --code 1 TT_MODE fs-tool $O --declare / --grant / --allow-blueprint \
			write_file "{\"path\":\"docs/new.md\",\"content\":\"x\"}" >out &&
		grep -q "never writes outside" out &&
		! test -e docs/new.md &&
		test_must_fail --code 1 TT_MODE fs-tool $O write_file \
			"{\"path\":\"out\",\"content\":\"PWNED\"}" &&
		grep -q MARKER outside/x.txt
	'

	test_expect_success "$mode: /proc magic links are refused even under a grant of /" '
		test_must_fail --code 1 TT_MODE fs-tool $O --declare / --grant / read_file \
			"{\"path\":\"/proc/self/root$TRASH/home/.ssh/id_rsa\"}" >out &&
		grep -q "magic link" out && ! grep -q SECRET out
	'
done

test_done
