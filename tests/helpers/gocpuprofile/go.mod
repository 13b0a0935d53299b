module roottrace.test/gocpuprofile

go 1.19
