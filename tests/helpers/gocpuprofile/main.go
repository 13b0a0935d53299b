// SPDX-License-Identifier: Apache-2.0
// Writes a real Go CPU profile (runtime/pprof, standard library only) of a short busy loop,
// for the collector's ingest test: gocpuprofile OUT [SECONDS].
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"time"
)

func hashLoop(deadline time.Time) int {
	sum := [32]byte{}
	n := 0
	for time.Now().Before(deadline) {
		for i := 0; i < 1000; i++ {
			sum = sha256.Sum256(sum[:])
		}
		n++
	}
	return n + int(sum[0])
}

func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func fibLoop(deadline time.Time) int {
	total := 0
	for time.Now().Before(deadline) {
		total += fib(22)
	}
	return total
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gocpuprofile OUT [SECONDS]")
		os.Exit(2)
	}
	seconds := 1.0
	if len(os.Args) > 2 {
		if s, err := strconv.ParseFloat(os.Args[2], 64); err == nil {
			seconds = s
		}
	}
	f, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	half := time.Duration(seconds * float64(time.Second) / 2)
	r := hashLoop(time.Now().Add(half)) + fibLoop(time.Now().Add(half))
	pprof.StopCPUProfile()
	f.Close()
	fmt.Println(r)
}
