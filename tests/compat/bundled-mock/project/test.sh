if [ "$(sh calc.sh 2 3)" = 5 ]; then
	echo "ok 1 - calc.sh 2 3 = 5"
else
	echo "not ok 1 - calc.sh 2 3 = $(sh calc.sh 2 3)"
	exit 1
fi
