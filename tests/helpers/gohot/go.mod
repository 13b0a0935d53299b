module roottrace.test/gohot

go 1.19
