module roottrace.test/goleaf

go 1.19
