// SPDX-License-Identifier: Apache-2.0
// Writes a real Go CPU profile whose samples carry span context the way Go services attach it
// (runtime/pprof labels through pprof.Do, standard library only): two spans of one trace, each
// busy in its own function, for the collector's trace-link test:
// gospanprofile OUT TRACE_ID SPAN_A SPAN_B [SECONDS].
package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"time"
)

var sink int

//go:noinline
func spanAHashing(deadline time.Time) {
	sum := [32]byte{}
	for time.Now().Before(deadline) {
		for i := 0; i < 1000; i++ {
			sum = sha256.Sum256(sum[:])
		}
	}
	sink += int(sum[0])
}

//go:noinline
func spanBFib(n int) int {
	if n < 2 {
		return n
	}
	return spanBFib(n-1) + spanBFib(n-2)
}

func spanBLoop(deadline time.Time) {
	for time.Now().Before(deadline) {
		sink += spanBFib(22)
	}
}

func main() {
	if len(os.Args) < 5 {
		fmt.Fprintln(os.Stderr, "usage: gospanprofile OUT TRACE_ID SPAN_A SPAN_B [SECONDS]")
		os.Exit(2)
	}
	seconds := 1.0
	if len(os.Args) > 5 {
		if s, err := strconv.ParseFloat(os.Args[5], 64); err == nil {
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
	per := time.Duration(seconds / 2 * float64(time.Second))
	ctx := context.Background()
	pprof.Do(ctx, pprof.Labels("trace_id", os.Args[2], "span_id", os.Args[3],
		"span_name", "GET /hash"), func(context.Context) {
		spanAHashing(time.Now().Add(per))
	})
	pprof.Do(ctx, pprof.Labels("trace_id", os.Args[2], "span_id", os.Args[4],
		"span_name", "GET /fib"), func(context.Context) {
		spanBLoop(time.Now().Add(per))
	})
	pprof.StopCPUProfile()
	f.Close()
}
