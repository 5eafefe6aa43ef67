#!/bin/bash
# lev daemon install|uninstall: the systemd --user unit, written atomically,
# and the systemctl commands (a fake systemctl on PATH records them); where
# there is no systemctl, a clear "systemd is not available here".
. "$SRC_DIR/tests/lib.sh"

. "$SRC_DIR/tests/daemon-lib.sh"

UNIT="$HOME/.config/systemd/user/lev.service"
unset XDG_CONFIG_HOME
mkdir -p fakebin
cat >fakebin/systemctl <<EOF2
#!/bin/sh
echo "\$*" >>"$TRASH/systemctl.log"
EOF2
chmod +x fakebin/systemctl
# a PATH with the fake systemctl, and one without any
SD_PATH="$TRASH/fakebin:$PATH"
mkdir -p nosd
for p in sh cat echo; do ln -s "$(command -v $p)" nosd/$p; done

test_expect_success 'install writes the unit and enables it with systemctl --user' '
	PATH="$SD_PATH" "$LEV" daemon install >out 2>err &&
	grep -q "^ExecStart=\"$(readlink -f "$LEV")\" daemon$" "$UNIT" &&
	grep -q "^Environment=\"LEVIATH_HOME=$LEVIATH_HOME\"$" "$UNIT" &&
	grep -q "^WantedBy=default.target$" "$UNIT" &&
	printf "%s\n" "--user daemon-reload" "--user enable --now lev.service" >want &&
	test_cmp want systemctl.log &&
	grep -q "installed" out &&
	! ls "$(dirname "$UNIT")" | grep -v "^lev.service$"
'

test_expect_success 'uninstall disables it and removes the unit' '
	: >systemctl.log &&
	PATH="$SD_PATH" "$LEV" daemon uninstall >out &&
	test ! -e "$UNIT" &&
	printf "%s\n" "--user disable --now lev.service" "--user daemon-reload" >want &&
	test_cmp want systemctl.log &&
	PATH="$SD_PATH" "$LEV" daemon uninstall >out &&
	grep -q "nothing to uninstall" out
'

test_expect_success 'without systemctl: the unit is written and it says systemd is not available' '
	: >systemctl.log &&
	test_must_fail --code 1 env PATH="$TRASH/nosd" "$LEV" daemon install >out 2>err &&
	grep -q "systemd is not available here: no .systemctl. on PATH" err &&
	grep -q "systemctl --user enable --now lev.service" err &&
	test -s "$UNIT" &&
	env PATH="$TRASH/nosd" "$LEV" daemon uninstall >out 2>err &&
	grep -q "systemd is not available here" err &&
	test ! -e "$UNIT" &&
	test ! -s systemctl.log
'

test_expect_success 'a systemctl that fails (no user bus) is reported as no systemd' '
	printf "#!/bin/sh\nexit 1\n" >fakebin/systemctl &&
	test_must_fail --code 1 env PATH="$SD_PATH" "$LEV" daemon install 2>err &&
	grep -q "systemd is not available here: .systemctl --user daemon-reload. failed" err &&
	rm -f "$UNIT"
'

test_expect_success 'install and uninstall take no more arguments' '
	test_must_fail --code 2 "$LEV" daemon install now 2>err
'

test_done
