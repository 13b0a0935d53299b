module roottrace/tests/helpers/gospanprofile

go 1.19
