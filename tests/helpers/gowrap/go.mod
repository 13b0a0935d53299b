module roottrace.test/gowrap

go 1.19
